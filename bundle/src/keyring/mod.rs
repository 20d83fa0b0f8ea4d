//! Keyrings (spec section 7): the online role that signs bundles, the root role that signs
//! keyring updates (the online keys themselves when a keyring has no root), and keyring
//! rotation by signed updates. The keys themselves are `key`'s.

mod chain;
mod role;

use serde::{Deserialize, Serialize};

pub use chain::chain;
pub use role::Role;

use super::envelope::{self, DecodedEnvelope, EnvelopeError, KEYRING_PAYLOAD_TYPE};
use super::key::{KeyError, PublicKey, SigningKey};
use super::signer::{SignError, Signer};
use crate::limits::Limits;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyringError {
    #[error("keyring is not valid JSON of the expected shape: {0}")]
    Malformed(String),
    #[error("keyring {role} key #{index}: {source}")]
    Key { role: &'static str, index: usize, source: KeyError },
    #[error("keyring lists {role} key {key_id} twice")]
    DuplicateKey { role: &'static str, key_id: String },
    #[error("keyring {role} threshold {threshold} is not between 1 and its {keys} keys")]
    BadThreshold { role: &'static str, threshold: usize, keys: usize },
    #[error("keyring has {count} {role} keys, over the limit of {limit}")]
    TooManyKeys { role: &'static str, count: usize, limit: usize },
    #[error("keyring version must be at least 1")]
    BadVersion,
    #[error("keyring key {key_id} is both a root and an online key: a root key must not sign bundles")]
    RootAndOnline { key_id: String },
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
    #[error("keyring update (version {update}) gives a new root, which has not signed it: {source}")]
    NewRootUnsigned { update: u64, source: Box<TrustError> },
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    root: Option<RoleFile>,
}

/// The JSON shape of the root role (spec 7.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleFile {
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

/// A checked keyring: a version, the online role and, when it has one, the root role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyring {
    version: u64,
    online: Role,
    root: Option<Role>,
}

impl Keyring {
    /// A keyring without a root role: its online keys sign its updates too.
    pub fn new(version: u64, threshold: usize, keys: Vec<PublicKey>, limits: &Limits) -> Result<Keyring, KeyringError> {
        Keyring::with_root(version, Role::new("online", threshold, keys, limits)?, None)
    }

    /// A keyring whose updates `root` signs, when given. No key may be in both roles: a
    /// root key that signs bundles would be online, and its theft would reach the root.
    pub fn with_root(version: u64, online: Role, root: Option<Role>) -> Result<Keyring, KeyringError> {
        if version == 0 {
            return Err(KeyringError::BadVersion);
        }
        if let Some(k) = root.iter().flat_map(|r| r.keys()).find(|k| online.holds(k)) {
            return Err(KeyringError::RootAndOnline { key_id: k.key_id() });
        }
        Ok(Keyring { version, online, root })
    }

    /// Parses a keyring file (spec 7.1).
    pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Keyring, KeyringError> {
        let file: KeyringFile = serde_json::from_slice(bytes).map_err(|e| KeyringError::Malformed(e.to_string()))?;
        let online = Role::parse("online", file.threshold, &file.keys, limits)?;
        let root = file.root.map(|r| Role::parse("root", r.threshold, &r.keys, limits)).transpose()?;
        Keyring::with_root(file.version, online, root)
    }

    /// The keyring file's JSON, keys as PEM.
    pub fn to_json(&self) -> Vec<u8> {
        let file = KeyringFile {
            api_version: KeyringApiVersion::V1,
            kind: KeyringKind::Keyring,
            version: self.version,
            threshold: self.online.threshold(),
            keys: self.online.pem_keys(),
            root: self.root.as_ref().map(|r| RoleFile { threshold: r.threshold(), keys: r.pem_keys() }),
        };
        let mut out = serde_json::to_vec_pretty(&file).expect("keyring serialises");
        out.push(b'\n');
        out
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// The online role's threshold.
    pub fn threshold(&self) -> usize {
        self.online.threshold()
    }

    /// The online role's keys, which sign bundles.
    pub fn keys(&self) -> &[PublicKey] {
        self.online.keys()
    }

    pub fn online(&self) -> &Role {
        &self.online
    }

    /// The root role the keyring file names, if any.
    pub fn root(&self) -> Option<&Role> {
        self.root.as_ref()
    }

    /// The role that signs this keyring's updates: its root, else its online keys.
    pub fn signs_updates(&self) -> &Role {
        self.root.as_ref().unwrap_or(&self.online)
    }

    /// Checks a bundle envelope's signatures against the online role (spec 7.2) and
    /// returns the key ids of the distinct keys that signed it.
    pub fn check(&self, envelope: &DecodedEnvelope) -> Result<Vec<String>, TrustError> {
        self.online.check(envelope)
    }

    /// Follows a keyring chain (spec 7.3): adopts, in order, each update newer than the
    /// keyring held at that point and trusted by it. Returns the newest keyring.
    pub fn follow_chain(&self, chain: &[u8], limits: &Limits) -> Result<Keyring, TrustError> {
        self.follow_chain_adopting(chain, limits).map(|(keyring, _)| keyring)
    }

    /// [`Keyring::follow_chain`], with the updates it adopted, in order: the signed bytes
    /// that lead this keyring to the result, the skipped ones left out.
    pub fn follow_chain_adopting(&self, chain: &[u8], limits: &Limits) -> Result<(Keyring, Vec<Vec<u8>>), TrustError> {
        chain::follow(self, chain, limits)
    }

    /// Signs this keyring as an update with `keys` (of the current keyring's root, and of
    /// this one's when it brings a new root).
    pub fn sign_update(&self, keys: &[SigningKey]) -> Vec<u8> {
        envelope::sign(KEYRING_PAYLOAD_TYPE, &self.to_json(), keys)
    }

    /// [`Keyring::sign_update`] by signers wherever their keys are.
    pub fn sign_update_by<S: Signer>(&self, signers: &[S]) -> Result<Vec<u8>, SignError> {
        envelope::sign_by(KEYRING_PAYLOAD_TYPE, &self.to_json(), signers)
    }

    /// Whether `envelope`, an update to `next`, is trusted by this keyring (spec 7.3): the
    /// threshold of this keyring's root signed it, and of `next`'s root too when `next`
    /// names a root other than this keyring's.
    pub fn check_update(&self, next: &Keyring, envelope: &DecodedEnvelope) -> Result<(), TrustError> {
        self.signs_updates().check(envelope).map_err(|e| TrustError::UpdateUntrusted {
            update: format!("version {}", next.version()),
            current: self.version,
            source: Box::new(e),
        })?;
        // Two keyrings without a root rotate as they always did: the current keys alone.
        let (now, then) = (self.signs_updates(), next.signs_updates());
        if (self.root.is_some() || next.root.is_some()) && !now.same_as(then) {
            then.check(envelope).map_err(|e| TrustError::NewRootUnsigned { update: next.version(), source: Box::new(e) })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
