//! The age identities a run decrypts with (spec 2.7): the identity file's, then the ones
//! the state kept from the last apply. A rotation replaces the file's identity before or
//! after the publisher moves to the new recipient; keeping the identities that decrypted
//! the applied bundle lets a drift check read that bundle again in between, until a bundle
//! under the new recipient has applied. An identity in the state only ever decrypts: the
//! statement signs each plaintext's digest, so an identity planted there gains nothing.

use airlock_bundle::age::Identity;
use airlock_bundle::statement::Predicate;

use crate::kept::identity::KeptIdentity;
use crate::kept::state::State;

/// The identities of one run, the file's first.
#[derive(Debug, Clone, Default)]
pub struct Identities {
    all: Vec<Identity>,
}

impl Identities {
    /// The file's identities, then those the state kept that the file lacks.
    pub fn derive(file: &[Identity], state: Option<&State>) -> Identities {
        let mut all = file.to_vec();
        for KeptIdentity(kept) in state.map_or(&[][..], |s| &s.age_identities[..]) {
            if !all.contains(kept) {
                all.push(kept.clone());
            }
        }
        Identities { all }
    }

    pub fn all(&self) -> &[Identity] {
        &self.all
    }

    /// Whether this puller decrypts, so that a `Secret` in clear is a downgrade.
    pub fn decrypts(&self) -> bool {
        !self.all.is_empty()
    }

    /// What the state keeps once a bundle signed as `predicate` is applied: the identities
    /// of the recipients it lists, which are what reading it again needs.
    pub fn kept_after(&self, predicate: &Predicate) -> Vec<KeptIdentity> {
        let listed = predicate.settings.recipients.as_deref().unwrap_or_default();
        self.all.iter().filter(|i| listed.contains(&i.recipient().to_string())).cloned().map(KeptIdentity).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::state::tests::state_with_chain;

    fn predicate(recipients: &[&Identity]) -> Predicate {
        let mut p = airlock_bundle::testkit::Fixture::new(1).signed(1, airlock_bundle::testkit::Fixture::files()).statement.predicate;
        p.settings.recipients = Some(recipients.iter().map(|i| i.recipient().to_string()).collect());
        p
    }

    #[test]
    fn keeps_the_identity_of_the_applied_bundle_until_one_under_the_new_recipient_applied() {
        let (old, new) = (Identity::from_secret([1; 32]), Identity::from_secret([2; 32]));
        let mut state = state_with_chain(b"[]");
        state.age_identities = Identities::derive(std::slice::from_ref(&old), None).kept_after(&predicate(&[&old]));
        let rotated = Identities::derive(std::slice::from_ref(&new), Some(&state));
        assert_eq!(rotated.all(), [new.clone(), old.clone()], "the file's first, then the one kept");
        state.age_identities = rotated.kept_after(&predicate(&[&new]));
        let after = Identities::derive(std::slice::from_ref(&new), Some(&state));
        assert_eq!(after.all(), std::slice::from_ref(&new), "the old one is dropped");
    }

    #[test]
    fn keeps_identities_as_their_strings_and_never_shows_them() {
        let identity = Identity::from_secret([3; 32]);
        let json = serde_json::to_string(&KeptIdentity(identity.clone())).unwrap();
        assert_eq!(json, format!("{:?}", identity.to_secret_string()));
        assert_eq!(serde_json::from_str::<KeptIdentity>(&json).unwrap().0, identity);
        assert!(!format!("{:?}", KeptIdentity(identity.clone())).contains(&identity.to_secret_string()));
        assert!(serde_json::from_str::<KeptIdentity>("\"AGE-SECRET-KEY-1XYZ\"").is_err());
    }
}
