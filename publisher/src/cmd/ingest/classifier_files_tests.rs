//! Classifier labels through `ingest --to-dir`: the documented Classifiers in the
//! directory, a report's evaluations labelling the cluster's file, the reports kept beside
//! it, and the profile selecting on the label at the directory's next publish.

use std::path::Path;

use airlock_bundle::report::Evaluated;
use serde_json::{Value, json};

use super::super::target::{Target, file_of};
use super::super::tests::{cluster_file, clusters, id, key, received, report, run, signed};
use super::*;
use crate::cmd::ingest::Outcome;
use crate::sources::select::profiles_for;

const T1: &str = "2026-03-01T10:00:00Z";
const T2: &str = "2026-03-01T10:05:00Z";

/// The `--to-dir` files of `tests` with Sveltos's documented Classifiers and the profile
/// that selects on the label one of them gives.
fn with_classifiers() -> tempfile::TempDir {
    let dir = clusters();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/sveltos-docs/classifier/management.yaml");
    std::fs::copy(example, dir.path().join("management.yaml")).unwrap();
    dir
}

/// A report of fleet/a signed by its key, whose `sveltos-service` evaluation found `matched`.
fn classified_report(dir: &Path, finished: &str, matched: bool) -> Vec<u8> {
    let found = DirClassifiers::read(dir).unwrap();
    let service = found.classifiers.iter().find(|c| c.name == "sveltos-service").expect("the documented Classifier");
    let mut report = report("fleet/a", finished, "applied");
    report["evaluations"] = serde_json::to_value([Evaluated::of(&service.evaluation, Ok((matched, String::new())))]).unwrap();
    signed(&report, &key(1))
}

fn report_file_of(dir: &Path, classifier: &str) -> Value {
    let text = std::fs::read_to_string(report_file(dir, classifier, &id("fleet/a"))).unwrap();
    yaml::parse_documents(&text).unwrap().remove(0)
}

fn selected(dir: &Path) -> Vec<String> {
    let inventory = DirSource::read(dir).unwrap().inventory();
    let cluster = inventory.clusters.iter().find(|c| c.id == id("fleet/a")).expect("fleet/a");
    profiles_for(cluster, &inventory).iter().map(|p| p.display()).collect()
}

#[tokio::test]
async fn a_match_labels_the_cluster_file_and_the_next_publish_selects_on_it() {
    let dir = with_classifiers();
    assert!(selected(dir.path()).is_empty(), "nothing selects fleet/a before it is classified");
    assert_eq!(run(dir.path(), &[classified_report(dir.path(), T1, true)]).await, [Outcome::Ingested]);
    let object = cluster_file(dir.path(), "fleet/a");
    assert_eq!(object["metadata"]["labels"], json!({"site": "north", "sveltos-service": "present", "k8s": "v1-20"}));
    assert_eq!(object["status"]["version"], "v1.20.2", "the status is written in the same file");
    let service = report_file_of(dir.path(), "sveltos-service");
    assert_eq!(service["metadata"]["name"], "sveltos--sveltos-service--a");
    assert_eq!(service["spec"]["match"], true);
    assert_eq!(service["status"]["managedLabels"], json!(["sveltos-service"]));
    assert_eq!(report_file_of(dir.path(), "k8s-1-20")["status"]["managedLabels"], json!(["k8s"]));
    assert_eq!(selected(dir.path()), ["ClusterProfile/docs-classified"]);
}

#[tokio::test]
async fn a_cluster_that_stops_matching_loses_only_the_label_it_was_given() {
    let dir = with_classifiers();
    assert_eq!(run(dir.path(), &[classified_report(dir.path(), T1, true)]).await, [Outcome::Ingested]);
    assert_eq!(run(dir.path(), &[classified_report(dir.path(), T2, false)]).await, [Outcome::Ingested]);
    let object = cluster_file(dir.path(), "fleet/a");
    assert_eq!(object["metadata"]["labels"], json!({"site": "north", "k8s": "v1-20"}));
    let service = report_file_of(dir.path(), "sveltos-service");
    assert_eq!(service["spec"]["match"], false);
    assert!(service["status"].get("managedLabels").is_none(), "{service}");
    assert!(selected(dir.path()).is_empty());
}

