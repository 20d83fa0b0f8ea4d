//! Ed25519 keys (spec 6.4): parsing PEM and OpenSSH public keys, key ids, and the
//! publisher's private keys. Whether a key is trusted is the keyring's business; this module
//! only reads, writes and uses single keys.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::spki::{DecodePublicKey, EncodePublicKey};
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, KeypairBytes};
use ed25519_dalek::{Signature, VerifyingKey};

use crate::digest::Digest;

/// DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410), before the 32 key bytes.
const SPKI_PREFIX: [u8; 12] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    #[error("not an Ed25519 public key (PEM PUBLIC KEY or ssh-ed25519 line): {0}")]
    BadPublicKey(String),
    #[error("not an Ed25519 PKCS#8 PEM private key: {0}")]
    BadPrivateKey(String),
}

/// An Ed25519 public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Parses a PEM `PUBLIC KEY` block or an OpenSSH `ssh-ed25519` line.
    pub fn parse(text: &str) -> Result<PublicKey, KeyError> {
        let text = text.trim();
        let key = if let Some(rest) = text.strip_prefix("ssh-ed25519 ") {
            parse_ssh(rest.split_whitespace().next().unwrap_or(""))?
        } else {
            VerifyingKey::from_public_key_pem(text).map_err(|e| KeyError::BadPublicKey(e.to_string()))?
        };
        if key.is_weak() {
            return Err(KeyError::BadPublicKey("small-order key".into()));
        }
        Ok(PublicKey(key))
    }

    /// The key of its 32 bytes (RFC 8032), as a PKCS#11 token's `CKA_EC_POINT` holds them.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<PublicKey, KeyError> {
        let key = VerifyingKey::from_bytes(bytes).map_err(|e| KeyError::BadPublicKey(e.to_string()))?;
        if key.is_weak() {
            return Err(KeyError::BadPublicKey("small-order key".into()));
        }
        Ok(PublicKey(key))
    }

    /// DER SubjectPublicKeyInfo (RFC 8410).
    pub fn spki_der(&self) -> Vec<u8> {
        [&SPKI_PREFIX[..], self.0.as_bytes()].concat()
    }

    /// Hex SHA-256 of the SPKI DER (spec 6.4).
    pub fn key_id(&self) -> String {
        Digest::of(&self.spki_der()).hex()
    }

    pub fn to_pem(&self) -> String {
        self.0.to_public_key_pem(LineEnding::LF).expect("SPKI encodes")
    }

    pub fn to_openssh(&self, comment: &str) -> String {
        let mut blob = Vec::with_capacity(51);
        for field in [&b"ssh-ed25519"[..], self.0.as_bytes()] {
            blob.extend_from_slice(&(field.len() as u32).to_be_bytes());
            blob.extend_from_slice(field);
        }
        format!("ssh-ed25519 {} {comment}", STANDARD.encode(blob)).trim_end().to_string()
    }

    pub(crate) fn verifies(&self, message: &[u8], sig: &[u8; 64]) -> bool {
        self.0.verify_strict(message, &Signature::from_bytes(sig)).is_ok()
    }
}

fn parse_ssh(b64: &str) -> Result<VerifyingKey, KeyError> {
    let bad = |why: &str| KeyError::BadPublicKey(format!("ssh-ed25519: {why}"));
    let blob = STANDARD.decode(b64).map_err(|_| bad("bad base64"))?;
    let mut rest = blob.as_slice();
    let mut field = || -> Result<&[u8], KeyError> {
        let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(|| bad("truncated"))?;
        let len = u32::from_be_bytes(*len) as usize;
        let (f, tail) = tail.split_at_checked(len).ok_or_else(|| bad("truncated"))?;
        rest = tail;
        Ok(f)
    };
    if field()? != b"ssh-ed25519" {
        return Err(bad("key type inside the blob is not ssh-ed25519"));
    }
    let key: [u8; 32] = field()?.try_into().map_err(|_| bad("key is not 32 bytes"))?;
    if !rest.is_empty() {
        return Err(bad("trailing bytes"));
    }
    VerifyingKey::from_bytes(&key).map_err(|e| bad(&e.to_string()))
}

/// An Ed25519 private key used by the publisher.
pub struct SigningKey(ed25519_dalek::SigningKey);

impl SigningKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> SigningKey {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("the OS random source works");
        SigningKey(ed25519_dalek::SigningKey::from_bytes(&seed))
    }

    /// A key from a fixed seed: for test vectors only, so not in a release build.
    #[cfg(any(test, feature = "testing"))]
    pub fn from_seed(seed: [u8; 32]) -> SigningKey {
        SigningKey(ed25519_dalek::SigningKey::from_bytes(&seed))
    }

    pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey, KeyError> {
        ed25519_dalek::SigningKey::from_pkcs8_pem(pem).map(SigningKey).map_err(|e| KeyError::BadPrivateKey(e.to_string()))
    }

    /// PKCS#8 v1 in RFC 8410's form, the seed alone: what OpenSSL 3.0 and Python's
    /// `cryptography` read (the v2 form, with the public key inside, they refuse).
    /// [`from_pkcs8_pem`](Self::from_pkcs8_pem) reads both.
    pub fn to_pkcs8_pem(&self) -> String {
        let seed_only = KeypairBytes { secret_key: self.0.to_bytes(), public_key: None };
        seed_only.to_pkcs8_pem(LineEnding::LF).expect("PKCS#8 encodes").to_string()
    }

    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    pub(crate) fn inner(&self) -> &ed25519_dalek::SigningKey {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_keys_are_written_as_pkcs8_v1_and_read_in_either_form() {
        let key = SigningKey::from_seed([1; 32]);
        let pem = key.to_pkcs8_pem();
        let base64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = STANDARD.decode(base64).unwrap();
        assert_eq!(der.len(), 48, "the version, the algorithm and the seed: no public key");
        assert_eq!(der[..5], [0x30, 0x2e, 0x02, 0x01, 0x00], "a SEQUENCE of 46 bytes opening with version 0 (v1)");
        let v2 = key.0.to_pkcs8_pem(LineEnding::LF).unwrap();
        for form in [pem.as_str(), v2.as_str()] {
            assert_eq!(SigningKey::from_pkcs8_pem(form).unwrap().public().key_id(), key.public().key_id());
        }
    }
}
