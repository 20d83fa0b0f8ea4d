//! The hostile cases, generated: each one writes its own store into the site's
//! directory and says how `airlock-puller sync` must refuse it. They are grouped by where
//! the flaw sits: the envelope, the signed release and the manifests here; the part's
//! bytes, the tar inside it and the store's own files in `damage.rs`. Every hostile bundle
//! claims the version after the baseline (unless it is about versions) with content that
//! differs from it, so a case the puller wrongly accepted would show in the snapshot.

use airlock_bundle::envelope::{self, KEYRING_PAYLOAD_TYPE};
use airlock_bundle::{ClusterId, Limits};
use airlock_bundle::{ClusterSettings, Keyring, Release, SignedBundle, SigningKey, keyring};
use airlock_e2e::hostile_site::{BASELINE, Site};
use airlock_store::StoreRef;
use airlock_store::oci::Artifact;
use jiff::SignedDuration;

use super::craft::*;
use super::damage;

/// The version hostile bundles claim.
pub const NEXT: u64 = BASELINE + 1;
pub const REJECTED: i32 = 3;
pub const ERROR: i32 = 1;
/// The one profile every hostile bundle has.
pub const PART: &str = "ClusterProfile.app";

/// A bundle file: path and bytes.
pub type File = (String, Vec<u8>);

/// A hostile store and how the puller must answer it.
pub struct Case {
    pub name: &'static str,
    pub source: String,
    /// Extra `sync` flags.
    pub args: Vec<String>,
    pub exit: i32,
    /// A stable substring of the error the puller prints.
    pub error: String,
}

pub async fn all(site: &Site) -> Vec<Case> {
    let mut cases = Vec::new();
    envelope_cases(site, &mut cases).await;
    release_cases(site, &mut cases).await;
    damage::content_cases(site, &mut cases).await;
    damage::manifest_cases(site, &mut cases).await;
    damage::tar_cases(site, &mut cases).await;
    manifest_cases(site, &mut cases).await;
    damage::store_cases(site, &mut cases).await;
    cases
}

/// A bundle the puller would apply: the version after the baseline, new values.
pub fn good(site: &Site) -> SignedBundle {
    site.signed(site.files(3, "hostile"), &site.release(NEXT))
}

pub async fn layout(site: &Site, name: &str, artifact: &Artifact) -> String {
    write_store(StoreRef::OciLayout(site.path(name)), &site.cluster, artifact).await
}

pub fn case(name: &'static str, source: String, exit: i32, error: impl Into<String>) -> Case {
    Case { name, source, args: Vec::new(), exit, error: error.into() }
}

fn threshold(valid: usize) -> String {
    format!("signatures: signed by {valid} distinct trusted key(s), threshold is 2")
}

/// Spec 8.1-8.5: the good bundle's content behind a hostile envelope.
async fn envelope_cases(site: &Site, out: &mut Vec<Case>) {
    let good = good(site);
    let keys = &site.fixture.keys;
    let signers = &keys[..2];
    let statement = good.statement.to_json();
    let text = String::from_utf8(statement.clone()).expect("JSON is UTF-8");
    let edited = |edit: &dyn Fn(&mut envelope::Envelope)| {
        let mut env = parse_envelope(&good.envelope);
        edit(&mut env);
        envelope_bytes(&env)
    };
    let alone = parse_envelope(&sign_payload(&statement, &keys[..1]));
    let twice = |keyid: String| {
        let mut env = alone.clone();
        env.signatures.push(envelope::EnvelopeSignature { keyid, ..alone.signatures[0].clone() });
        envelope_bytes(&env)
    };
    let strangers = [SigningKey::from_seed([7; 32]), SigningKey::from_seed([8; 32])];
    let crowd: Vec<SigningKey> = (10..75).map(|s| SigningKey::from_seed([s; 32])).collect();
    let version = format!("\"version\":{NEXT}");
    let cases: Vec<(&'static str, i32, String, Vec<u8>)> = vec![
        ("payload-byte-flipped", REJECTED, threshold(0), edited(&|e| e.payload = flip_base64(&e.payload, 40))),
        ("signature-byte-flipped", REJECTED, threshold(1), edited(&|e| e.signatures[0].sig = flip_base64(&e.signatures[0].sig, 10))),
        ("signed-by-unknown-keys", REJECTED, threshold(0), sign_payload(&statement, &strangers)),
        ("valid-signature-under-a-key-id-naming-no-key", REJECTED, threshold(1), edited(&|e| e.signatures[0].keyid = "0".repeat(64))),
        ("one-signature-short-of-threshold", REJECTED, threshold(1), sign_payload(&statement, &keys[..1])),
        ("same-key-under-two-key-ids", REJECTED, threshold(1), twice(keys[1].public().key_id())),
        ("same-signature-twice", REJECTED, threshold(1), twice(keys[0].public().key_id())),
        ("too-many-signatures", REJECTED, "signatures, over the limit of 64".into(), sign_payload(&statement, &crowd)),
        (
            "wrong-payload-type",
            REJECTED,
            "envelope payloadType is \"application/json\"".into(),
            envelope::sign("application/json", &statement, signers),
        ),
        ("envelope-not-json", REJECTED, "envelope is not valid DSSE JSON".into(), good.envelope[..good.envelope.len() / 2].to_vec()),
        ("payload-not-base64", REJECTED, "envelope payload is not standard padded base64".into(), edited(&|e| e.payload.insert(4, '*'))),
        (
            "payload-duplicate-json-field",
            REJECTED,
            "duplicate field `version`".into(),
            sign_payload(text.replacen(&version, &format!("\"version\":{BASELINE},{version}"), 1).as_bytes(), signers),
        ),
        (
            "payload-unknown-json-field",
            REJECTED,
            "unknown field `extra`".into(),
            sign_payload(text.replacen("\"predicate\":{", "\"predicate\":{\"extra\":true,", 1).as_bytes(), signers),
        ),
    ];
    for (name, exit, error, envelope) in cases {
        out.push(case(name, behind_envelope(site, name, &good, envelope).await, exit, error));
    }
}