#[tokio::test]
async fn the_report_of_a_deleted_classifier_is_deleted() {
    let dir = with_classifiers();
    assert_eq!(run(dir.path(), &[classified_report(dir.path(), T1, true)]).await, [Outcome::Ingested]);
    let report = classified_report(dir.path(), T2, true);
    let kept: Vec<Value> = yaml::parse_documents(&std::fs::read_to_string(dir.path().join("management.yaml")).unwrap())
        .unwrap()
        .into_iter()
        .filter(|o| o["metadata"]["name"] != "k8s-1-20")
        .collect();
    std::fs::write(dir.path().join("management.yaml"), yaml::emit(&kept)).unwrap();
    assert_eq!(run(dir.path(), &[report]).await, [Outcome::Ingested]);
    assert!(!report_file(dir.path(), "k8s-1-20", &id("fleet/a")).exists());
    assert_eq!(cluster_file(dir.path(), "fleet/a")["metadata"]["labels"], json!({"site": "north", "sveltos-service": "present"}));
}

#[tokio::test]
async fn rejects_a_report_file_that_is_not_a_classifier_report_and_changes_nothing() {
    let dir = with_classifiers();
    let bad = report_file(dir.path(), "sveltos-service", &id("fleet/a"));
    std::fs::write(&bad, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n").unwrap();
    let before = std::fs::read(file_of(dir.path(), &id("fleet/a"))).unwrap();
    let outcomes = run(dir.path(), &[classified_report(dir.path(), T1, true)]).await;
    let message = "expected exactly one YAML document, a ClassifierReport".to_string();
    assert_eq!(outcomes, [Outcome::Failed(TargetError::File { path: bad.display().to_string(), message })]);
    assert_eq!(std::fs::read(file_of(dir.path(), &id("fleet/a"))).unwrap(), before);
}

#[tokio::test]
async fn reads_the_classifiers_from_the_directory_named_apart_from_the_clusters() {
    let management = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/sveltos-docs/classifier/management.yaml");
    std::fs::copy(example, management.path().join("management.yaml")).unwrap();
    let clusters = clusters();
    let report = classified_report(management.path(), T1, true);
    let target = Target::Dir { clusters: clusters.path().to_path_buf(), classifiers: management.path().to_path_buf() };
    let rows = crate::cmd::ingest::ingest(received(&[report]), &target, &airlock_bundle::Limits::SPEC).await;
    assert_eq!(rows[0].outcome, Outcome::Ingested);
    let labels = &cluster_file(clusters.path(), "fleet/a")["metadata"]["labels"];
    assert_eq!(labels, &json!({"site": "north", "sveltos-service": "present", "k8s": "v1-20"}));
    assert!(report_file(clusters.path(), "sveltos-service", &id("fleet/a")).exists(), "the reports are kept beside the clusters");
}

/// The report of `classified_report`, opened and verified as ingest does.
fn verified(dir: &Path, finished: &str, matched: bool) -> PullReport {
    let opened = super::super::report::open(&classified_report(dir, finished, matched), &airlock_bundle::Limits::SPEC).unwrap();
    let key = super::super::report::registered_key(&id("fleet/a"), &cluster_file(dir, "fleet/a")).unwrap();
    super::super::report::verify(&opened, &key).unwrap()
}

#[test]
fn the_kept_reports_follow_what_write_writes_and_deletes() {
    let dir = with_classifiers();
    let (found, mut kept) = (DirClassifiers::read(dir.path()).unwrap(), KeptFiles::read(dir.path()).unwrap());
    let object = cluster_file(dir.path(), "fleet/a");
    let (matched, written) = write(dir.path(), &found, &mut kept, &id("fleet/a"), &object, &verified(dir.path(), T1, true)).unwrap();
    assert_eq!((matched["metadata"]["labels"]["sveltos-service"].clone(), written), (json!("present"), 2));
    // Read once, before the first write: what it wrote must count as kept, or the label
    // it gave would never be taken back.
    let (unmatched, _) = write(dir.path(), &found, &mut kept, &id("fleet/a"), &matched, &verified(dir.path(), T2, false)).unwrap();
    assert_eq!(unmatched["metadata"]["labels"], json!({"site": "north", "k8s": "v1-20"}));
    assert_eq!(kept.of(&id("fleet/a")).unwrap().len(), 2);
    assert_eq!(KeptFiles::read(dir.path()).unwrap().of(&id("fleet/a")).unwrap(), kept.of(&id("fleet/a")).unwrap());
}

#[test]
fn a_broken_report_file_of_another_namespace_leaves_the_cluster_alone() {
    let dir = with_classifiers();
    std::fs::write(dir.path().join("other.sveltos--x--a.classifierreport.yaml"), "kind: ConfigMap\n").unwrap();
    std::fs::write(dir.path().join("fleet.not-a-report.yaml"), "not: [yaml").unwrap();
    let kept = KeptFiles::read(dir.path()).unwrap();
    assert_eq!(kept.of(&id("fleet/a")).unwrap(), Vec::<&Value>::new());
    let other: ClusterId = "other/a".parse().unwrap();
    assert!(matches!(kept.of(&other), Err(TargetError::File { .. })), "{:?}", kept.of(&other));
}
