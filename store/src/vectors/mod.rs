//! The test vectors of spec section 13, computed. `store/examples/make-vectors.rs` writes them
//! to `testdata/vectors/`; `tests/vectors.rs` checks the files still equal this.

mod rotation;

use jiff::{SignedDuration, Timestamp};

use crate::meta::PublishMeta;
use crate::oci;
use airlock_bundle::age::Identity;
use airlock_bundle::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::limits::Limits;
use airlock_bundle::path::SEALED_SUFFIX;
use airlock_bundle::statement::Statement;
use airlock_bundle::testkit::{Fixture, ISSUED_AT, LIFETIME_SECS};
use airlock_bundle::verify::{Floor, verify_envelope};

pub use rotation::ROTATION_REJECTS;

/// The fixture that signs the vectors: seed `[1; 32]`.
pub fn fixture() -> Fixture {
    Fixture::new(1)
}

/// Every vector file: (path under `testdata/vectors/`, bytes).
pub fn all() -> Vec<(String, Vec<u8>)> {
    let fx = fixture();
    let signed = fx.signed(1, Fixture::files());
    let artifact = oci::artifact(&signed, &PublishMeta::default(), &oci::GzipCache::default());
    let mut out = vec![
        ("key.pem".to_string(), fx.keys[0].to_pkcs8_pem().into_bytes()),
        ("key.pub.pem".to_string(), fx.keys[0].public().to_pem().into_bytes()),
        ("keyring.json".to_string(), fx.keyring.to_json()),
        ("payload.json".to_string(), signed.statement.to_json()),
        ("envelope.json".to_string(), signed.envelope.clone()),
        ("manifest.json".to_string(), artifact.manifest_bytes.clone()),
    ];
    for (path, bytes) in Fixture::files() {
        out.push((format!("input/{path}"), bytes));
    }
    let mut expected = String::new();
    expected.push_str(&format!("bundle {}\n", signed.digest()));
    for p in &signed.statement.predicate.profiles {
        expected.push_str(&format!("part {} {} {}\n", p.name, p.digest, p.size));
    }
    expected.push_str(&format!("manifest {}\n", artifact.manifest_digest));
    out.push(("expected.txt".to_string(), expected.into_bytes()));
    out.extend(sealed(&fx));
    out.extend(rotation::all());
    for (case, envelope) in rejects(&fx) {
        let error =
            verify_envelope(&envelope, None, &fx.expect(&Floor::default()), &Limits::SPEC).expect_err("every reject vector is rejected");
        out.push((format!("rejects/{case}/envelope.json"), envelope));
        out.push((format!("rejects/{case}/expected-error.txt"), format!("{error}\n").into_bytes()));
    }
    out
}

/// The identity of the sealed vectors' cluster: secret `[7; 32]`.
pub fn sealed_identity() -> Identity {
    Identity::from_secret([7; 32])
}

/// The fixture's files and one `Secret`, sealed to [`sealed_identity`] (spec 2.7): the
/// statement, the envelope, the identity file and the encrypted file as stored.
fn sealed(fx: &Fixture) -> Vec<(String, Vec<u8>)> {
    let identity = sealed_identity();
    let mut files = Fixture::files();
    files.push((SEALED_SECRET.to_string(), SECRET.to_vec()));
    let signed = fx.sealed(1, files, &[identity.recipient()]);
    let stored = format!("{SEALED_SECRET}{SEALED_SUFFIX}");
    let ciphertext = signed.bundle.files().find(|(path, _)| *path == stored).expect("the Secret is sealed").1.to_vec();
    vec![
        ("sealed/identity.txt".to_string(), format!("{}\n", identity.to_secret_string()).into_bytes()),
        ("sealed/payload.json".to_string(), signed.statement.to_json()),
        ("sealed/envelope.json".to_string(), signed.envelope.clone()),
        (format!("sealed/{stored}"), ciphertext),
    ]
}

/// The plaintext of the sealed vector, before the publisher's salt line.
const SECRET: &[u8] = b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: web\nstringData:\n  password: vector-password\n";
/// Its path in the bundle before sealing.
pub const SEALED_SECRET: &str = "ClusterProfile.web/Secret.web.db.yaml";

/// One tampered envelope per rejection that an envelope alone can show.
fn rejects(fx: &Fixture) -> Vec<(&'static str, Vec<u8>)> {
    let good = fx.signed(1, Fixture::files());
    let payload = String::from_utf8(good.statement.to_json()).expect("JSON is UTF-8");
    let sign_json = |json: &str| envelope::sign(IN_TOTO_PAYLOAD_TYPE, json.as_bytes(), &fx.keys);
    let resign = |edit: &dyn Fn(&mut Statement)| {
        let mut s = good.statement.clone();
        edit(&mut s);
        envelope::sign(IN_TOTO_PAYLOAD_TYPE, &s.to_json(), &fx.keys)
    };
    let mut tampered: envelope::Envelope = serde_json::from_slice(&good.envelope).expect("our envelope parses");
    tampered.payload = {
        use base64::Engine;
        let e = base64::engine::general_purpose::STANDARD;
        e.encode(payload.replacen("\"version\":1", "\"version\":2", 1))
    };
    let mut renamed: envelope::Envelope = serde_json::from_slice(&good.envelope).expect("our envelope parses");
    renamed.signatures[0].keyid = "0".repeat(64);
    vec![
        ("tampered-payload", serde_json::to_vec(&tampered).expect("serialises")),
        ("key-id-names-no-key", serde_json::to_vec(&renamed).expect("serialises")),
        ("unknown-key", Fixture::new(2).signed(1, Fixture::files()).envelope),
        ("duplicate-field", sign_json(&payload.replacen("\"version\":1", "\"version\":1,\"version\":9", 1))),
        (
            "wrong-cluster",
            resign(&|s| {
                s.predicate.cluster = "fleet/edge-2".into();
                s.subject[0].name = "fleet/edge-2".into();
            }),
        ),
        ("unsorted-files", resign(&|s| s.predicate.files.swap(0, 2))),
        ("subject-digest", resign(&|s| s.subject[0].digest.sha256 = "0".repeat(64))),
        (
            "expired",
            resign(&|s| {
                let now = Fixture::now();
                s.predicate.issued_at = now - SignedDuration::from_hours(40 * 24);
                s.predicate.expires = now - SignedDuration::from_hours(10 * 24);
            }),
        ),
        (
            "from-the-future",
            resign(&|s| {
                s.predicate.issued_at = Fixture::now() + SignedDuration::from_hours(1);
                s.predicate.expires = Timestamp::from_second(ISSUED_AT + 2 * LIFETIME_SECS).expect("valid");
            }),
        ),
    ]
}
