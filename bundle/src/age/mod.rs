//! The age v1 file format (C2SP age, <https://age-encryption.org/v1>) for X25519
//! recipients only, interoperable with the `age` and `age-keygen` tools: keys and identity
//! files as `age-keygen` writes them, [`encrypt()`] to ASCII armor, and [`decrypt()`] of armored
//! or binary files with the plaintext capped by the caller. No passphrases (scrypt), SSH or
//! plugin recipients, and no streaming: whole files in memory.
//!
//! [`encrypt()`] is deterministic. The file key, every stanza's ephemeral secret and the
//! payload nonce are HKDF-SHA256 outputs of the caller's entropy, so sealing the same
//! content again gives the same bytes and the bundle digests stay stable. That is as sound
//! as age's own random draws as long as the entropy is a secret PRF output (an HMAC of the
//! plaintext under a secret key, as in SIV) that changes whenever the plaintext does: no one
//! without the key can predict the values, and no key or nonce serves two plaintexts. The
//! one thing given up is hiding that two files hold the same plaintext for the same
//! recipients, which is what a stable digest means.
//!
//! [`FileKey`] splits that in two: a file key and its header from one entropy, then any
//! number of files under it, each with a payload nonce from an entropy of its own. age
//! derives every file's payload key from the file key and that nonce, so distinct nonces
//! keep payload keys distinct, which is all its payload needs. Sharing a file key gives
//! nothing to anyone who is not a recipient, and a recipient of one of the files could
//! unwrap every one of them anyway. [`Opener`] is its reading half.

mod armor;
mod bech32;
mod decrypt;
mod encrypt;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use curve25519_dalek::montgomery::MontgomeryPoint;
use ring::{aead, hkdf, hmac};
use zeroize::{Zeroize, Zeroizing};

pub use decrypt::{Opener, decrypt};
pub use encrypt::{FileKey, encrypt};

/// Why an age key or file was refused. No message carries key material or the text of a
/// key: a secret pasted where a recipient belongs must not reach a log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgeError {
    #[error("not an age X25519 recipient (age1...): {0}")]
    Recipient(String),
    #[error("not an age X25519 identity (AGE-SECRET-KEY-1...): {0}")]
    Identity(String),
    #[error("not a well-formed age file: {0}")]
    Header(String),
    #[error("none of the given identities can decrypt it")]
    NoIdentity,
    #[error("the age header's MAC does not match: the header was changed")]
    Mac,
    #[error("the payload was changed or cut")]
    Payload,
    #[error("the plaintext is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
}

/// What every age v1 header starts with.
const INTRO: &str = "age-encryption.org/v1";
/// HKDF info of an X25519 stanza's wrap key.
const X25519_LABEL: &[u8] = b"age-encryption.org/v1/X25519";
/// The bech32 prefix of recipients, and of identities before they are upper-cased.
const RECIPIENT_HRP: &str = "age";
const IDENTITY_HRP: &str = "age-secret-key-";
const FILE_KEY_LEN: usize = 16;
const PAYLOAD_NONCE_LEN: usize = 16;
const TAG_LEN: usize = 16;
/// Plaintext bytes per STREAM chunk; every chunk but the last is full.
const CHUNK_LEN: usize = 64 * 1024;

/// An X25519 identity: the secret that decrypts what is encrypted to its [`Recipient`].
/// Wiped from memory when dropped.
#[derive(Clone)]
pub struct Identity {
    secret: [u8; 32],
}

impl Drop for Identity {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

impl Identity {
    /// A fresh identity from the OS random source.
    pub fn generate() -> Identity {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).expect("the OS random source works");
        Identity { secret }
    }

    /// An identity from fixed bytes: for tests and test vectors only, so not in a release
    /// build.
    #[cfg(any(test, feature = "testing"))]
    pub fn from_secret(secret: [u8; 32]) -> Identity {
        Identity { secret }
    }

    pub fn recipient(&self) -> Recipient {
        Recipient(MontgomeryPoint::mul_base_clamped(self.secret).to_bytes())
    }

    /// `AGE-SECRET-KEY-1...`, upper-case bech32, as `age-keygen` writes it.
    pub fn to_secret_string(&self) -> String {
        bech32::encode(IDENTITY_HRP, &self.secret).to_ascii_uppercase()
    }

    /// Parses one identity string; surrounding whitespace is ignored.
    pub fn parse(text: &str) -> Result<Identity, AgeError> {
        let (hrp, data) = bech32::decode(text.trim()).map_err(|e| AgeError::Identity(e.to_string()))?;
        // Upper case only, as age: its bech32 keeps the case of the prefix it compares.
        if hrp != IDENTITY_HRP.to_ascii_uppercase() {
            return Err(AgeError::Identity("it does not start with AGE-SECRET-KEY-1 in upper case".into()));
        }
        let secret = data.try_into().map_err(|d: Vec<u8>| AgeError::Identity(format!("it holds {} bytes, not 32", d.len())))?;
        Ok(Identity { secret })
    }
}

impl PartialEq for Identity {
    fn eq(&self, other: &Identity) -> bool {
        // Folded over every byte, so the comparison does not stop at the first difference.
        self.secret.iter().zip(&other.secret).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

impl Eq for Identity {}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Identity").field(&self.recipient()).finish()
    }
}

/// Parses an identity file as `age-keygen` writes it: one identity per line, blank lines
/// and `#` comments ignored, at least one identity.
pub fn parse_identities(text: &str) -> Result<Vec<Identity>, AgeError> {
    let mut identities = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let identity = Identity::parse(line).map_err(|e| match e {
            AgeError::Identity(why) => AgeError::Identity(format!("line {}: {why}", index + 1)),
            other => other,
        })?;
        identities.push(identity);
    }
    if identities.is_empty() {
        return Err(AgeError::Identity("the identity file holds no identity".into()));
    }
    Ok(identities)
}

