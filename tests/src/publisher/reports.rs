//! Reports as a puller signs them, and the report key `register cluster` hands out: what
//! the tests of `ingest` and of what it feeds (a rollout's window) bring back across the gap.

use airlock_bundle::SigningKey;
use airlock_bundle::envelope;
use airlock_bundle::envelope::REPORT_PAYLOAD_TYPE;
use base64::Engine;
use serde_json::{Value, json};

/// A report of `cluster` as the puller writes it (spec 14.3), saying it runs bundle
/// `applied`, signed with `key`.
pub fn signed_report(cluster: &str, finished: &str, result: &str, kubernetes: &str, applied: u64, key: &SigningKey) -> Vec<u8> {
    sign_report(&report(cluster, finished, result, kubernetes, applied), key)
}

/// The report `signed_report` signs, for a test to add its per-object entries to.
pub fn report(cluster: &str, finished: &str, result: &str, kubernetes: &str, applied: u64) -> Value {
    json!({
        "apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": cluster,
        "startedAt": finished, "finishedAt": finished, "durationMs": 1500, "result": result,
        "appliedVersion": applied, "appliedDigest": format!("sha256:{}", "ab".repeat(32)),
        "bundle": {"version": applied, "digest": format!("sha256:{}", "ab".repeat(32)), "issuedAt": "2026-03-01T09:00:00Z",
                   "expires": "2026-04-01T09:00:00Z", "keyringVersion": 1, "signers": []},
        "kubernetesVersion": kubernetes, "objects": [], "drift": {"found": 1, "corrected": 1}, "refused": [],
        "error": if result == "error" { Value::from("apiserver unreachable") } else { Value::Null }, "apiRequests": 12,
    })
}

/// `report` in its envelope, signed with the cluster's report key (spec 14.2).
pub fn sign_report(report: &Value, key: &SigningKey) -> Vec<u8> {
    envelope::sign(REPORT_PAYLOAD_TYPE, &serde_json::to_vec(report).expect("JSON"), std::slice::from_ref(key))
}

/// The report key `register cluster` put into its YAML.
pub fn report_key_of(yaml: &[u8]) -> SigningKey {
    let docs: Vec<Value> = serde_saphyr::from_multiple(std::str::from_utf8(yaml).expect("UTF-8 YAML")).expect("YAML");
    let secret = docs.iter().find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == "airlock-report-key").expect("report key Secret");
    let pem = base64::engine::general_purpose::STANDARD.decode(secret["data"]["report.key"].as_str().expect("data")).expect("base64");
    SigningKey::from_pkcs8_pem(std::str::from_utf8(&pem).expect("PEM")).expect("PKCS#8 key")
}

/// Registers `cluster` in pull mode on the management apiserver, trusting `keyring`, and
/// writes the report key registration makes to `dir/report.key`; returns that file and
/// `dir/reports`, created empty, for the puller's report files.
pub fn register_reporting(
    cluster: &airlock_bundle::ClusterId,
    keyring: &str,
    dir: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let mgmt = crate::service_env("AIRLOCK_KUBECONFIG_MANAGEMENT");
    let (ns, name) = (cluster.namespace(), cluster.name());
    let args = ["register", "cluster", "--namespace", ns, "--cluster", name, "--pullmode", "--source", "oci+http://127.0.0.1:1/x"];
    let out = super::run(&[&args[..], &["--keyring", keyring, "--kubeconfig", &mgmt]].concat());
    assert!(out.status.success(), "register: {}", String::from_utf8_lossy(&out.stderr));
    let key_file = dir.join("report.key");
    std::fs::write(&key_file, report_key_of(&out.stdout).to_pkcs8_pem()).expect("report key written");
    let reports = dir.join("reports");
    std::fs::create_dir(&reports).expect("reports directory");
    (key_file, reports)
}
