//! The keyring a run verifies with. It is derived again on every run from the local keyring
//! file (the registration's) and the signed keyring updates the state keeps, recorded as
//! soon as they verified, so a revocation holds even while the apply fails. The state
//! holds nothing trusted on its own word: whoever can edit the state Secret can drop or
//! break the kept updates, which falls back to the file's keyring and the store's own
//! chain (a full re-verification, or a refusal), but cannot add a key. Nor can it take
//! one back: when what the file and the kept chain give is older than the keyring the
//! state records verifying its applied bundle with, the run is refused (`derive`) rather
//! than let a keyring the root rotated away, and a key it revoked, verify again.

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
    /// rotated by hand) skips the kept updates it is past. Refused when that is older
    /// than the keyring version the state records.
    pub fn derive(file: &Keyring, state: Option<&State>, max_validity: Duration) -> Result<Trusted, TrustError> {
        let limits = Limits { max_validity_secs: max_validity.as_secs().try_into().unwrap_or(i64::MAX), ..Limits::SPEC };
        let unadvanced = || Trusted { keyring: file.clone(), limits, updates: Vec::new() };
        let trusted = match state.and_then(|s| s.keyring_chain.as_deref()) {
            None => unadvanced(),
            Some(kept) => match file.follow_chain_adopting(kept.get().as_bytes(), &Limits::SPEC) {
                Ok((keyring, updates)) => Trusted { keyring, limits, updates },
                Err(error) => {
                    tracing::warn!(%error, "the state's keyring chain does not follow from the keyring file: ignored");
                    unadvanced()
                }
            },
        };
        // The store's chain could carry the older keyring forward again, but only through
        // the versions the root has since rotated away from: not a way back to trust.
        match state.and_then(|s| s.keyring_version) {
            Some(recorded) if trusted.keyring.version() < recorded => {
                Err(TrustError::KeyringBelowState { recorded, derived: trusted.keyring.version() })
            }
            _ => Ok(trusted),
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

/// Why no keyring can be trusted for this run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The keyring file and the state's kept chain give an older keyring than the one
    /// that verified the applied bundle: the file was replaced by an older one, or the
    /// state's chain was lost or edited.
    #[error(
        "the state records keyring version {recorded}, but the keyring file and the state's keyring chain give only \
         version {derived}: refusing to verify with an older keyring; give the puller a keyring file of version \
         {recorded} or later (the current registration's)"
    )]
    KeyringBelowState { recorded: u64, derived: u64 },
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
        let trusted = Trusted::derive(&v1, Some(&kept), DAY).unwrap();
        assert_eq!(trusted.keyring, v3);
        assert_eq!(trusted.updates, vec![to_v2.clone(), to_v3.clone()]);
        assert_eq!(Trusted::derive(&v1, None, DAY).unwrap().keyring, v1);

        // An update the file's keyring did not sign, written into the state, adds nothing.
        let forged = state_with_chain(&chain(&[keyring(2, 9).0.sign_update(&[SigningKey::from_seed([9; 32])])]));
        assert_eq!(
            Trusted::derive(&v1, Some(&forged), DAY).unwrap(),
            Trusted { keyring: v1.clone(), limits: Trusted::derive(&v1, None, DAY).unwrap().limits, updates: Vec::new() }
        );
        let not_a_chain = state_with_chain(br#"[{"payload": 1}]"#);
        assert_eq!(Trusted::derive(&v1, Some(&not_a_chain), DAY).unwrap().keyring, v1);

        // A newer file skips what it is past and keeps what still advances it.
        let from_v2 = Trusted::derive(&v2, Some(&kept), DAY).unwrap();
        assert_eq!((from_v2.keyring, from_v2.updates), (v3.clone(), vec![to_v3.clone()]));
        assert_eq!(Trusted::derive(&v3, Some(&kept), DAY).unwrap().updates, Vec::<Vec<u8>>::new());
    }

    #[test]
    fn rejects_a_keyring_older_than_the_one_the_state_records() {
        let ((v1, k1), (v2, k2), (v3, _)) = (keyring(1, 1), keyring(2, 2), keyring(3, 3));
        let (to_v2, to_v3) = (v2.sign_update(&[k1]), v3.sign_update(&[k2]));
        let (whole, cut) = (chain(&[to_v2.clone(), to_v3]), chain(&[to_v2]));
        let recorded = |chain: &[u8]| State { keyring_version: Some(3), ..state_with_chain(chain) };
        assert_eq!(Trusted::derive(&v1, Some(&recorded(&whole)), DAY).unwrap().keyring, v3, "the kept chain reaches it");
        assert_eq!(Trusted::derive(&v3, Some(&recorded(b"[]")), DAY).unwrap().keyring, v3, "so does a file of its version");

        // The kept chain dropped, or cut short, or the file swapped for an older one.
        for (file, chain, derived) in [(&v1, &b"[]"[..], 1), (&v1, &cut[..], 2), (&v2, b"[]", 2)] {
            let err = Trusted::derive(file, Some(&recorded(chain)), DAY).unwrap_err();
            assert_eq!(err, TrustError::KeyringBelowState { recorded: 3, derived });
        }
        let message = TrustError::KeyringBelowState { recorded: 3, derived: 1 }.to_string();
        assert!(message.contains("keyring version 3") && message.contains("only version 1"), "{message}");
        // A state written before the version was kept has nothing to compare with.
        let unrecorded = State { keyring_version: None, ..state_with_chain(b"[]") };
        assert_eq!(Trusted::derive(&v1, Some(&unrecorded), DAY).unwrap().keyring, v1);
    }
}
