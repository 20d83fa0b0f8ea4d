//! Unit tests of ingest against `--to-dir` files: reports signed as the puller signs them
//! (spec 14), checked with the key registered on the SveltosCluster.

use std::path::Path;

use airlock_bundle::SigningKey;
use airlock_bundle::envelope::{self, REPORT_PAYLOAD_TYPE};
use airlock_bundle::vocabulary::*;
use airlock_bundle::{ClusterId, Digest, Limits};
use serde_json::{Value, json};

use super::input::{self, InputError, Received};
use super::report::ReportError;
use super::target::{Target, file_of};
use super::*;
use crate::yaml;

const T1: &str = "2026-03-01T10:00:00.250Z";
const T2: &str = "2026-03-01T10:05:00Z";

pub(super) fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed([seed; 32])
}

pub(super) fn id(cluster: &str) -> ClusterId {
    cluster.parse().unwrap()
}

/// A report as the puller writes it, with the fields ingest does not read as well.
pub(super) fn report(cluster: &str, finished: &str, result: &str) -> Value {
    json!({
        "apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": cluster,
        "startedAt": "2026-03-01T09:59:58Z", "finishedAt": finished, "durationMs": 2000, "result": result,
        "appliedVersion": 3, "appliedDigest": Digest::of(b"bundle v3"),
        "bundle": {"version": 3, "digest": Digest::of(b"bundle v3"), "issuedAt": "2026-03-01T09:00:00Z",
                   "expires": "2026-03-31T09:00:00Z", "keyringVersion": 1, "signers": ["ab"]},
        "kubernetesVersion": "v1.20.2", "objects": [], "drift": {"found": 2, "corrected": 1}, "refused": [],
        "error": null, "apiRequests": 9,
    })
}

pub(super) fn signed(report: &Value, key: &SigningKey) -> Vec<u8> {
    envelope::sign(REPORT_PAYLOAD_TYPE, &serde_json::to_vec(report).unwrap(), std::slice::from_ref(key))
}

pub(super) fn received(items: &[Vec<u8>]) -> Vec<Received> {
    items.iter().enumerate().map(|(i, b)| Received { origin: format!("report-{i}.json"), bytes: b.clone(), place: None }).collect()
}

/// A `--to-dir` directory holding `fleet/a` registered with key 1 and `fleet/nokey` without one.
pub(super) fn clusters() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, annotations) in [
        ("a", json!({REPORT_KEY_ANNOTATION: key(1).public().to_openssh("fleet/a")})),
        ("nokey", json!({})),
        ("badkey", json!({REPORT_KEY_ANNOTATION: "ssh-ed25519 AAAA"})),
    ] {
        let object = json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": name, "namespace": "fleet", "labels": {"site": "north"}, "annotations": annotations},
            "spec": {"pullMode": true}});
        std::fs::write(file_of(dir.path(), &id(&format!("fleet/{name}"))), yaml::emit(&[object])).unwrap();
    }
    dir
}

pub(super) fn cluster_file(dir: &Path, cluster: &str) -> Value {
    yaml::parse_documents(&std::fs::read_to_string(file_of(dir, &id(cluster))).unwrap()).unwrap().remove(0)
}

pub(super) async fn run(dir: &Path, items: &[Vec<u8>]) -> Vec<Outcome> {
    let rows = ingest(received(items), &Target::dir(dir), &Limits::SPEC).await;
    rows.into_iter().map(|r| r.outcome).collect()
}

#[tokio::test]
async fn ingests_a_good_report() {
    let dir = clusters();
    assert_eq!(run(dir.path(), &[signed(&report("fleet/a", T1, "applied"), &key(1))]).await, [Outcome::Ingested]);
    let object = cluster_file(dir.path(), "fleet/a");
    assert_eq!(object["status"]["ready"], true);
    assert_eq!(object["status"]["version"], "v1.20.2");
    assert_eq!(object["status"]["agentLastReportTime"], "2026-03-01T10:00:00Z");
    assert!(object["status"].get("conditions").is_none(), "Sveltos's CRD has no status conditions");
    let annotations = &object["metadata"]["annotations"];
    assert_eq!(annotations[RESULT_ANNOTATION], "Applied");
    assert!(annotations[RESULT_MESSAGE_ANNOTATION].as_str().unwrap().starts_with("applied bundle v3 (sha256:"), "{annotations}");
    assert_eq!(annotations[APPLIED_VERSION_ANNOTATION], "3");
    assert_eq!(annotations[REPORT_TIME_ANNOTATION], "2026-03-01T10:00:00.25Z", "full precision");
    assert_eq!(annotations[DRIFT_CORRECTED_ANNOTATION], "1");
    assert!(annotations.get(LAST_ERROR_ANNOTATION).is_none());
    assert_eq!(object["metadata"]["labels"], json!({"site": "north"}), "the rest of the object stays");
    assert_eq!(annotations[REPORT_KEY_ANNOTATION], key(1).public().to_openssh("fleet/a"));
}

