//! An offline root against a stolen online key, through the real registry of
//! `hack/services.sh` and the managed API server. The keyring pullers trust has an online
//! key and a root of 2 of 3 keys. The thief of the online key cannot rotate the keyring
//! or replace the root (exit 3, nothing changed); what they can do, push the floor a
//! million versions up, the root undoes: a rotation the root signed, carried in the next
//! bundle, revokes the key, holds even though that bundle fails to apply, refuses the
//! thief's next bundle, and starts the floor afresh so the publisher's own versions apply.
//! Nor can whoever edits the state undo the rotation: a keyring older than the one the
//! state records is refused, not used.

use airlock_bundle::keyring::{self, Role};
use airlock_bundle::{Keyring, Limits, SignedBundle, SigningKey};
use airlock_e2e::puller::{Signing, Site, assert_refused, config_map_file, publish_to};
use airlock_e2e::{assert_exit, service_env};
use airlock_store::StoreRef;
use jiff::SignedDuration;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed([seed; 32])
}

/// Online keys `online`, root 2 of the keys 21, 22 and 23.
fn keyring(version: u64, online: u8) -> Keyring {
    let role = |name, threshold, seeds: &[u8]| {
        Role::new(name, threshold, seeds.iter().map(|&s| key(s).public()).collect(), &Limits::SPEC).unwrap()
    };
    Keyring::with_root(version, role("online", 1, &[online]), Some(role("root", 2, &[21, 22, 23]))).unwrap()
}

struct Drill {
    site: Site,
    store: StoreRef,
    source: String,
}

impl Drill {
    async fn new() -> Drill {
        let site = Site::new("root").await;
        std::fs::write(site.dir.path().join("keyring.json"), keyring(1, 11).to_json()).expect("keyring written");
        let source = format!("oci+http://{}/root-{}", service_env("AIRLOCK_REGISTRY"), site.cluster.name());
        let store = source.parse().expect("a registry reference");
        Drill { site, store, source }
    }

    /// `value` in two ConfigMaps (and `extra` files), as `version`, signed by `signer`
    /// under keyring `keyring_version`, with `chain`.
    fn bundle(
        &self,
        version: u64,
        value: &str,
        signer: u8,
        keyring_version: u64,
        chain: Option<Vec<u8>>,
        extra: Vec<(String, Vec<u8>)>,
    ) -> SignedBundle {
        let mut files = self.site.files(2, value);
        files.extend(extra);
        files.sort();
        let how = Signing { keys: Some(vec![key(signer)]), keyring_chain: chain, ..Signing::default() };
        self.site.signed_as(version, files, how, |r| r.keyring_version = keyring_version)
    }

    async fn sync(&self, bundle: SignedBundle) -> airlock_e2e::Run {
        publish_to(&self.store, &[bundle]).await;
        self.site.command_from(&self.source, "sync", &[]).output().await.expect("airlock-puller runs").into()
    }

