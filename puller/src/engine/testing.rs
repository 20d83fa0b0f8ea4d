//! Test support shared by the engine's unit tests and its end-to-end tests: a real
//! `VerifiedBundle`, signed with the testkit's fixed key and verified like a puller does.

use std::collections::BTreeSet;

use airlock_bundle::Limits;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::verify_envelope;
use airlock_bundle::{Bundle, Floor, PartSettings, Transport, VerifiedBundle, sign};

/// `files` (path, YAML) signed as `version` of the fixture cluster `fleet/edge-1`, each
/// part with the settings `settings` gives it, then verified in full (spec 8).
pub fn verified(version: u64, files: &[(String, String)], settings: &dyn Fn(&str) -> PartSettings) -> VerifiedBundle {
    let fixture = Fixture::new(1);
    let parts: BTreeSet<String> = files.iter().map(|(p, _)| p.split('/').next().unwrap_or_default().to_string()).collect();
    let files = files.iter().map(|(p, y)| (p.clone(), y.as_bytes().to_vec()));
    let bundle = Bundle::new(parts, files, &Limits::SPEC).expect("valid test bundle");
    let signed = sign::sign(bundle, &fixture.release(version), settings, &fixture.keys, None);
    let floor = Floor::default();
    let envelope = verify_envelope(&signed.envelope, None, &fixture.expect(&floor), &Limits::SPEC).expect("test envelope verifies");
    let parts = signed
        .bundle
        .parts()
        .map(|(name, part)| envelope.verify_part(name, Transport::Tar(&part.tar()), &Limits::SPEC).expect("test part verifies"))
        .collect();
    envelope.finish(parts, &Limits::SPEC).expect("test bundle verifies")
}
