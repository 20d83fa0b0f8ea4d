//! Every rejection of spec section 8, each asserting its exact error, plus truncation and
//! byte-flip loops over a valid envelope and part. Steps 1-10 are here, steps 11-13 in
//! `parts`, the loops in `exhaustive`; the helpers below serve all three.

mod exhaustive;
mod parts;
mod sealed;
mod settings;

use airlock_bundle::envelope::{self, EnvelopeError, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::gzip;
use airlock_bundle::key::SigningKey;
use airlock_bundle::keyring::{Keyring, TrustError};
use airlock_bundle::statement::Statement;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::{Floor, Transport, VerifiedEnvelope, VerifyError, verify_envelope};
use airlock_bundle::{Digest, Limits};
use airlock_bundle::{SignedBundle, sign};
use jiff::{SignedDuration, Timestamp};

pub(crate) const L: Limits = Limits::SPEC;

pub(crate) fn good(fx: &Fixture) -> SignedBundle {
    fx.signed(3, Fixture::files())
}

pub(crate) fn check(fx: &Fixture, envelope: &[u8]) -> Result<VerifiedEnvelope, VerifyError> {
    verify_envelope(envelope, None, &fx.expect(&Floor::default()), &L)
}

pub(crate) fn signed_raw(fx: &Fixture, payload: &[u8]) -> Vec<u8> {
    envelope::sign(IN_TOTO_PAYLOAD_TYPE, payload, &fx.keys)
}

/// Re-signs a statement changed by `edit`, so only the semantic check can catch it.
pub(crate) fn resigned(fx: &Fixture, edit: impl FnOnce(&mut Statement)) -> Vec<u8> {
    let mut s = good(fx).statement;
    edit(&mut s);
    signed_raw(fx, &s.to_json())
}

fn payload_json(fx: &Fixture) -> String {
    String::from_utf8(good(fx).statement.to_json()).unwrap()
}

/// Verifies every part of `signed`, with `tamper` applied to the named part's gzip copy.
pub(crate) fn verify_parts(
    fx: &Fixture,
    signed: &SignedBundle,
    target: &str,
    tamper: impl Fn(Vec<u8>) -> Vec<u8>,
) -> Result<(), VerifyError> {
    let env = check(fx, &signed.envelope)?;
    let mut parts = Vec::new();
    for (name, part) in signed.bundle.parts() {
        let mut gz = gzip::compress(&part.tar());
        if name == target {
            gz = tamper(gz);
        }
        parts.push(env.verify_part(name, Transport::Gzip(&gz), &L)?);
    }
    env.finish(parts, &L).map(|_| ())
}

#[test]
fn accepts_a_good_bundle_and_returns_its_files() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    let env = check(&fx, &signed.envelope).unwrap();
    assert_eq!(env.signers(), [fx.keys[0].public().key_id()]);
    assert_eq!(env.digest(), signed.bundle.digest());
    assert!(!env.already_applied());
    verify_parts(&fx, &signed, "", |g| g).unwrap();
}

// spec 8.1, 8.2

#[test]
fn rejects_envelope_over_the_size_cap() {
    let fx = Fixture::new(1);
    let small = Limits { envelope_bytes: 100, ..L };
    let err = verify_envelope(&good(&fx).envelope, None, &fx.expect(&Floor::default()), &small).unwrap_err();
    assert_eq!(err, VerifyError::Envelope(EnvelopeError::TooLarge { limit: 100 }));
}

#[test]
fn rejects_envelope_that_is_not_dsse_json() {
    let fx = Fixture::new(1);
    for bad in [&b"not json"[..], b"{}", br#"{"payloadType":"application/vnd.in-toto+json","payload":"","signatures":[],"x":1}"#] {
        assert!(matches!(check(&fx, bad), Err(VerifyError::Envelope(EnvelopeError::Malformed(_)))));
    }
}

#[test]
fn rejects_wrong_payload_type() {
    let fx = Fixture::new(1);
    let env = envelope::sign("application/json", &good(&fx).statement.to_json(), &fx.keys);
    assert!(matches!(check(&fx, &env), Err(VerifyError::Envelope(EnvelopeError::PayloadType { .. }))));
}