#[tokio::test]
async fn rejects_a_bad_signature() {
    let dir = clusters();
    let before = std::fs::read(file_of(dir.path(), &id("fleet/a"))).unwrap();
    // The signature of one report under the payload of another.
    let good: Value = serde_json::from_slice(&signed(&report("fleet/a", T1, "applied"), &key(1))).unwrap();
    let mut forged: Value = serde_json::from_slice(&signed(&report("fleet/a", T2, "applied"), &key(1))).unwrap();
    forged["signatures"] = good["signatures"].clone();
    let outcomes = run(dir.path(), &[serde_json::to_vec(&forged).unwrap()]).await;
    assert_eq!(outcomes, [Outcome::Rejected(ReportError::Signature(id("fleet/a")))]);
    assert_eq!(std::fs::read(file_of(dir.path(), &id("fleet/a"))).unwrap(), before, "nothing changed");
}

#[tokio::test]
async fn rejects_a_report_signed_with_another_clusters_key() {
    let dir = clusters();
    let outcomes = run(dir.path(), &[signed(&report("fleet/a", T1, "applied"), &key(2))]).await;
    assert_eq!(outcomes, [Outcome::Rejected(ReportError::Signature(id("fleet/a")))]);
    assert!(cluster_file(dir.path(), "fleet/a").get("status").is_none());
}

#[tokio::test]
async fn ignores_a_report_older_than_the_ingested_one() {
    let dir = clusters();
    assert_eq!(run(dir.path(), &[signed(&report("fleet/a", T2, "applied"), &key(1))]).await, [Outcome::Ingested]);
    let after_new = cluster_file(dir.path(), "fleet/a");
    let older = signed(&report("fleet/a", T1, "error"), &key(1));
    let ingested: jiff::Timestamp = T2.parse().unwrap();
    assert_eq!(run(dir.path(), &[older]).await, [Outcome::Older { ingested }]);
    let same = signed(&report("fleet/a", T2, "applied"), &key(1));
    assert_eq!(run(dir.path(), &[same]).await, [Outcome::AlreadyIngested]);
    assert_eq!(cluster_file(dir.path(), "fleet/a"), after_new);
}

#[tokio::test]
async fn the_newest_report_of_one_input_wins_and_bad_ones_do_not_stop_it() {
    let dir = clusters();
    let mut failed = report("fleet/a", T2, "error");
    failed["error"] = "apply ConfigMap apps/settings: forbidden".into();
    failed["kubernetesVersion"] = Value::Null;
    let items = [
        signed(&failed, &key(1)),
        signed(&report("fleet/a", T1, "applied"), &key(1)),
        signed(&report("fleet/a", "2026-03-02T00:00:00Z", "applied"), &key(3)),
    ];
    let outcomes = run(dir.path(), &items).await;
    assert_eq!(outcomes, [Outcome::Ingested, Outcome::Superseded, Outcome::Rejected(ReportError::Signature(id("fleet/a")))]);
    let object = cluster_file(dir.path(), "fleet/a");
    assert_eq!(object["status"]["ready"], true, "a failed run leaves the cluster ready, as Sveltos does");
    assert!(object["status"].get("failureMessage").is_none(), "the connection is fine: {object}");
    assert!(object["status"].get("version").is_none(), "no version was ever reported");
    let annotations = &object["metadata"]["annotations"];
    assert_eq!(annotations[RESULT_ANNOTATION], "Error");
    assert_eq!(
        annotations[RESULT_MESSAGE_ANNOTATION],
        format!(
            "sync failed: apply ConfigMap apps/settings: forbidden; the cluster runs bundle v3 ({})",
            crate::cmd::table::short(&Digest::of(b"bundle v3"))
        )
    );
    assert_eq!(object["metadata"]["annotations"][LAST_ERROR_ANNOTATION], "apply ConfigMap apps/settings: forbidden");
}