    async fn value(&self) -> String {
        self.site.config_maps().await["cm-0"].data.as_ref().unwrap()["value"].clone()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_root_recovers_from_a_stolen_online_key() {
    let drill = Drill::new().await;
    let site = &drill.site;
    assert_exit(&drill.sync(drill.bundle(1, "one", 11, 1, None, vec![])).await, 0);
    assert_eq!(drill.value().await, "one");

    // The thief signs, with the online key alone, a keyring of their own key, then one
    // that replaces the root by their key too: neither is adopted.
    let before = site.versions().await;
    let own_root = Keyring::with_root(
        2,
        Role::new("online", 1, vec![key(11).public()], &Limits::SPEC).unwrap(),
        Some(Role::new("root", 1, vec![key(66).public()], &Limits::SPEC).unwrap()),
    )
    .unwrap();
    for (forged, signers) in [(keyring(2, 66), vec![key(11)]), (own_root, vec![key(11), key(66)])] {
        let chain = keyring::chain(&[forged.sign_update(&signers)]);
        let run = drill.sync(drill.bundle(2, "forged", 66, 2, Some(chain), vec![])).await;
        assert_refused(
            &run,
            "keyring chain: keyring update (version 2) is not trusted by keyring version 1: signed by 0 distinct trusted key(s), threshold is 2",
        );
        assert_eq!(site.versions().await, before, "nothing written");
    }
    assert_eq!((site.state_version().await, site.state().await.unwrap().keyring_chain), (Some(1), None));

    // What the stolen key does get through: a bundle a million versions up.
    let lifted = 1 + 1_000_000;
    assert_exit(&drill.sync(drill.bundle(lifted, "stolen", 11, 1, None, vec![])).await, 0);
    assert_eq!(drill.value().await, "stolen");
    assert_refused(
        &drill.sync(drill.bundle(2, "two", 11, 1, None, vec![])).await,
        &format!("rollback: version 2 is older than the applied version {lifted}"),
    );

    // The root (keys 21 and 23) revokes key 11 for key 12; the publisher's next bundle
    // carries the rotation, and fails to apply (a ConfigMap the API server refuses).
    let chain = keyring::chain(&[keyring(2, 12).sign_update(&[key(21), key(23)])]);
    let broken = config_map_file("broken", &site.app_ns, "x");
    let broken = (broken.0, String::from_utf8(broken.1).unwrap().replace("value:", "not a key!:").into_bytes());
    let run = drill.sync(drill.bundle(2, "two", 12, 2, Some(chain.clone()), vec![broken])).await;
    assert_exit(&run, 1);
    let state = site.state().await.unwrap();
    assert_eq!((state.version, state.keyring_version), (lifted, Some(1)), "the floor is the stolen bundle's still");
    assert_eq!(state.keyring_chain.map(|c| c.len()), Some(1), "the rotation is kept though the apply failed");

    // The thief's next bundle, with no chain, under the revoked key: refused.
    let before = site.versions().await;
    let run = drill.sync(drill.bundle(lifted + 1, "stolen again", 11, 1, None, vec![])).await;
    assert_refused(&run, "signed by 0 distinct trusted key(s), threshold is 1");
    assert_eq!(site.versions().await, before, "nothing written");

    // The publisher's fixed bundle, version 3 under keyring 2, applies below the stolen
    // floor: the floor started afresh with the keyring the root signed.
    let run = drill.sync(drill.bundle(3, "three", 12, 2, Some(chain), vec![])).await;
    assert_exit(&run, 0);
    assert_eq!(drill.value().await, "three");
    let state = site.state().await.unwrap();
    assert_eq!((state.version, state.keyring_version), (3, Some(2)));
    let verified: airlock_e2e::Run = site.command_from(&drill.source, "verify", &[]).output().await.expect("airlock-puller runs").into();
    assert!(verified.stdout.contains("keyring:   version 2, threshold 1, root 2 of 3"), "{verified:?}");
    // And from now on the floor holds under keyring 2.
    assert_refused(
        &drill.sync(drill.bundle(2, "two", 12, 2, None, vec![])).await,
        "rollback: version 2 is older than the applied version 3",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_puller_enforces_its_own_maximum_validity() {
    let drill = Drill::new().await;
    let site = &drill.site;
    let long = |version| {
        let how = Signing { keys: Some(vec![key(11)]), ..Signing::default() };
        site.signed_as(version, site.files(1, "long"), how, |r| {
            r.keyring_version = 1;
            r.expires = r.issued_at + SignedDuration::from_hours(30 * 24);
        })
    };
    publish_to(&drill.store, &[long(1)]).await;
    let run: airlock_e2e::Run =
        site.command_from(&drill.source, "sync", &["--max-validity", "7d"]).output().await.expect("airlock-puller runs").into();
    assert_refused(&run, "longer than the 7 days a bundle may be valid");
    site.assert_untouched("a bundle valid 30 days is refused under --max-validity 7d").await;
    assert_exit(&site.command_from(&drill.source, "sync", &[]).output().await.expect("airlock-puller runs").into(), 0);
}

/// The root rotated key 11 away and a bundle under the new keyring applied. Then the
/// state's kept chain is dropped (whoever can write the state Secret can), so the keyring
/// file alone gives version 1, and the thief of key 11 publishes under it with no chain:
/// the run is refused (exit 3) instead of trusting key 11 again, and nothing changes.
#[tokio::test(flavor = "multi_thread")]
async fn a_keyring_older_than_the_state_records_is_refused() {
    let drill = Drill::new().await;
    let site = &drill.site;
    assert_exit(&drill.sync(drill.bundle(1, "one", 11, 1, None, vec![])).await, 0);
    let chain = keyring::chain(&[keyring(2, 12).sign_update(&[key(21), key(23)])]);
    assert_exit(&drill.sync(drill.bundle(2, "two", 12, 2, Some(chain), vec![])).await, 0);
    assert_eq!(site.state().await.unwrap().keyring_version, Some(2));

    site.forge_state(|state| {
        state.as_object_mut().expect("an object").remove("keyringChain");
    })
    .await;
    let before = site.versions().await;
    let run = drill.sync(drill.bundle(3, "stolen", 11, 1, None, vec![])).await;
    assert_refused(&run, "the state records keyring version 2, but the keyring file and the state's keyring chain give only version 1");
    assert!(run.stderr.contains("give the puller a keyring file of version 2 or later"), "{run:?}");
    assert_eq!(site.versions().await, before, "nothing written");
    assert_eq!(drill.value().await, "two");

    // The keyring file brought up to version 2 (the current registration's) runs again.
    std::fs::write(site.dir.path().join("keyring.json"), keyring(2, 12).to_json()).expect("keyring written");
    let run = drill.sync(drill.bundle(3, "three", 12, 2, None, vec![])).await;
    assert_exit(&run, 0);
    assert_eq!(drill.value().await, "three");
}
