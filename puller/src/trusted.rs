//! The keyring a run verifies with. It is derived again on every run from the local keyring
//! file (the registration's) and the signed keyring updates the state kept after the last
//! apply, so the state holds nothing trusted on its own word: whoever can edit the state
//! Secret can drop or break the kept updates, which falls back to the file's keyring and
//! the store's own chain (a full re-verification, or a refusal), but cannot add a key.

use airlock_bundle::keyring::chain;
use airlock_bundle::{Keyring, Limits, VerifiedEnvelope};

use crate::kept::state::State;

/// The keyring to verify with, and the signed updates that lead the file's keyring to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trusted {
    pub keyring: Keyring,
    updates: Vec<Vec<u8>>,
}

impl Trusted {
    /// The file's keyring advanced by the state's kept chain. A newer file (an operator
    /// rotated by hand) skips the kept updates it is past.
    pub fn derive(file: &Keyring, state: Option<&State>) -> Trusted {
        let unadvanced = || Trusted { keyring: file.clone(), updates: Vec::new() };
        let Some(kept) = state.and_then(|s| s.keyring_chain.as_deref()) else { return unadvanced() };
        match file.follow_chain_adopting(kept.get().as_bytes(), &Limits::SPEC) {
            Ok((keyring, updates)) => Trusted { keyring, updates },
            Err(error) => {
                tracing::warn!(%error, "the state's keyring chain does not follow from the keyring file: ignored");
                unadvanced()
            }
        }
    }

    /// The chain to keep once `envelope`'s bundle is applied: these updates, then the ones
    /// the store's chain added to them; `None` when the file's keyring needs none.
    pub fn chain_after(&self, envelope: &VerifiedEnvelope) -> Option<Vec<u8>> {
        let updates: Vec<Vec<u8>> = self.updates.iter().chain(envelope.adopted_updates()).cloned().collect();
        (!updates.is_empty()).then(|| chain(&updates))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::state::tests::state_with_chain;
    use airlock_bundle::SigningKey;

    fn keyring(version: u64, seed: u8) -> (Keyring, SigningKey) {
        let key = SigningKey::from_seed([seed; 32]);
        (Keyring::new(version, 1, vec![key.public()], &Limits::SPEC).unwrap(), key)
    }

    #[test]
    fn follows_only_updates_signed_from_the_file_keyring() {
        let ((v1, k1), (v2, k2), (v3, _)) = (keyring(1, 1), keyring(2, 2), keyring(3, 3));
        let (to_v2, to_v3) = (v2.sign_update(&[k1]), v3.sign_update(&[k2]));
        let kept = state_with_chain(&chain(&[to_v2.clone(), to_v3.clone()]));
        let trusted = Trusted::derive(&v1, Some(&kept));
        assert_eq!(trusted.keyring, v3);
        assert_eq!(trusted.updates, vec![to_v2.clone(), to_v3.clone()]);
        assert_eq!(Trusted::derive(&v1, None).keyring, v1);

        // An update the file's keyring did not sign, written into the state, adds nothing.
        let forged = state_with_chain(&chain(&[keyring(2, 9).0.sign_update(&[SigningKey::from_seed([9; 32])])]));
        assert_eq!(Trusted::derive(&v1, Some(&forged)), Trusted { keyring: v1.clone(), updates: Vec::new() });
        let not_a_chain = state_with_chain(br#"[{"payload": 1}]"#);
        assert_eq!(Trusted::derive(&v1, Some(&not_a_chain)).keyring, v1);

        // A newer file skips what it is past and keeps what still advances it.
        let from_v2 = Trusted::derive(&v2, Some(&kept));
        assert_eq!((from_v2.keyring, from_v2.updates), (v3.clone(), vec![to_v3.clone()]));
        assert_eq!(Trusted::derive(&v3, Some(&kept)).updates, Vec::<Vec<u8>>::new());
    }
}
