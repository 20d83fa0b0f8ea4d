//! Runs the by-hand recipes of `bundles-format.md` section 12, exactly as written there,
//! with OpenSSL, jq and age against the test vectors: the spec's instructions must keep working.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shell blocks of section 12, in order.
fn recipes() -> Vec<String> {
    let spec = std::fs::read_to_string(root().join("bundles-format.md")).unwrap();
    let section = spec.split("## 12. Verifying by hand").nth(1).unwrap().split("\n## ").next().unwrap();
    section.split("```sh\n").skip(1).map(|b| b.split("```").next().unwrap().to_string()).collect()
}

fn run(script: &str, dir: &Path) -> String {
    for tool in ["jq", "openssl", "sha256sum", "age"] {
        let found = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().unwrap();
        assert!(found.status.success(), "{tool} is missing: run hack/test.sh, which installs it");
    }
    let out = Command::new("bash").arg("-euo").arg("pipefail").arg("-c").arg(script).current_dir(dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "recipe failed:\n{script}\nstdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn openssl_and_jq_verify_the_test_vector_envelope() {
    let work = tempfile::tempdir().unwrap();
    let vectors = root().join("testdata/vectors");
    for f in ["envelope.json", "key.pub.pem"] {
        std::fs::copy(vectors.join(f), work.path().join(f)).unwrap();
    }
    let out = run(&recipes()[0], work.path());
    assert!(out.contains("Signature Verified Successfully"), "{out}");
    let envelope: serde_json::Value = serde_json::from_slice(&std::fs::read(vectors.join("envelope.json")).unwrap()).unwrap();
    let keyid = envelope["signatures"][0]["keyid"].as_str().unwrap();
    assert!(out.contains(&format!("{keyid}  -")), "key id by hand differs from the envelope's: {out}");
    assert!(out.contains("\"cluster\": \"fleet/edge-1\""), "{out}");
}

#[test]
fn openssl_rejects_a_tampered_envelope_by_hand() {
    let work = tempfile::tempdir().unwrap();
    let vectors = root().join("testdata/vectors");
    std::fs::copy(vectors.join("rejects/tampered-payload/envelope.json"), work.path().join("envelope.json")).unwrap();
    std::fs::copy(vectors.join("key.pub.pem"), work.path().join("key.pub.pem")).unwrap();
    let script = recipes()[0].clone();
    let out = Command::new("bash").arg("-euo").arg("pipefail").arg("-c").arg(&script).current_dir(work.path()).output().unwrap();
    assert!(!out.status.success(), "a tampered payload verified by hand");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signature Verification Failure"));
}

#[test]
fn coreutils_recompute_the_bundle_digest_of_a_cluster_directory() {
    let work = tempfile::tempdir().unwrap();
    let cluster = work.path().join("clusters/fleet/edge-1");
    copy_tree(&root().join("testdata/vectors/input"), &cluster);
    let script = recipes()[1].replace("clusters/<namespace>/<name>", "clusters/fleet/edge-1");
    let out = run(&script, work.path());
    let expected = std::fs::read_to_string(root().join("testdata/vectors/expected.txt")).unwrap();
    let bundle = expected.lines().next().unwrap().strip_prefix("bundle sha256:").unwrap();
    assert_eq!(out.split_whitespace().next(), Some(bundle));
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn openssl_reads_the_private_key_as_keygen_writes_it() {
    let vectors = root().join("testdata/vectors");
    let out = Command::new("openssl").args(["pkey", "-pubout", "-in"]).arg(vectors.join("key.pem")).output().unwrap();
    assert!(out.status.success(), "openssl pkey refused key.pem: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), std::fs::read_to_string(vectors.join("key.pub.pem")).unwrap());
}

#[test]
fn age_opens_the_encrypted_vector_to_its_signed_plaintext() {
    let work = tempfile::tempdir().unwrap();
    copy_tree(&root().join("testdata/vectors/sealed"), work.path());
    let out = run(&recipes()[2], work.path());
    let opened = std::fs::read(work.path().join("secret.yaml")).unwrap();
    assert!(opened.ends_with(b"password: vector-password\n"), "{}", String::from_utf8_lossy(&opened));
    let payload: serde_json::Value = serde_json::from_slice(&std::fs::read(work.path().join("payload.json")).unwrap()).unwrap();
    let entry = payload["predicate"]["files"].as_array().unwrap().iter().find(|f| f["plaintext"].is_object()).unwrap();
    let signed = entry["plaintext"]["sha256"].as_str().unwrap();
    assert_eq!(out.split_whitespace().next(), Some(signed), "sha256sum by hand differs from the signed plaintext digest: {out}");
    assert!(out.contains(&format!("\"sha256\": \"{signed}\"")), "jq shows the entry: {out}");
}
