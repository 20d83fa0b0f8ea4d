//! Fetching this cluster's bundle and verifying it (spec section 8) with what the state
//! remembers: the floor, and the keyring rotation may have advanced past the local file.
//!
//! An unchanged bundle is not fetched again, except when a profile asks for drift
//! detection: then the content is fetched and verified once more in full. That costs a
//! store round trip per run for those clusters only, but the alternative, keeping the last
//! bundle's manifests in the state Secret, cannot hold a bundle over the API server's
//! 1 MiB object limit, and content re-fetched is content re-verified. This module decides
//! nothing about applying.

use airlock::bundle::{Expectation, Floor, Keyring, SyncMode, VerifiedBundle, VerifiedEnvelope};
use airlock::store::{self, Fetch, RegistryCredentials, Store, StoreRef};
use airlock::{ClusterId, Limits};
use jiff::Timestamp;

use crate::failure::Failure;
use crate::state::State;

/// Opens the store. Registry credentials come from Docker's `config.json`
/// (`$DOCKER_CONFIG`), which a pod gets by mounting a Secret.
pub async fn open(reference: &StoreRef) -> Result<Box<dyn Store>, Failure> {
    store::open(reference, &RegistryCredentials::default()).await.map_err(|e| Failure::Error(e.to_string()))
}

/// The keyring to verify with: the one the state adopted by rotation when it is newer
/// than the local file's, else the file's. A newer file (an operator rotated by hand) wins.
pub fn trusted_keyring(file: &Keyring, state: Option<&State>) -> Result<Keyring, Failure> {
    let adopted = state.map(State::keyring).transpose().map_err(Failure::Error)?.flatten();
    Ok(match adopted {
        Some(k) if k.version() > file.version() => k,
        _ => file.clone(),
    })
}

/// Whether any profile of the bundle wants its objects checked on every run.
pub fn wants_drift_detection(envelope: &VerifiedEnvelope) -> bool {
    envelope.predicate().profiles.iter().any(|p| p.sync_mode == SyncMode::ContinuousWithDriftDetection)
}

/// Fetches and verifies the newest bundle for `cluster`.
pub async fn fetch(store: &dyn Store, cluster: &ClusterId, keyring: &Keyring, floor: &Floor) -> Result<Fetch, Failure> {
    let expect = Expectation { cluster, keyring, floor, now: Timestamp::now() };
    Ok(store::fetch_verified(store, &expect, &Limits::SPEC).await?)
}

/// The content of a bundle found already applied, fetched and verified again in full.
/// The floor's applied version is left out so verification does not stop at "already
/// applied"; the result must then be that very bundle, or the store changed in between.
pub async fn fetch_again(
    store: &dyn Store,
    cluster: &ClusterId,
    keyring: &Keyring,
    floor: &Floor,
    applied: &VerifiedEnvelope,
) -> Result<VerifiedBundle, Failure> {
    let open_floor = Floor { applied: None, highest_issued_at: floor.highest_issued_at };
    match fetch(store, cluster, keyring, &open_floor).await? {
        Fetch::New(bundle)
            if bundle.predicate().version == applied.predicate().version
                && bundle.envelope().digest() == applied.digest() =>
        {
            Ok(bundle)
        }
        _ => Err(Failure::Error(format!(
            "{}: the bundle for {cluster} changed while it was being read; the next run retries",
            store.describe()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock::testkit::Fixture;
    use serde_json::value::RawValue;

    fn state_with(keyring: &Keyring) -> State {
        State {
            cluster: "fleet/edge-1".into(),
            version: 1,
            digest: airlock::Digest::of(b"x"),
            highest_issued_at: Fixture::now(),
            keyring: Some(RawValue::from_string(String::from_utf8(keyring.to_json()).unwrap()).unwrap()),
            inventory: vec![],
            applied_at: Fixture::now(),
        }
    }

    fn keyring(version: u64, seed: u8) -> Keyring {
        Keyring::new(version, 1, vec![airlock::bundle::SigningKey::from_seed([seed; 32]).public()], &Limits::SPEC)
            .unwrap()
    }

    #[test]
    fn prefers_the_newer_keyring() {
        let (file, rotated) = (keyring(1, 1), keyring(2, 2));
        assert_eq!(trusted_keyring(&file, None).unwrap(), file);
        assert_eq!(trusted_keyring(&file, Some(&state_with(&rotated))).unwrap(), rotated);
        assert_eq!(trusted_keyring(&rotated, Some(&state_with(&file))).unwrap(), rotated, "a newer file wins");
        assert_eq!(trusted_keyring(&file, Some(&state_with(&keyring(1, 3)))).unwrap(), file, "same version: the file");
    }

    #[tokio::test]
    async fn fetches_an_applied_bundle_again_only_if_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let fixture = Fixture::new(1);
        let reference = StoreRef::OciLayout(dir.path().to_path_buf());
        let store = open(&reference).await.unwrap();
        // Fixture bundles are issued in the past and would be expired now: sign with the
        // current time instead.
        let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
        let signed = |version, files| {
            let release = airlock::bundle::Release {
                issued_at: now,
                expires: now + jiff::SignedDuration::from_hours(1),
                ..fixture.release(version)
            };
            let settings = |_: &str| airlock::bundle::PartSettings::default();
            airlock::bundle::sign::sign(Fixture::bundle(files), &release, &settings, &fixture.keys, None)
        };
        store.publish(&[signed(1, Fixture::files())], &Default::default()).await.unwrap();
        let Fetch::New(first) = fetch(&*store, &fixture.cluster, &fixture.keyring, &Floor::default()).await.unwrap()
        else {
            panic!("a first fetch is new")
        };
        let floor = Floor { applied: Some((1, first.envelope().digest())), highest_issued_at: Some(now) };
        let Fetch::AlreadyApplied(env) = fetch(&*store, &fixture.cluster, &fixture.keyring, &floor).await.unwrap()
        else {
            panic!("same version and digest is already applied")
        };
        let again = fetch_again(&*store, &fixture.cluster, &fixture.keyring, &floor, &env).await.unwrap();
        assert_eq!(again.bundle().digest(), first.bundle().digest());
        let mut files = Fixture::files();
        files[0].1.extend_from_slice(b"  extra: \"1\"\n");
        let changed = signed(2, files);
        store.publish(&[changed], &Default::default()).await.unwrap();
        let err = fetch_again(&*store, &fixture.cluster, &fixture.keyring, &floor, &env).await.unwrap_err();
        assert!(err.message().contains("changed while it was being read"), "{err:?}");
    }
}