#[test]
fn rejects_too_many_signatures() {
    let fx = Fixture::new(1);
    let keys: Vec<SigningKey> = (0..65).map(|i| SigningKey::from_seed([i; 32])).collect();
    let env = envelope::sign(IN_TOTO_PAYLOAD_TYPE, &good(&fx).statement.to_json(), &keys);
    assert_eq!(check(&fx, &env).unwrap_err(), VerifyError::Envelope(EnvelopeError::TooManySignatures { count: 65, limit: 64 }));
}

// spec 8.4

#[test]
fn rejects_signature_by_unknown_key() {
    let fx = Fixture::new(1);
    let other = Fixture::new(2);
    let err = check(&fx, &good(&other).envelope).unwrap_err();
    assert_eq!(err, VerifyError::Signatures(TrustError::Threshold { valid: 0, threshold: 1 }));
}

#[test]
fn rejects_one_signature_short_of_the_threshold() {
    let fx = Fixture::with_keys(&[1, 2, 3], 2);
    let env = envelope::sign(IN_TOTO_PAYLOAD_TYPE, &good(&fx).statement.to_json(), &fx.keys[..1]);
    assert_eq!(check(&fx, &env).unwrap_err(), VerifyError::Signatures(TrustError::Threshold { valid: 1, threshold: 2 }));
    let env = envelope::sign(IN_TOTO_PAYLOAD_TYPE, &good(&fx).statement.to_json(), &fx.keys[..2]);
    assert_eq!(check(&fx, &env).unwrap().signers().len(), 2);
}

#[test]
fn rejects_the_same_key_counted_twice_under_two_key_ids() {
    let fx = Fixture::with_keys(&[1, 2], 2);
    let one = envelope::sign(IN_TOTO_PAYLOAD_TYPE, &good(&fx).statement.to_json(), &fx.keys[..1]);
    let mut env: envelope::Envelope = serde_json::from_slice(&one).unwrap();
    let mut twin = env.signatures[0].clone();
    twin.keyid = fx.keys[1].public().key_id();
    env.signatures.push(twin);
    let bytes = serde_json::to_vec(&env).unwrap();
    assert_eq!(check(&fx, &bytes).unwrap_err(), VerifyError::Signatures(TrustError::Threshold { valid: 1, threshold: 2 }));
}

#[test]
fn rejects_a_flipped_byte_in_payload_or_signature() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    let mut env: envelope::Envelope = serde_json::from_slice(&signed.envelope).unwrap();
    env.payload = base64_flip(&env.payload, 10);
    assert!(matches!(check(&fx, &serde_json::to_vec(&env).unwrap()), Err(VerifyError::Signatures(_))));
    let mut env: envelope::Envelope = serde_json::from_slice(&signed.envelope).unwrap();
    env.signatures[0].sig = base64_flip(&env.signatures[0].sig, 5);
    assert!(matches!(check(&fx, &serde_json::to_vec(&env).unwrap()), Err(VerifyError::Signatures(_))));
}

fn base64_flip(b64: &str, at: usize) -> String {
    use base64::Engine;
    let e = base64::engine::general_purpose::STANDARD;
    let mut raw = e.decode(b64).unwrap();
    raw[at] ^= 0x40;
    e.encode(raw)
}

// spec 8.3

#[test]
fn adopts_a_keyring_update_signed_by_the_current_keys() {
    let fx = Fixture::new(1);
    let next_key = SigningKey::from_seed([9; 32]);
    let next = Keyring::new(2, 1, vec![next_key.public()], &L).unwrap();
    let chain = airlock_bundle::keyring::chain(&[next.sign_update(&fx.keys)]);
    let mut release = fx.release(3);
    release.keyring_version = 2;
    let signed = sign::sign(Fixture::bundle(Fixture::files()), &release, &|_| Default::default(), &[next_key], None);
    let env = verify_envelope(&signed.envelope, Some(&chain), &fx.expect(&Floor::default()), &L).unwrap();
    assert_eq!(env.keyring().version(), 2);
    // Without the chain, the new key is not trusted.
    assert!(matches!(check(&fx, &signed.envelope), Err(VerifyError::Signatures(_))));
}

#[test]
fn rejects_a_keyring_update_signed_by_too_few_current_keys() {
    let fx = Fixture::with_keys(&[1, 2], 2);
    let next = Keyring::new(2, 1, vec![SigningKey::from_seed([9; 32]).public()], &L).unwrap();
    let chain = airlock_bundle::keyring::chain(&[next.sign_update(&fx.keys[..1])]);
    let err = verify_envelope(&good(&fx).envelope, Some(&chain), &fx.expect(&Floor::default()), &L).unwrap_err();
    assert!(
        matches!(&err, VerifyError::KeyringChain(TrustError::UpdateUntrusted { update, current: 1, .. }) if update == "version 2"),
        "{err}"
    );
}