/// An X25519 recipient, `age1...`: the public half of an [`Identity`]. Never a low-order
/// point, so encrypting to it always gives a non-zero shared secret.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Recipient([u8; 32]);

impl Recipient {
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl FromStr for Recipient {
    type Err = AgeError;

    fn from_str(text: &str) -> Result<Recipient, AgeError> {
        let (hrp, data) = bech32::decode(text).map_err(|e| AgeError::Recipient(e.to_string()))?;
        if hrp != RECIPIENT_HRP {
            return Err(AgeError::Recipient("it does not start with age1 in lower case".into()));
        }
        let point: [u8; 32] = data.try_into().map_err(|d: Vec<u8>| AgeError::Recipient(format!("it holds {} bytes, not 32", d.len())))?;
        // Any clamped scalar maps a low-order point to zero; age refuses to encrypt to one.
        if is_low_order(&point) {
            return Err(AgeError::Recipient("it is a low-order point, which no identity has".into()));
        }
        Ok(Recipient(point))
    }
}

impl fmt::Display for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&bech32::encode(RECIPIENT_HRP, &self.0))
    }
}

impl fmt::Debug for Recipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The u-coordinates of the points of order 1, 2, 4 and 8 of Curve25519 and its twist, the
/// only ones X25519 maps to zero whatever the clamped scalar: 0 (order 2), 1 and p-1
/// (order 4), the two roots of x(2P) = 1 (order 8; x(2P) = -1 has no root in the field),
/// then 0 and 1 again as p and p+1, the only encodings of them below 2^255 that are not
/// reduced. Little-endian, bit 255 clear.
const LOW_ORDER: [[u8; 32]; 7] = [
    small(0),
    small(1),
    below_p(1),
    [
        0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32,
        0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00,
    ],
    [
        0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef, 0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c,
        0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57,
    ],
    below_p(0),
    below_p(-1),
];

/// The encoding of a small `value`.
const fn small(value: u8) -> [u8; 32] {
    let mut u = [0; 32];
    u[0] = value;
    u
}

/// The encoding of p - `by` (p + 1 for -1): 2^255 - 19 - `by`.
const fn below_p(by: i8) -> [u8; 32] {
    let mut u = [0xff; 32];
    u[0] = (0xed - by as i16) as u8;
    u[31] = 0x7f;
    u
}

/// Whether X25519 maps `point` to zero, told from the list rather than by a scalar
/// multiplication, which costs as much as the exchange itself. X25519 ignores bit 255.
fn is_low_order(point: &[u8; 32]) -> bool {
    let mut u = *point;
    u[31] &= 0x7f;
    LOW_ORDER.contains(&u)
}

/// X25519 of `secret` (clamped) and `point`; `None` for the all-zero result of a low-order
/// point, which age rejects.
fn x25519(secret: [u8; 32], point: &[u8; 32]) -> Option<Zeroizing<[u8; 32]>> {
    let shared = Zeroizing::new(MontgomeryPoint(*point).mul_clamped(secret).to_bytes());
    (*shared != [0; 32]).then_some(shared)
}

/// An HKDF output length that is not one of ring's key types.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// HKDF-SHA256 of `ikm` with `salt`, `info` being the concatenation of its pieces.
fn hkdf_sha256(ikm: &[u8], salt: &[u8], info: &[&[u8]], out: &mut [u8]) {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, salt).extract(ikm);
    prk.expand(info, Len(out.len())).and_then(|okm| okm.fill(out)).expect("at most 255 blocks of output");
}

fn chacha_key(key: &[u8; 32]) -> aead::LessSafeKey {
    aead::LessSafeKey::new(aead::UnboundKey::new(&aead::CHACHA20_POLY1305, key).expect("32-byte key"))
}

/// The key that wraps the file key in an X25519 stanza, for the stanza's ephemeral
/// `share` and the `recipient` it is addressed to.
fn wrap_key(shared: &[u8; 32], share: &[u8; 32], recipient: &Recipient) -> aead::LessSafeKey {
    let mut key = Zeroizing::new([0u8; 32]);
    hkdf_sha256(shared, &[share.as_slice(), recipient.as_bytes()].concat(), &[X25519_LABEL], &mut *key);
    chacha_key(&key)
}

/// The HMAC key of the header's MAC line.
fn header_mac_key(file_key: &[u8; FILE_KEY_LEN]) -> hmac::Key {
    let mut key = Zeroizing::new([0u8; 32]);
    hkdf_sha256(file_key, &[], &[b"header"], &mut *key);
    hmac::Key::new(hmac::HMAC_SHA256, &*key)
}

fn payload_key(file_key: &[u8; FILE_KEY_LEN], nonce: &[u8; PAYLOAD_NONCE_LEN]) -> aead::LessSafeKey {
    let mut key = Zeroizing::new([0u8; 32]);
    hkdf_sha256(file_key, nonce, &[b"payload"], &mut *key);
    chacha_key(&key)
}

/// The STREAM nonce of chunk `counter`: an 11-byte big-endian counter, then the flag that
/// marks the last chunk.
fn chunk_nonce(counter: u64, last: bool) -> aead::Nonce {
    let mut nonce = [0u8; 12];
    nonce[3..11].copy_from_slice(&counter.to_be_bytes());
    nonce[11] = u8::from(last);
    aead::Nonce::assume_unique_for_key(nonce)
}
