//! Keyrings (spec section 7): the k-of-n threshold over distinct keys, and keyring
//! rotation by signed updates. The keys themselves are `key`'s.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::envelope::{self, DecodedEnvelope, EnvelopeError, KEYRING_PAYLOAD_TYPE};
use super::key::{KeyError, PublicKey, SigningKey};
use crate::limits::Limits;

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
            // Only the key the id names is tried (spec 6.4): a signature that names no key
            // of the keyring does not count. The set counts keys, so one never counts twice.
            if let Some(k) = self.keys.iter().find(|k| &k.key_id() == keyid)
                && k.verifies(&message, sig)
            {
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
        self.follow_chain_adopting(chain, limits).map(|(keyring, _)| keyring)
    }

    /// [`Keyring::follow_chain`], with the updates it adopted, in order: the signed bytes
    /// that lead this keyring to the result, the skipped ones left out.
    pub fn follow_chain_adopting(&self, chain: &[u8], limits: &Limits) -> Result<(Keyring, Vec<Vec<u8>>), TrustError> {
        if chain.len() as u64 > limits.keyring_chain_bytes {
            return Err(TrustError::Chain(format!("over {} bytes", limits.keyring_chain_bytes)));
        }
        let updates: Vec<&RawValue> = serde_json::from_slice(chain).map_err(|e| TrustError::Chain(e.to_string()))?;
        if updates.len() > limits.keyring_updates {
            return Err(TrustError::Chain(format!("over {} updates", limits.keyring_updates)));
        }
        let mut current = self.clone();
        let mut adopted = Vec::new();
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
            let next = next.map_err(TrustError::UpdateKeyring)?;
            // Even signed, a leap would leave no room for the versions after it.
            if next.version() - current.version > limits.max_keyring_version_step {
                let (to, from, step) = (next.version(), current.version, limits.max_keyring_version_step);
                return Err(TrustError::Chain(format!("update to version {to} is more than {step} above version {from}")));
            }
            current = next;
            adopted.push(update.get().as_bytes().to_vec());
        }
        Ok((current, adopted))
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