#[test]
fn rejects_a_keyring_listing_one_key_twice_in_two_forms() {
    let key = SigningKey::from_seed([1; 32]).public();
    let json = format!(
        r#"{{"apiVersion":"airlock.dev/v1","kind":"Keyring","version":1,"threshold":2,"keys":[{:?},{:?}]}}"#,
        key.to_pem(),
        key.to_openssh("ops")
    );
    let err = Keyring::parse(json.as_bytes(), &L).unwrap_err();
    assert_eq!(err, airlock_bundle::keyring::KeyringError::DuplicateKey { role: "online", key_id: key.key_id() });
}

// spec 8.5

#[test]
fn rejects_payload_with_duplicate_fields() {
    let fx = Fixture::new(1);
    let json = payload_json(&fx).replacen("\"version\":3", "\"version\":3,\"version\":4", 1);
    let err = check(&fx, &signed_raw(&fx, json.as_bytes())).unwrap_err();
    assert!(matches!(&err, VerifyError::Payload(m) if m.contains("duplicate field")), "{err}");
}

#[test]
fn rejects_payload_with_unknown_fields_or_types() {
    let fx = Fixture::new(1);
    let json = payload_json(&fx).replacen("\"version\":3", "\"version\":3,\"debug\":true", 1);
    assert!(matches!(check(&fx, &signed_raw(&fx, json.as_bytes())), Err(VerifyError::Payload(_))));
    let json = payload_json(&fx).replacen("https://airlock.dev/bundle/v1", "https://airlock.dev/bundle/v2", 1);
    assert!(matches!(check(&fx, &signed_raw(&fx, json.as_bytes())), Err(VerifyError::Payload(_))));
    let json = payload_json(&fx).replacen("\"version\":3", "\"version\":-3", 1);
    assert!(matches!(check(&fx, &signed_raw(&fx, json.as_bytes())), Err(VerifyError::Payload(_))));
}

// spec 8.6

#[test]
fn rejects_a_traversal_path_in_the_file_list() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.files[0].path = "ClusterProfile.web/../../etc/passwd.yaml".into());
    assert!(matches!(check(&fx, &env), Err(VerifyError::Content(_))));
}

#[test]
fn rejects_files_out_of_order_or_repeated() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.files.swap(0, 1));
    assert!(matches!(check(&fx, &env), Err(VerifyError::FileOrder { .. })));
    let env = resigned(&fx, |s| s.predicate.files[1] = s.predicate.files[0].clone());
    assert!(matches!(check(&fx, &env), Err(VerifyError::FileOrder { .. })));
}

#[test]
fn rejects_profiles_out_of_order() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.profiles.swap(0, 1));
    assert!(matches!(check(&fx, &env), Err(VerifyError::ProfileOrder { .. })));
}

#[test]
fn rejects_a_file_of_an_unlisted_part() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| {
        s.predicate.profiles.pop();
    });
    assert!(matches!(check(&fx, &env), Err(VerifyError::PartNotListed { .. })));
}

#[test]
fn rejects_a_part_size_that_its_files_do_not_make() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.profiles[0].size += 512);
    assert!(matches!(check(&fx, &env), Err(VerifyError::PartSize { .. })));
}

#[test]
fn rejects_unknown_and_cyclic_dependencies() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.profiles[0].depends_on = vec!["ClusterProfile.ghost".into()]);
    assert!(matches!(check(&fx, &env), Err(VerifyError::UnknownDependency { .. })));
    let env = resigned(&fx, |s| s.predicate.profiles[0].depends_on = vec!["Profile.fleet.monitoring".into()]);
    assert!(matches!(check(&fx, &env), Err(VerifyError::DependencyCycle { .. })));
}

#[test]
fn rejects_a_subject_digest_that_does_not_match_the_files() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.files[0].sha256 = Digest::of(b"other").hex());
    assert!(matches!(check(&fx, &env), Err(VerifyError::SubjectDigest { .. })));
}

