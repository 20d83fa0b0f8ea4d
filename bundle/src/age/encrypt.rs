//! Writing an age file: the header with one X25519 stanza per recipient and its MAC, the
//! STREAM payload, then the armor. Every value age draws at random is derived here from the
//! caller's entropy instead (see the module overview for why that is sound).

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use curve25519_dalek::montgomery::MontgomeryPoint;
use ring::{aead, hmac};
use zeroize::Zeroizing;

use super::{
    CHUNK_LEN, FILE_KEY_LEN, INTRO, PAYLOAD_NONCE_LEN, Recipient, armor, chunk_nonce, header_mac_key, hkdf_sha256, payload_key, wrap_key,
    x25519,
};

/// HKDF info labels of the derived values, distinct so that each is independent of the others.
const FILE_KEY_INFO: &[u8] = b"airlock/age/file-key";
const EPHEMERAL_INFO: &[u8] = b"airlock/age/ephemeral";
const NONCE_INFO: &[u8] = b"airlock/age/payload-nonce";
/// Characters per line of a stanza body.
const BODY_COLUMNS: usize = 64;

/// Encrypts `plaintext` to every recipient, one X25519 stanza each in the given order, and
/// returns the ASCII-armored file, exactly as `age -a` lays it out.
///
/// Deterministic: the file key, each stanza's ephemeral secret (its info names the stanza's
/// index and recipient) and the payload nonce are HKDF-SHA256 outputs of `entropy`, so the
/// same inputs give the same bytes. The caller guarantees that `entropy` is secret and
/// differs whenever the plaintext does.
///
/// # Panics
///
/// If `recipients` is empty: a file no one can decrypt is a caller's bug.
pub fn encrypt(plaintext: &[u8], recipients: &[Recipient], entropy: &[u8; 32]) -> Vec<u8> {
    FileKey::new(recipients, entropy).encrypt(plaintext, entropy)
}

/// A file key with the header that wraps it to its recipients, made once and then used for
/// any number of files. Each file draws its own payload nonce, so no two plaintexts share
/// a payload key, while the costly part of age, an X25519 exchange for every stanza, is
/// paid once for all of them: every file it writes has the same header.
pub struct FileKey {
    key: Zeroizing<[u8; FILE_KEY_LEN]>,
    header: Vec<u8>,
}

impl FileKey {
    /// The file key and header that `entropy` gives for `recipients`, in that order. The
    /// caller guarantees that `entropy` is secret: it fixes the file key and the ephemeral
    /// secrets.
    ///
    /// # Panics
    ///
    /// If `recipients` is empty: a file no one can decrypt is a caller's bug.
    pub fn new(recipients: &[Recipient], entropy: &[u8; 32]) -> FileKey {
        assert!(!recipients.is_empty(), "an age file key needs at least one recipient");
        let key = file_key(entropy);
        let header = header(&key, recipients, entropy).into_bytes();
        FileKey { key, header }
    }

    /// `plaintext` as an ASCII-armored age file under this key. The payload nonce is an
    /// HKDF-SHA256 output of `entropy`, which the caller guarantees is secret and differs
    /// whenever the plaintext does, so that no payload key serves two plaintexts.
    pub fn encrypt(&self, plaintext: &[u8], entropy: &[u8; 32]) -> Vec<u8> {
        let mut binary = Vec::with_capacity(self.header.len() + PAYLOAD_NONCE_LEN + plaintext.len() + super::TAG_LEN);
        binary.extend_from_slice(&self.header);
        let mut nonce = [0u8; PAYLOAD_NONCE_LEN];
        hkdf_sha256(entropy, &[], &[NONCE_INFO], &mut nonce);
        binary.extend_from_slice(&nonce);
        seal_payload(&payload_key(&self.key, &nonce), plaintext, &mut binary);
        armor::encode(&binary)
    }
}

/// The file key that `entropy` gives.
pub(super) fn file_key(entropy: &[u8; 32]) -> Zeroizing<[u8; FILE_KEY_LEN]> {
    let mut key = Zeroizing::new([0u8; FILE_KEY_LEN]);
    hkdf_sha256(entropy, &[], &[FILE_KEY_INFO], &mut *key);
    key
}

/// The header, from the intro line to the MAC line and its newline.
fn header(file_key: &[u8; FILE_KEY_LEN], recipients: &[Recipient], entropy: &[u8; 32]) -> String {
    let mut header = format!("{INTRO}\n");
    for (index, recipient) in recipients.iter().enumerate() {
        let mut secret = Zeroizing::new([0u8; 32]);
        hkdf_sha256(entropy, &[], &[EPHEMERAL_INFO, &(index as u64).to_be_bytes(), recipient.as_bytes()], &mut *secret);
        let share = MontgomeryPoint::mul_base_clamped(*secret).to_bytes();
        let shared = x25519(*secret, recipient.as_bytes()).expect("a Recipient is never a low-order point");
        let mut body = file_key.to_vec();
        wrap_key(&shared, &share, recipient)
            .seal_in_place_append_tag(aead::Nonce::assume_unique_for_key([0; 12]), aead::Aad::empty(), &mut body)
            .expect("a 16-byte file key fits ChaCha20-Poly1305");
        header.push_str("-> X25519 ");
        header.push_str(&STANDARD_NO_PAD.encode(share));
        header.push('\n');
        push_body(&mut header, &body);
    }
    // The MAC covers the header up to and including "---", not the space after it.
    header.push_str("---");
    let mac = hmac::sign(&header_mac_key(file_key), header.as_bytes());
    header.push(' ');
    header.push_str(&STANDARD_NO_PAD.encode(mac.as_ref()));
    header.push('\n');
    header
}

/// A stanza body: unpadded base64 in lines of 64 columns, the last one shorter, so a body
/// that fills its last line is followed by an empty one.
fn push_body(header: &mut String, body: &[u8]) {
    let text = STANDARD_NO_PAD.encode(body);
    for line in text.as_bytes().chunks(BODY_COLUMNS) {
        header.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        header.push('\n');
    }
    if text.len().is_multiple_of(BODY_COLUMNS) {
        header.push('\n');
    }
}

/// Appends the STREAM chunks of `plaintext` to `out`: full chunks, then a last one that may
/// be full too, and is empty only for an empty plaintext.
pub(super) fn seal_payload(key: &aead::LessSafeKey, plaintext: &[u8], out: &mut Vec<u8>) {
    let chunks = plaintext.len().div_ceil(CHUNK_LEN).max(1);
    out.reserve(plaintext.len() + chunks * super::TAG_LEN);
    for counter in 0..chunks {
        let chunk = &plaintext[(counter * CHUNK_LEN).min(plaintext.len())..((counter + 1) * CHUNK_LEN).min(plaintext.len())];
        let start = out.len();
        out.extend_from_slice(chunk);
        let nonce = chunk_nonce(counter as u64, counter + 1 == chunks);
        let tag = key.seal_in_place_separate_tag(nonce, aead::Aad::empty(), &mut out[start..]).expect("a chunk fits ChaCha20-Poly1305");
        out.extend_from_slice(tag.as_ref());
    }
}