#[tokio::test]
async fn rejects_unsigned_unknown_and_keyless_naming_the_cluster() {
    let dir = clusters();
    let plain = serde_json::to_vec(&report("fleet/a", T1, "applied")).unwrap();
    let mut wrong_kind = report("fleet/a", T1, "applied");
    wrong_kind["kind"] = "Other".into();
    let mut bad_result = report("fleet/a", T1, "applied");
    bad_result["result"] = "exploded".into();
    let mut wrong_type = report("fleet/a", T1, "applied");
    wrong_type["durationMs"] = "slow".into();
    let items = [
        plain,
        b"{\"payloadType\": 1}".to_vec(),
        signed(&report("fleet/ghost", T1, "applied"), &key(1)),
        signed(&report("fleet/nokey", T1, "applied"), &key(1)),
        signed(&report("fleet/badkey", T1, "applied"), &key(1)),
        signed(&wrong_kind, &key(1)),
        signed(&json!({"cluster": "Fleet/A"}), &key(1)),
        signed(&bad_result, &key(1)),
        signed(&wrong_type, &key(1)),
    ];
    let outcomes = run(dir.path(), &items).await;
    assert_eq!(outcomes[0], Outcome::Rejected(ReportError::Unsigned));
    assert!(matches!(&outcomes[1], Outcome::Rejected(ReportError::Envelope(_))), "{:?}", outcomes[1]);
    assert_eq!(outcomes[2], Outcome::Rejected(ReportError::UnknownCluster(id("fleet/ghost"))));
    assert_eq!(outcomes[3], Outcome::Rejected(ReportError::NoKey(id("fleet/nokey"))));
    assert!(matches!(&outcomes[4], Outcome::Rejected(ReportError::BadKey { cluster, .. }) if cluster == &id("fleet/badkey")));
    for (i, want) in [(5, "kind \"Other\""), (6, "Fleet/A"), (7, "exploded"), (8, "\"slow\", expected u64")] {
        assert!(matches!(&outcomes[i], Outcome::Rejected(ReportError::Payload(m)) if m.contains(want)), "{i}: {:?}", outcomes[i]);
    }
    assert!(cluster_file(dir.path(), "fleet/a").get("status").is_none(), "a rejected report writes nothing");
    let keyless = Outcome::Rejected(ReportError::NoKey(id("fleet/nokey")));
    assert_eq!(crate::cmd::ingest::exit_code(&rows_of(vec![Outcome::Ingested, keyless])), airlock_cli::exit::REJECTED);
}

fn rows_of(outcomes: Vec<Outcome>) -> Vec<Row> {
    outcomes.into_iter().map(|outcome| Row { origin: "r".into(), cluster: None, report: None, outcome }).collect()
}

#[test]
fn a_failed_write_outranks_a_rejection_in_the_exit_code() {
    let failed = Outcome::Failed(target::TargetError::File { path: "x".into(), message: "disk full".into() });
    let rejected = Outcome::Rejected(ReportError::Unsigned);
    assert_eq!(crate::cmd::ingest::exit_code(&rows_of(vec![rejected.clone(), failed])), airlock_cli::exit::ERROR);
    assert_eq!(crate::cmd::ingest::exit_code(&rows_of(vec![Outcome::Superseded, Outcome::AlreadyIngested])), airlock_cli::exit::OK);
}

#[test]
fn reads_reports_files_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    let one = signed(&report("fleet/a", T1, "applied"), &key(1));
    let file = dir.path().join("reports.json");
    let text = format!("[\n  {},\n{}]", String::from_utf8(one.clone()).unwrap(), String::from_utf8(one.clone()).unwrap());
    std::fs::write(&file, text).unwrap();
    let got = input::read(file.to_str().unwrap(), &Limits::SPEC).unwrap();
    assert_eq!(got.len(), 2);
    assert!(got[1].origin.ends_with("reports.json[1]") && got[1].bytes == one, "exact bytes: {:?}", got[1].origin);

    let reports = dir.path().join("reports");
    std::fs::create_dir(&reports).unwrap();
    std::fs::write(reports.join("report-fleet.a-2026-03-01T10:00:00.250Z.json"), &one).unwrap();
    std::fs::write(reports.join("notes.json"), "{}").unwrap();
    std::fs::write(reports.join(".report-x.json.tmp"), "{").unwrap();
    let got = input::read(reports.to_str().unwrap(), &Limits::SPEC).unwrap();
    assert_eq!(got.len(), 1);
    assert!(got[0].origin.ends_with("report-fleet.a-2026-03-01T10:00:00.250Z.json") && got[0].bytes == one);

    std::fs::write(&file, "{\"not\": \"an array\"}").unwrap();
    assert!(
        matches!(input::read(file.to_str().unwrap(), &Limits::SPEC), Err(InputError::NotReports { path, .. }) if path.ends_with("reports.json"))
    );
    assert!(input::is_store("oci://registry.example/reports") && input::is_store("git+http://h/r.git"));
    assert!(!input::is_store(dir.path().to_str().unwrap()));
    assert!(matches!(input::read("/nonexistent/reports.json", &Limits::SPEC), Err(InputError::Io { .. })));
}

#[tokio::test]
async fn rejects_an_oversized_report_file() {
    let dir = tempfile::tempdir().unwrap();
    let small = Limits { envelope_bytes: 64, ..Limits::SPEC };
    std::fs::write(dir.path().join("report-fleet.a-1.json"), signed(&report("fleet/a", T1, "applied"), &key(1))).unwrap();
    let got = input::read(dir.path().to_str().unwrap(), &small).unwrap();
    assert_eq!(got[0].bytes.len(), 65, "read stops one byte past the limit");
    let registered = clusters();
    let rows = ingest(got, &Target::dir(registered.path()), &small).await;
    assert!(matches!(&rows[0].outcome, Outcome::Rejected(ReportError::Envelope(envelope::EnvelopeError::TooLarge { limit: 64 }))));
}