#[test]
fn rejects_zero_or_huge_versions_and_bad_times() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.version = 0);
    assert_eq!(check(&fx, &env).unwrap_err(), VerifyError::OutOfRange { field: "version", value: 0 });
    let env = resigned(&fx, |s| s.predicate.version = 1 << 53);
    assert!(matches!(check(&fx, &env), Err(VerifyError::OutOfRange { field: "version", .. })));
    let env = resigned(&fx, |s| s.predicate.expires = s.predicate.issued_at);
    assert!(matches!(check(&fx, &env), Err(VerifyError::ExpiresBeforeIssued { .. })));
    let env = resigned(&fx, |s| s.predicate.settings.watch_namespaces = Some(vec!["Bad_NS".into()]));
    assert!(matches!(check(&fx, &env), Err(VerifyError::BadField(_))));
}

#[test]
fn rejects_a_keyring_version_other_than_the_verifying_one() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| s.predicate.keyring_version = 7);
    assert_eq!(check(&fx, &env).unwrap_err(), VerifyError::KeyringVersion { signed: 7, actual: 1 });
}

// spec 8.7 - 8.10

#[test]
fn rejects_a_bundle_signed_for_another_cluster() {
    let fx = Fixture::new(1);
    let env = resigned(&fx, |s| {
        s.predicate.cluster = "fleet/edge-2".into();
        s.subject[0].name = "fleet/edge-2".into();
    });
    let wrong = |field| VerifyError::WrongCluster { field, expected: "fleet/edge-1".into(), actual: "fleet/edge-2".into() };
    assert_eq!(check(&fx, &env).unwrap_err(), wrong("subject[0].name"));
    let predicate_only = resigned(&fx, |s| s.predicate.cluster = "fleet/edge-2".into());
    assert_eq!(check(&fx, &predicate_only).unwrap_err(), wrong("predicate.cluster"));
    let subject_only = resigned(&fx, |s| s.subject[0].name = "fleet/edge-2".into());
    let err = check(&fx, &subject_only).unwrap_err();
    assert_eq!(err, wrong("subject[0].name"));
    assert_eq!(err.to_string(), "bundle is for cluster fleet/edge-2, this is fleet/edge-1 (subject[0].name)");
}

#[test]
fn rejects_rollback_and_reused_versions() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    let floor = Floor { applied: Some((4, signed.digest())), highest_issued_at: None, keyring_version: None };
    let err = verify_envelope(&signed.envelope, None, &fx.expect(&floor), &L).unwrap_err();
    assert_eq!(err, VerifyError::Rollback { version: 3, floor: 4 });
    let other = Digest::of(b"other");
    let floor = Floor { applied: Some((3, other)), highest_issued_at: None, keyring_version: None };
    let err = verify_envelope(&signed.envelope, None, &fx.expect(&floor), &L).unwrap_err();
    assert_eq!(err, VerifyError::VersionReused { version: 3, applied: other, actual: signed.digest() });
    let floor = Floor { applied: Some((3, signed.digest())), highest_issued_at: None, keyring_version: None };
    assert!(verify_envelope(&signed.envelope, None, &fx.expect(&floor), &L).unwrap().already_applied());
}

#[test]
fn rejects_a_bundle_issued_in_the_future() {
    let fx = Fixture::new(1);
    let floor = Floor::default();
    let mut expect = fx.expect(&floor);
    expect.now = Fixture::now() - SignedDuration::from_secs(301);
    assert!(matches!(verify_envelope(&good(&fx).envelope, None, &expect, &L), Err(VerifyError::FromTheFuture { .. })));
    expect.now = Fixture::now() - SignedDuration::from_secs(299);
    assert!(verify_envelope(&good(&fx).envelope, None, &expect, &L).is_ok(), "within the skew");
}

