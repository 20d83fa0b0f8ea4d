//! Keys and keyrings (spec sections 6.4 and 7): parsing PEM and OpenSSH public keys, key
//! ids, the k-of-n threshold over distinct keys, and keyring rotation by signed updates.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::spki::{DecodePublicKey, EncodePublicKey};
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use ed25519_dalek::{Signature, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::envelope::{self, DecodedEnvelope, EnvelopeError, KEYRING_PAYLOAD_TYPE};
use crate::digest::Digest;
use crate::limits::Limits;

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

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyringError {
    #[error("keyring is not valid JSON of the expected shape: {0}")]
    Malformed(String),
    #[error("keyring key #{index}: {source}")]
    Key { index: usize, source: KeyError },
    #[error("keyring lists key {key_id} twice")]
    DuplicateKey { key_id: String },
    #[error("keyring threshold {threshold} is not between 1 and its {keys} keys")]
    BadThreshold { threshold: usize, keys: usize },
    #[error("keyring has {count} keys, over the limit of {limit}")]
    TooManyKeys { count: usize, limit: usize },
    #[error("keyring version must be at least 1")]
    BadVersion,
}

/// Why an envelope is not trusted, or a keyring update not adopted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    #[error("signed by {valid} distinct trusted key(s), threshold is {threshold}")]
    Threshold { valid: usize, threshold: usize },
    #[error("keyring update: {0}")]
    UpdateEnvelope(EnvelopeError),
    #[error("keyring update is not a valid keyring: {0}")]
    UpdateKeyring(KeyringError),
    /// `update` is "version N", or says that the update is not a valid keyring.
    #[error("keyring update ({update}) is not trusted by keyring version {current}: {source}")]
    UpdateUntrusted { update: String, current: u64, source: Box<TrustError> },
    #[error("keyring chain is malformed or over its limits: {0}")]
    Chain(String),
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

    fn verifies(&self, message: &[u8], sig: &[u8; 64]) -> bool {
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

    /// A key from a fixed seed: for test vectors only.
    pub fn from_seed(seed: [u8; 32]) -> SigningKey {
        SigningKey(ed25519_dalek::SigningKey::from_bytes(&seed))
    }

    pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey, KeyError> {
        ed25519_dalek::SigningKey::from_pkcs8_pem(pem).map(SigningKey).map_err(|e| KeyError::BadPrivateKey(e.to_string()))
    }

    pub fn to_pkcs8_pem(&self) -> String {
        self.0.to_pkcs8_pem(LineEnding::LF).expect("PKCS#8 encodes").to_string()
    }

    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    pub(crate) fn inner(&self) -> &ed25519_dalek::SigningKey {
        &self.0
    }
}

/// The JSON shape of a keyring file (spec 7.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KeyringFile {
    api_version: KeyringApiVersion,
    kind: KeyringKind,
    version: u64,
    threshold: usize,
    keys: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum KeyringApiVersion {
    #[serde(rename = "airlock.dev/v1")]
    V1,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum KeyringKind {
    Keyring,
}

/// A checked keyring: distinct keys, a threshold and a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyring {
    version: u64,
    threshold: usize,
    keys: Vec<PublicKey>,
}

impl Keyring {
    pub fn new(version: u64, threshold: usize, keys: Vec<PublicKey>, limits: &Limits) -> Result<Keyring, KeyringError> {
        if version == 0 {
            return Err(KeyringError::BadVersion);
        }
        if keys.len() > limits.keyring_keys {
            return Err(KeyringError::TooManyKeys { count: keys.len(), limit: limits.keyring_keys });
        }
        let mut seen = BTreeSet::new();
        for k in &keys {
            if !seen.insert(k.key_id()) {
                return Err(KeyringError::DuplicateKey { key_id: k.key_id() });
            }
        }
        if threshold == 0 || threshold > keys.len() {
            return Err(KeyringError::BadThreshold { threshold, keys: keys.len() });
        }
        Ok(Keyring { version, threshold, keys })
    }

    /// Parses a keyring file (spec 7.1).
    pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Keyring, KeyringError> {
        let file: KeyringFile = serde_json::from_slice(bytes).map_err(|e| KeyringError::Malformed(e.to_string()))?;
        if file.keys.len() > limits.keyring_keys {
            return Err(KeyringError::TooManyKeys { count: file.keys.len(), limit: limits.keyring_keys });
        }
        let keys = file
            .keys
            .iter()
            .enumerate()
            .map(|(index, k)| PublicKey::parse(k).map_err(|source| KeyringError::Key { index, source }))
            .collect::<Result<_, _>>()?;
        Keyring::new(file.version, file.threshold, keys, limits)
    }

    /// The keyring file's JSON, keys as PEM.
    pub fn to_json(&self) -> Vec<u8> {
        let file = KeyringFile {
            api_version: KeyringApiVersion::V1,
            kind: KeyringKind::Keyring,
            version: self.version,
            threshold: self.threshold,
            keys: self.keys.iter().map(PublicKey::to_pem).collect(),
        };
        let mut out = serde_json::to_vec_pretty(&file).expect("keyring serialises");
        out.push(b'\n');
        out
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn threshold(&self) -> usize {
        self.threshold
    }

    pub fn keys(&self) -> &[PublicKey] {
        &self.keys
    }

    /// Checks an envelope's signatures against this keyring (spec 7.2) and returns the
    /// key ids of the distinct keys that signed it.
    pub fn check(&self, envelope: &DecodedEnvelope) -> Result<Vec<String>, TrustError> {
        let message = envelope::pae(&envelope.payload_type, &envelope.payload);
        let mut signers = BTreeSet::new();
        for (keyid, sig) in &envelope.signatures {
            // The key id is only a hint: a signature under an unknown id is tried against
            // every key, and the set counts keys, so one key never counts twice.
            let known: Vec<&PublicKey> = self.keys.iter().filter(|k| &k.key_id() == keyid).collect();
            let candidates = if known.is_empty() { self.keys.iter().collect() } else { known };
            if let Some(k) = candidates.into_iter().find(|k| k.verifies(&message, sig)) {
                signers.insert(k.key_id());
            }
        }
        if signers.len() < self.threshold {
            return Err(TrustError::Threshold { valid: signers.len(), threshold: self.threshold });
        }
        Ok(signers.into_iter().collect())
    }

    /// Follows a keyring chain (spec 7.3): adopts, in order, each update newer than the
    /// keyring held at that point and trusted by it. Returns the newest keyring.
    pub fn follow_chain(&self, chain: &[u8], limits: &Limits) -> Result<Keyring, TrustError> {
        if chain.len() as u64 > limits.keyring_chain_bytes {
            return Err(TrustError::Chain(format!("over {} bytes", limits.keyring_chain_bytes)));
        }
        let updates: Vec<&RawValue> = serde_json::from_slice(chain).map_err(|e| TrustError::Chain(e.to_string()))?;
        if updates.len() > limits.keyring_updates {
            return Err(TrustError::Chain(format!("over {} updates", limits.keyring_updates)));
        }
        let mut current = self.clone();
        for update in updates {
            let env = envelope::decode(update.get().as_bytes(), KEYRING_PAYLOAD_TYPE, limits).map_err(TrustError::UpdateEnvelope)?;
            // An update the puller already went past was signed by keys it may no longer
            // trust, so it is skipped by its version before its signatures are checked;
            // a forged old version gains nothing by being skipped.
            let next = Keyring::parse(&env.payload, limits);
            if next.as_ref().is_ok_and(|k| k.version() <= current.version) {
                continue;
            }
            current.check(&env).map_err(|e| TrustError::UpdateUntrusted {
                update: next.as_ref().map_or_else(|_| "not a valid keyring".into(), |k| format!("version {}", k.version())),
                current: current.version,
                source: Box::new(e),
            })?;
            current = next.map_err(TrustError::UpdateKeyring)?;
        }
        Ok(current)
    }

    /// Signs this keyring as an update with keys of the current keyring.
    pub fn sign_update(&self, keys: &[SigningKey]) -> Vec<u8> {
        envelope::sign(KEYRING_PAYLOAD_TYPE, &self.to_json(), keys)
    }
}

/// A keyring chain from updates, oldest first (spec 7.3).
pub fn chain(updates: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"[".to_vec();
    for (i, u) in updates.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(u);
    }
    out.push(b']');
    out
}
