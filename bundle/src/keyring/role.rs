//! A role of a keyring (spec 7.1): distinct keys and the threshold of them that must sign.
//! The online role signs bundles; the root role signs keyring updates.

use std::collections::BTreeSet;

use super::{KeyringError, TrustError};
use crate::envelope::{self, DecodedEnvelope};
use crate::key::PublicKey;
use crate::limits::Limits;

/// Distinct keys and how many of them must sign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    threshold: usize,
    keys: Vec<PublicKey>,
}

impl Role {
    /// `role` names it in errors ("online", "root").
    pub fn new(role: &'static str, threshold: usize, keys: Vec<PublicKey>, limits: &Limits) -> Result<Role, KeyringError> {
        if keys.len() > limits.keyring_keys {
            return Err(KeyringError::TooManyKeys { role, count: keys.len(), limit: limits.keyring_keys });
        }
        let mut seen = BTreeSet::new();
        for k in &keys {
            if !seen.insert(k.key_id()) {
                return Err(KeyringError::DuplicateKey { role, key_id: k.key_id() });
            }
        }
        if threshold == 0 || threshold > keys.len() {
            return Err(KeyringError::BadThreshold { role, threshold, keys: keys.len() });
        }
        Ok(Role { threshold, keys })
    }

    /// Parses the keys of a keyring file, PEM or `ssh-ed25519`.
    pub(super) fn parse(role: &'static str, threshold: usize, keys: &[String], limits: &Limits) -> Result<Role, KeyringError> {
        if keys.len() > limits.keyring_keys {
            return Err(KeyringError::TooManyKeys { role, count: keys.len(), limit: limits.keyring_keys });
        }
        let keys = keys
            .iter()
            .enumerate()
            .map(|(index, k)| PublicKey::parse(k).map_err(|source| KeyringError::Key { role, index, source }))
            .collect::<Result<_, _>>()?;
        Role::new(role, threshold, keys, limits)
    }

    pub fn threshold(&self) -> usize {
        self.threshold
    }

    pub fn keys(&self) -> &[PublicKey] {
        &self.keys
    }

    pub(super) fn pem_keys(&self) -> Vec<String> {
        self.keys.iter().map(PublicKey::to_pem).collect()
    }

    /// The same threshold over the same keys, in whatever order.
    pub fn same_as(&self, other: &Role) -> bool {
        let ids = |r: &Role| r.keys.iter().map(PublicKey::key_id).collect::<BTreeSet<_>>();
        self.threshold == other.threshold && ids(self) == ids(other)
    }

    pub fn holds(&self, key: &PublicKey) -> bool {
        self.keys.iter().any(|k| k.key_id() == key.key_id())
    }

    /// Checks an envelope's signatures against this role (spec 7.2) and returns the key
    /// ids of the distinct keys that signed it.
    pub fn check(&self, envelope: &DecodedEnvelope) -> Result<Vec<String>, TrustError> {
        let message = envelope::pae(&envelope.payload_type, &envelope.payload);
        let mut signers = BTreeSet::new();
        for (keyid, sig) in &envelope.signatures {
            // Only the key the id names is tried (spec 6.4): a signature that names no key
            // of the role does not count. The set counts keys, so one never counts twice.
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
}