/// Spec 8.1 and docs/operations.md section 6: an envelope one byte over the 4 MiB cap
/// (the good one padded with JSON whitespace) is a refusal that names the envelope.
pub async fn oversized_envelope(site: &Site) -> Case {
    let good = good(site);
    let mut oversized = good.envelope.clone();
    oversized.resize(Limits::SPEC.envelope_bytes as usize + 1, b' ');
    let name = "envelope-over-size-cap";
    let source = behind_envelope(site, name, &good, oversized).await;
    case(name, source, REJECTED, format!("envelope: envelope is larger than {} bytes", Limits::SPEC.envelope_bytes))
}

/// A layout holding `signed`'s content behind `envelope`.
async fn behind_envelope(site: &Site, name: &str, signed: &SignedBundle, envelope: Vec<u8>) -> String {
    let mut artifact = artifact(signed);
    replace_layer(&mut artifact, ENVELOPE_TITLE, envelope);
    layout(site, name, &artifact).await
}

/// Spec 8.3 and 8.6-8.10: validly signed bundles whose signed facts are wrong for this
/// puller.
async fn release_cases(site: &Site, out: &mut Vec<Case>) {
    let keys = &site.fixture.keys;
    let now = site.release(NEXT).issued_at;
    let hours = SignedDuration::from_hours;
    let other: ClusterId = format!("e2e/other-{}", site.cluster.name()).parse().expect("valid id");
    let released = |edit: &dyn Fn(&mut Release)| {
        let mut release = site.release(NEXT);
        edit(&mut release);
        site.signed(site.files(3, "hostile"), &release)
    };
    let new_keys = [SigningKey::from_seed([7; 32]), SigningKey::from_seed([8; 32])];
    let v2 = Keyring::new(2, 1, new_keys.iter().map(SigningKey::public).collect(), &Limits::SPEC).expect("keyring");
    let rotated = |update: Vec<u8>| {
        let mut release = site.release(NEXT);
        release.keyring_version = 2;
        site.signed_by(site.files(3, "hostile"), &release, &new_keys[..1], Some(keyring::chain(&[update])))
    };
    let one_key_twice = serde_json::json!({
        "apiVersion": "airlock.dev/v1", "kind": "Keyring", "version": 2, "threshold": 1,
        "keys": [new_keys[0].public().to_pem(), new_keys[0].public().to_openssh("the same key")],
    });
    let untrusted = "keyring chain: keyring update (version 2) is not trusted by keyring version 1";
    let cases: Vec<(&'static str, String, SignedBundle)> = vec![
        (
            "rollback-to-an-older-version",
            format!("rollback: version {} is older than the applied version {BASELINE}", BASELINE - 1),
            released(&|r| r.version = BASELINE - 1),
        ),
        ("same-version-other-content", format!("version {BASELINE} was already applied with digest"), released(&|r| r.version = BASELINE)),
        (
            "expired",
            "bundle expired at".into(),
            released(&|r| {
                r.issued_at = now - hours(2);
                r.expires = now - hours(1);
            }),
        ),
        (
            "issued-far-in-the-future",
            "is in the future".into(),
            released(&|r| {
                r.issued_at = now + hours(24);
                r.expires = now + hours(48);
            }),
        ),
        ("expires-before-issued", "is not after issuedAt".into(), released(&|r| r.expires = r.issued_at - hours(1))),
        (
            "valid-for-longer-than-90-days",
            "longer than the 90 days a bundle may be valid".into(),
            released(&|r| r.expires = r.issued_at + hours(91 * 24)),
        ),
        (
            "version-leaps-past-the-bound",
            format!("version {} is more than 1000000 above the applied version {BASELINE}", BASELINE + 1_000_001),
            released(&|r| r.version = BASELINE + 1_000_001),
        ),
        ("signed-for-another-cluster", format!("bundle is for cluster {other}"), released(&|r| r.cluster = other.clone())),
        (
            "keyring-version-not-the-verifying-one",
            "bundle is signed for keyring version 2, verified with version 1".into(),
            released(&|r| r.keyring_version = 2),
        ),
        (
            "subject-digest-not-the-file-list",
            "payload: subject digest".into(),
            resigned(&released(&|_| {}), &keys[..2], |s| s.subject[0].digest.sha256 = "0".repeat(64)),
        ),
        (
            "keyring-update-signed-by-too-few-keys",
            format!("{untrusted}: {}", threshold(1).trim_start_matches("signatures: ")),
            rotated(v2.sign_update(&keys[..1])),
        ),
        (
            "keyring-update-signed-by-its-own-keys",
            format!("{untrusted}: {}", threshold(0).trim_start_matches("signatures: ")),
            rotated(v2.sign_update(&new_keys)),
        ),
        (
            "keyring-update-leaps-its-version",
            "update to version 1002 is more than 1000 above version 1".into(),
            rotated(Keyring::new(1_002, 1, v2.keys().to_vec(), &Limits::SPEC).expect("keyring").sign_update(&keys[..2])),
        ),
        (
            "keyring-update-lists-a-key-twice",
            "keyring lists online key".into(),
            rotated(envelope::sign(KEYRING_PAYLOAD_TYPE, &one_key_twice.to_string().into_bytes(), &keys[..2])),
        ),
    ];
    for (name, error, signed) in cases {
        out.push(case(name, layout(site, name, &artifact(&signed)).await, REJECTED, error));
    }
}