#[test]
fn bounds_how_far_one_signed_bundle_pushes_versions_and_time() {
    let fx = Fixture::new(1);
    let days = |n: i64| SignedDuration::from_hours(24 * n);
    // A version far above the applied one would leave no room for the next ones.
    let floor = Floor { applied: Some((3, Digest::of(b"applied"))), highest_issued_at: None, keyring_version: None };
    let leap = fx.signed(3 + 1_000_001, Fixture::files());
    let err = verify_envelope(&leap.envelope, None, &fx.expect(&floor), &L).unwrap_err();
    assert_eq!(err, VerifyError::VersionLeap { version: 1_000_004, floor: 3, step: 1_000_000 });
    assert!(verify_envelope(&fx.signed(3 + 1_000_000, Fixture::files()).envelope, None, &fx.expect(&floor), &L).is_ok());

    // A validity over 90 days.
    let long = resigned(&fx, |s| s.predicate.expires = s.predicate.issued_at + days(90) + SignedDuration::from_secs(1));
    let err = check(&fx, &long).unwrap_err();
    assert!(matches!(err, VerifyError::ValidityTooLong { max_days: 90, .. }), "{err}");
    assert!(err.to_string().contains("longer than the 90 days a bundle may be valid"), "{err}");
    assert!(check(&fx, &resigned(&fx, |s| s.predicate.expires = s.predicate.issued_at + days(90))).is_ok());

    // With the clock known wrong, issuedAt may pass the newest accepted by one validity.
    let reset = |highest: Timestamp| Floor { applied: None, highest_issued_at: Some(highest), keyring_version: None };
    let far = reset(Fixture::now() - days(90) - SignedDuration::from_secs(1));
    let expect = airlock_bundle::Expectation { now: Timestamp::UNIX_EPOCH, ..fx.expect(&far) };
    let err = verify_envelope(&good(&fx).envelope, None, &expect, &L).unwrap_err();
    assert!(matches!(err, VerifyError::BeyondKnownTime { max_days: 90, .. }), "{err}");
    let near = reset(Fixture::now() - days(89));
    let expect = airlock_bundle::Expectation { now: Timestamp::UNIX_EPOCH, ..fx.expect(&near) };
    assert!(verify_envelope(&good(&fx).envelope, None, &expect, &L).is_ok());
}

#[test]
fn refuses_a_keyring_update_that_leaps_its_version() {
    let fx = Fixture::new(1);
    let update = |version: u64| {
        let next = Keyring::new(version, 1, vec![SigningKey::from_seed([7; 32]).public()], &L).unwrap();
        airlock_bundle::keyring::chain(&[next.sign_update(&fx.keys)])
    };
    let err = fx.keyring.follow_chain(&update(1 + 1_001), &L).unwrap_err();
    assert_eq!(err.to_string(), "keyring chain is malformed or over its limits: update to version 1002 is more than 1000 above version 1");
    assert_eq!(fx.keyring.follow_chain(&update(1 + 1_000), &L).unwrap().version(), 1_001);
}

#[test]
fn rejects_an_expired_bundle_even_with_the_clock_set_back() {
    let fx = Fixture::new(1);
    let floor = Floor::default();
    let mut expect = fx.expect(&floor);
    expect.now = Fixture::now() + SignedDuration::from_hours(31 * 24);
    assert!(matches!(verify_envelope(&good(&fx).envelope, None, &expect, &L), Err(VerifyError::Expired { .. })));
    // A clock reset to 1970 does not help: the reference time is the highest issuedAt seen.
    let later = Fixture::now() + SignedDuration::from_hours(31 * 24);
    let floor = Floor { applied: None, highest_issued_at: Some(later), keyring_version: None };
    let mut expect = fx.expect(&floor);
    expect.now = Timestamp::UNIX_EPOCH;
    assert!(matches!(verify_envelope(&good(&fx).envelope, None, &expect, &L), Err(VerifyError::Expired { .. })));
}

#[test]
fn a_keyring_the_root_rotated_starts_the_floor_afresh() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    // A stolen key pushed the floor far up and the newest issuedAt past this bundle's
    // expiry, under keyring version 1: the floor holds while that keyring does.
    let lifted = Fixture::now() + SignedDuration::from_hours(100 * 24);
    let floor =
        |keyring| Floor { applied: Some((1_000_003, Digest::of(b"stolen"))), highest_issued_at: Some(lifted), keyring_version: keyring };
    for held in [Some(1), None] {
        let err = verify_envelope(&signed.envelope, None, &fx.expect(&floor(held)), &L).unwrap_err();
        assert_eq!(err, VerifyError::Rollback { version: 3, floor: 1_000_003 });
    }
    // Verified by a keyring version the root signed since, the same bundle starts afresh:
    // no rollback, and expiry judged by the clock, not by the pushed issuedAt.
    let renewed = floor(Some(0));
    let verified = verify_envelope(&signed.envelope, None, &fx.expect(&renewed), &L).unwrap();
    assert!(!verified.already_applied());
    // The pushed issuedAt still bounds a clock known wrong.
    let expect = airlock_bundle::Expectation { now: Timestamp::UNIX_EPOCH, ..fx.expect(&renewed) };
    assert!(verify_envelope(&signed.envelope, None, &expect, &L).is_ok());
}
