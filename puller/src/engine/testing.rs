//! Test support shared by the engine's unit tests and its end-to-end tests: a real
//! `VerifiedBundle`, signed with the testkit's fixed key and verified like a puller does,
//! and a plain desired object and profile entry to build test cases from.

use std::collections::BTreeSet;

use airlock_bundle::Limits;
use airlock_bundle::statement::ProfileEntry;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::verify_envelope;
use airlock_bundle::{Bundle, Digest, Floor, PartSettings, StopMatchingBehavior, SyncMode, Transport, VerifiedBundle, sign};

/// Which values an apiserver leaves out of an object it stores, as drift detection judges
/// them: end-to-end tests that read objects back judge them the same way.
pub use super::drift::compare::is_zero;
use super::model::object::{DesiredObject, InventoryEntry, ObjectId};
use super::model::settings::{NamespacePolicy, Settings};

/// `files` (path, YAML) signed as `version` of the fixture cluster `fleet/edge-1`, each
/// part with the settings `settings` gives it, then verified in full (spec 8).
pub fn verified(version: u64, files: &[(String, String)], settings: &dyn Fn(&str) -> PartSettings) -> VerifiedBundle {
    verified_with(version, files, settings, |_| {})
}

/// As [`verified`], with the release `edit` makes of the fixture's.
pub fn verified_with(
    version: u64,
    files: &[(String, String)],
    settings: &dyn Fn(&str) -> PartSettings,
    edit: impl FnOnce(&mut airlock_bundle::Release),
) -> VerifiedBundle {
    let fixture = Fixture::new(1);
    let parts: BTreeSet<String> = files.iter().map(|(p, _)| p.split('/').next().unwrap_or_default().to_string()).collect();
    let files = files.iter().map(|(p, y)| (p.clone(), y.as_bytes().to_vec()));
    let bundle = Bundle::new(parts, files, &Limits::SPEC).expect("valid test bundle");
    let mut release = fixture.release(version);
    edit(&mut release);
    let signed = sign::sign(bundle, &release, settings, &fixture.keys, None);
    let floor = Floor::default();
    let envelope = verify_envelope(&signed.envelope, None, &fixture.expect(&floor), &Limits::SPEC).expect("test envelope verifies");
    let parts = signed
        .bundle
        .parts()
        .map(|(name, part)| envelope.verify_part(name, Transport::Tar(&part.tar()), &Limits::SPEC).expect("test part verifies"))
        .collect();
    envelope.finish(parts, &Limits::SPEC).expect("test bundle verifies")
}

/// `kind` `name` (in `namespace`) of profile `ClusterProfile.p` with the Sveltos defaults,
/// an empty manifest and no hash.
pub fn object(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> DesiredObject {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    DesiredObject {
        profile: "ClusterProfile.p".into(),
        sync_mode: SyncMode::Continuous,
        tier: 100,
        stop_matching_behavior: StopMatchingBehavior::WithdrawPolicies,
        force_conflicts: false,
        wave: 0,
        rules: Default::default(),
        create_only: false,
        adopt: false,
        force_recreate: false,
        drift_ignored: false,
        release: None,
        hook: None,
        wait: None,
        cleanup_on_fail: Default::default(),
        propagation: None,
        source: format!("ClusterProfile.p/{kind}.yaml document 1"),
        sealed: false,
        id: ObjectId {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            namespace: namespace.map(String::from),
            name: name.into(),
        },
        manifest: serde_json::json!({}).into(),
        hash: String::new(),
    }
}

/// The entry of an empty part `name` depending on `depends_on`, with the Sveltos defaults.
pub fn profile(name: &str, depends_on: &[&str]) -> ProfileEntry {
    let settings = PartSettings { depends_on: depends_on.iter().map(|d| d.to_string()).collect(), ..PartSettings::default() };
    sign::profile_entry(name, Digest::of(b""), 1024, settings)
}

/// Engine settings for `cluster` with nothing restricted, held back or confirmed, policy
/// `reject` and four requests in flight: what a test changes, it sets with `..`.
pub fn settings(cluster: &str) -> Settings {
    Settings {
        cluster: cluster.into(),
        watch_namespaces: None,
        namespace_policy: NamespacePolicy::Reject,
        own_namespace: None,
        cluster_scoped: Vec::new(),
        dry_run: false,
        concurrency: 4,
        held_back: Default::default(),
        decrypts: false,
        allow_mass_prune: false,
        protected_namespace_keys: Vec::new(),
        allow_endpoints: false,
        tenants: Default::default(),
    }
}

/// The inventory entry `object` leaves once applied (a hook's, with `hook`).
pub fn entry(object: &DesiredObject, hook: bool) -> InventoryEntry {
    InventoryEntry {
        id: object.id.clone(),
        profile: object.profile.clone(),
        applied_hash: object.hash.clone(),
        leave_on_removal: false,
        release: object.release.clone(),
        hook,
        propagation: None,
        adopted: false,
        service_account: None,
    }
}