/// Spec 2.5 and the puller's policy: validly signed and verified bundles whose manifests
/// must not be applied, not even in part.
async fn manifest_cases(site: &Site, out: &mut Vec<Case>) {
    let ns = &site.app_ns;
    let outside = site.outside_ns();
    let with = |name: &str, yaml: String| {
        let mut files = site.files(3, "hostile");
        files.push((format!("{PART}/{name}.yaml"), yaml.into_bytes()));
        files
    };
    let config_map =
        |name: &str, extra: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n{extra}");
    let bomb = config_map(
        "bomb",
        "data:\n  a: &a [x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n  \
         c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
    );
    let deep = config_map("deep", &format!("data: {}1{}\n", "[".repeat(70), "]".repeat(70)));
    let cases: Vec<(&'static str, i32, &str, String)> = vec![
        ("yaml-alias-bomb", REJECTED, "budget breached: Anchors", bomb),
        ("yaml-depth-bomb", REJECTED, "budget breached: Depth", deep),
        ("yaml-duplicate-key", REJECTED, "duplicate mapping key: data", config_map("dup", "data: {}\ndata: {}\n")),
        (
            "manifest-without-kind",
            REJECTED,
            "document 1 (line 1): no kind",
            format!("apiVersion: v1\nmetadata:\n  name: nokind\n  namespace: {ns}\n"),
        ),
        (
            "unknown-api-version",
            ERROR,
            "kinds the API server does not serve and no CRD in the bundle defines",
            format!("apiVersion: example.invalid/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: {ns}\n"),
        ),
    ];
    for (name, exit, error, yaml) in cases {
        let source = layout(site, name, &artifact(&site.signed(with(name, yaml), &site.release(NEXT)))).await;
        out.push(case(name, source, exit, error));
    }

    // The namespace is outside the list given by flag, then outside the list the bundle
    // itself carries (signed, spec 5.2 `watchNamespaces`).
    let outside_list = format!("outside watch-namespaces: ConfigMap {outside}/stray");
    let stray = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n  namespace: {outside}\n");
    let name = "outside-watch-namespaces";
    let source = layout(site, name, &artifact(&site.signed(with(name, stray.clone()), &site.release(NEXT)))).await;
    let args = vec![format!("--watch-namespaces={ns}"), "--namespace-policy=reject".to_string()];
    out.push(Case { args, ..case(name, source, REJECTED, outside_list.clone()) });
    let name = "outside-signed-watch-namespaces";
    let narrowed = Release {
        settings: ClusterSettings { watch_namespaces: Some(vec![ns.clone()]), ..ClusterSettings::default() },
        ..site.release(NEXT)
    };
    let source = layout(site, name, &artifact(&site.signed(with(name, stray), &narrowed))).await;
    out.push(case(name, source, REJECTED, outside_list));
}
