//! The keyring a run verifies with. It is derived again on every run from the local keyring
//! file (the registration's) and the signed keyring updates the state keeps, recorded as
//! soon as they verified, so a revocation holds even while the apply fails. The state
//! holds nothing trusted on its own word: whoever can edit the state Secret can drop or
//! break the kept updates, which falls back to the file's keyring and the store's own
//! chain (a full re-verification, or a refusal), but cannot add a key.

use std::time::Duration;

use airlock_bundle::keyring::chain;
use airlock_bundle::{Floor, Keyring, Limits, VerifiedEnvelope};
use serde_json::value::RawValue;

use crate::kept::state::State;

/// The keyring to verify with, the signed updates that lead the file's keyring to it, and
/// the limits bundles are held to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trusted {
    pub keyring: Keyring,
    /// The spec's limits with this puller's maximum validity (spec 8.9, 8.10).
    pub limits: Limits,
    updates: Vec<Vec<u8>>,
}

impl Trusted {
    /// The file's keyring advanced by the state's kept chain. A newer file (an operator
    /// rotated by hand) skips the kept updates it is past.
    pub fn derive(file: &Keyring, state: Option<&State>, max_validity: Duration) -> Trusted {
        let limits = Limits { max_validity_secs: max_validity.as_secs().try_into().unwrap_or(i64::MAX), ..Limits::SPEC };
        let unadvanced = || Trusted { keyring: file.clone(), limits, updates: Vec::new() };
        let Some(kept) = state.and_then(|s| s.keyring_chain.as_deref()) else { return unadvanced() };
        match file.follow_chain_adopting(kept.get().as_bytes(), &Limits::SPEC) {
            Ok((keyring, updates)) => Trusted { keyring, limits, updates },
            Err(error) => {
                tracing::warn!(%error, "the state's keyring chain does not follow from the keyring file: ignored");
                unadvanced()
            }
        }
    }

    /// The floor `state` sets (none without a state).
    pub fn floor(&self, state: Option<&State>) -> Floor {
        state.map(|s| s.floor(self.keyring.version())).unwrap_or_default()
    }

    /// The chain to keep once `envelope` verified: these updates, then the ones the
    /// store's chain added to them; `None` when the file's keyring needs none.
    pub fn chain_after(&self, envelope: &VerifiedEnvelope) -> Option<Box<RawValue>> {
        let updates: Vec<Vec<u8>> = self.updates.iter().chain(envelope.adopted_updates()).cloned().collect();
        (!updates.is_empty()).then(|| {
            let json = String::from_utf8(chain(&updates)).expect("a verified keyring chain is UTF-8");
            RawValue::from_string(json).expect("a verified keyring chain is JSON")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::state::tests::state_with_chain;
    use airlock_bundle::SigningKey;

    const DAY: Duration = Duration::from_secs(86_400);

    fn keyring(version: u64, seed: u8) -> (Keyring, SigningKey) {
        let key = SigningKey::from_seed([seed; 32]);
        (Keyring::new(version, 1, vec![key.public()], &Limits::SPEC).unwrap(), key)
    }

    #[test]
    fn follows_only_updates_signed_from_the_file_keyring() {
        let ((v1, k1), (v2, k2), (v3, _)) = (keyring(1, 1), keyring(2, 2), keyring(3, 3));
        let (to_v2, to_v3) = (v2.sign_update(&[k1]), v3.sign_update(&[k2]));
        let kept = state_with_chain(&chain(&[to_v2.clone(), to_v3.clone()]));
        let trusted = Trusted::derive(&v1, Some(&kept), DAY);
        assert_eq!(trusted.keyring, v3);
        assert_eq!(trusted.updates, vec![to_v2.clone(), to_v3.clone()]);
        assert_eq!(Trusted::derive(&v1, None, DAY).keyring, v1);

        // An update the file's keyring did not sign, written into the state, adds nothing.
        let forged = state_with_chain(&chain(&[keyring(2, 9).0.sign_update(&[SigningKey::from_seed([9; 32])])]));
        assert_eq!(
            Trusted::derive(&v1, Some(&forged), DAY),
            Trusted { keyring: v1.clone(), limits: Trusted::derive(&v1, None, DAY).limits, updates: Vec::new() }
        );
        let not_a_chain = state_with_chain(br#"[{"payload": 1}]"#);
        assert_eq!(Trusted::derive(&v1, Some(&not_a_chain), DAY).keyring, v1);

        // A newer file skips what it is past and keeps what still advances it.
        let from_v2 = Trusted::derive(&v2, Some(&kept), DAY);
        assert_eq!((from_v2.keyring, from_v2.updates), (v3.clone(), vec![to_v3.clone()]));
        assert_eq!(Trusted::derive(&v3, Some(&kept), DAY).updates, Vec::<Vec<u8>>::new());
    }
}
