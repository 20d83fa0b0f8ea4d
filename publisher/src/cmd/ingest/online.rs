//! Reports read from the store, with no file carried (spec 14.7): one [`pass`] over the
//! SveltosClusters that carry a report key reads each one's newest report unless it is the
//! one read last ([`Marks`], which `watch` keeps between passes), ingests what is new like
//! carried reports (each from its cluster's place, spec 14.4 step 5), and counts the
//! intervals missed by the clusters that sent nothing new (`liveness`, spec 14.9).
//!
//! `ingest --from STORE` makes one pass with no marks; `watch` one every `--reports-every`.
//! Reading is the store's (`airlock_store::ReportStore`), checking and writing `ingest`'s.

use std::collections::HashMap;

use airlock_bundle::vocabulary::REPORT_KEY_ANNOTATION;
use airlock_bundle::{ClusterId, Limits};
use airlock_store::{Latest, ReportStore, StoreError};
use futures::StreamExt;
use jiff::Timestamp;
use serde_json::Value;

use super::input::Received;
use super::status::Update;
use super::target::{Target, TargetError};
use super::{Outcome, Row, ingest, liveness};

/// Per cluster, the mark of the newest report read from the store.
#[derive(Debug, Clone, Default)]
pub struct Marks(HashMap<ClusterId, String>);

/// What one pass did.
#[derive(Debug, Default)]
pub struct Pass {
    /// The reports read, and their fate, as `ingest` tells it.
    pub rows: Vec<Row>,
    /// Clusters whose missed intervals changed, and whether that was written.
    pub missed: Vec<(ClusterId, Update, Result<(), TargetError>)>,
    /// Clusters whose reports the store could not hand over; judged next pass.
    pub unread: Vec<(ClusterId, StoreError)>,
}

/// One pass over `clusters` (SveltosClusters as JSON) at time `now`.
pub async fn pass(
    store: &dyn ReportStore,
    clusters: &[Value],
    marks: &mut Marks,
    target: &Target,
    now: Timestamp,
    limits: &Limits,
) -> Pass {
    let keyed: Vec<(ClusterId, &Value)> = clusters
        .iter()
        .filter(|o| o["metadata"]["annotations"][REPORT_KEY_ANNOTATION].is_string())
        .filter_map(|o| Some((ClusterId::new(o["metadata"]["namespace"].as_str()?, o["metadata"]["name"].as_str()?).ok()?, o)))
        .collect();
    let wanted: Vec<(ClusterId, Option<String>)> = keyed.iter().map(|(c, _)| (c.clone(), marks.0.get(c).cloned())).collect();
    let found: Vec<_> = store.latest_reports(&wanted, limits).collect().await;
    let mut pass = Pass::default();
    let (mut received, mut read) = (Vec::new(), Vec::new());
    // Clusters the store holds nothing new of. One it holds no report of at all may send
    // its reports elsewhere (another store, files): its silence here says nothing.
    let mut quiet = Vec::new();
    for ((cluster, object), found) in keyed.into_iter().zip(found) {
        match found {
            Ok(Latest::Report { envelope, mark }) => {
                let origin = format!("{} {cluster}", store.describe_reports());
                received.push(Received { origin, bytes: envelope, place: Some(cluster.clone()) });
                read.push((cluster, object, mark));
            }
            Ok(Latest::Unchanged) => quiet.push((cluster, object)),
            Ok(Latest::None) => {}
            Err(e) => pass.unread.push((cluster, e)),
        }
    }
    pass.rows = ingest(received, target, limits).await;
    for (row, (cluster, object, mark)) in pass.rows.iter().zip(read) {
        match row.outcome {
            // Read again next pass.
            Outcome::Failed(_) => continue,
            Outcome::AlreadyIngested | Outcome::Older { .. } => quiet.push((cluster.clone(), object)),
            _ => {}
        }
        marks.0.insert(cluster, mark);
    }
    for (cluster, object) in quiet {
        if let Some(update) = liveness::missed(object, now) {
            let written = target.write(&cluster, object, &update).await;
            pass.missed.push((cluster, update, written));
        }
    }
    pass
}

#[cfg(test)]
mod tests {
    use airlock_bundle::SigningKey;
    use airlock_bundle::envelope::{self, REPORT_PAYLOAD_TYPE};
    use airlock_store::{ReportPush, Store, StoreRef};
    use serde_json::json;

    use super::*;
    use crate::cmd::ingest::report::ReportError;
    use crate::cmd::ingest::target::file_of;
    use crate::yaml;
    use airlock_bundle::vocabulary::{REPORT_INTERVAL_ANNOTATION, REPORT_TIME_ANNOTATION};

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_seed([seed; 32])
    }

    /// `--to-dir` files of fleet/a and fleet/b, each with its own key, and a layout store.
    async fn setup() -> (tempfile::TempDir, Target, Box<dyn Store>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("clusters")).unwrap();
        for (name, seed) in [("a", 1), ("b", 2)] {
            let id: ClusterId = format!("fleet/{name}").parse().unwrap();
            let annotations =
                json!({REPORT_KEY_ANNOTATION: key(seed).public().to_openssh(&id.to_string()), REPORT_INTERVAL_ANNOTATION: "5m"});
            let object = json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                "metadata": {"name": name, "namespace": "fleet", "annotations": annotations}, "spec": {"pullMode": true}});
            std::fs::write(file_of(&dir.path().join("clusters"), &id), yaml::emit(&[object])).unwrap();
        }
        let store = airlock_store::open(&StoreRef::OciLayout(dir.path().join("layout")), &Default::default()).await.unwrap();
        let target = Target::dir(&dir.path().join("clusters"));
        (dir, target, store)
    }

    /// The signed report of `cluster`'s run that finished at `finished`.
    fn signed(cluster: &str, finished: &str, signer: u8) -> Vec<u8> {
        let report = json!({"apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": cluster, "finishedAt": finished,
            "result": "up-to-date", "appliedVersion": 2, "appliedDigest": null, "bundle": null, "kubernetesVersion": "v1.20.2", "error": null});
        envelope::sign(REPORT_PAYLOAD_TYPE, &serde_json::to_vec(&report).unwrap(), &[key(signer)])
    }

    async fn push(store: &dyn Store, cluster: &str, finished: &str, signer: u8) {
        let envelope = signed(cluster, finished, signer);
        let push =
            ReportPush { cluster: cluster.parse().unwrap(), finished_at: finished.parse().unwrap(), result: "up-to-date".into(), envelope };
        store.reports().unwrap().push_report(&push).await.unwrap();
    }

    async fn run(store: &dyn Store, target: &Target, marks: &mut Marks, now: &str) -> Pass {
        let clusters = target.list().await.unwrap();
        pass(store.reports().unwrap(), &clusters, marks, target, now.parse().unwrap(), &Limits::SPEC).await
    }

    #[tokio::test]
    async fn ingests_what_is_new_once_and_the_same_report_again_changes_nothing() {
        let (_dir, target, store) = setup().await;
        push(&*store, "fleet/a", "2026-03-01T10:00:00Z", 1).await;
        let mut marks = Marks::default();
        let first = run(&*store, &target, &mut marks, "2026-03-01T10:01:00Z").await;
        assert_eq!(first.rows.iter().map(|r| r.outcome.clone()).collect::<Vec<_>>(), [Outcome::Ingested]);
        let object = target.get(&"fleet/a".parse().unwrap()).await.unwrap().unwrap();
        assert_eq!((object["status"]["ready"].clone(), object["status"]["connectionStatus"].clone()), (json!(true), json!("Healthy")));
        assert_eq!(object["metadata"]["annotations"][REPORT_TIME_ANNOTATION], "2026-03-01T10:00:00Z");
        let again = run(&*store, &target, &mut marks, "2026-03-01T10:02:00Z").await;
        assert!(again.rows.is_empty() && again.missed.is_empty(), "marked: not read again");
        let unmarked = run(&*store, &target, &mut Marks::default(), "2026-03-01T10:02:00Z").await;
        assert_eq!(unmarked.rows[0].outcome, Outcome::AlreadyIngested, "read again, it changes nothing");
    }

    #[tokio::test]
    async fn an_older_report_after_a_newer_one_changes_nothing() {
        let (_dir, target, store) = setup().await;
        push(&*store, "fleet/a", "2026-03-01T10:05:00Z", 1).await;
        run(&*store, &target, &mut Marks::default(), "2026-03-01T10:06:00Z").await;
        push(&*store, "fleet/a", "2026-03-01T10:00:00Z", 1).await;
        let late = run(&*store, &target, &mut Marks::default(), "2026-03-01T10:07:00Z").await;
        assert!(matches!(late.rows[0].outcome, Outcome::Older { .. }), "{:?}", late.rows[0].outcome);
        let object = target.get(&"fleet/a".parse().unwrap()).await.unwrap().unwrap();
        assert_eq!(object["metadata"]["annotations"][REPORT_TIME_ANNOTATION], "2026-03-01T10:05:00Z");
    }

    /// The report carried as a file (`ingest FILE`), as `export-reports` brings it.
    async fn carry(target: &Target, cluster: &str, finished: &str) -> Outcome {
        let received = Received { origin: "carried.json".into(), bytes: signed(cluster, finished, 1), place: None };
        ingest(vec![received], target, &Limits::SPEC).await.remove(0).outcome
    }

    #[tokio::test]
    async fn a_carried_report_and_the_same_one_pushed_agree_whichever_comes_first() {
        let (_dir, target, store) = setup().await;
        let a: ClusterId = "fleet/a".parse().unwrap();
        assert_eq!(carry(&target, "fleet/a", "2026-03-01T10:00:00Z").await, Outcome::Ingested);
        let carried = target.get(&a).await.unwrap().unwrap();
        push(&*store, "fleet/a", "2026-03-01T10:00:00Z", 1).await;
        let pushed = run(&*store, &target, &mut Marks::default(), "2026-03-01T10:01:00Z").await;
        assert_eq!(pushed.rows[0].outcome, Outcome::AlreadyIngested);
        assert_eq!(target.get(&a).await.unwrap().unwrap(), carried, "the same report by the other path changes nothing");

        // Newer through the store, then an older one carried: the newer stands.
        push(&*store, "fleet/a", "2026-03-01T10:05:00Z", 1).await;
        assert_eq!(run(&*store, &target, &mut Marks::default(), "2026-03-01T10:06:00Z").await.rows[0].outcome, Outcome::Ingested);
        let newer = target.get(&a).await.unwrap().unwrap();
        let older = carry(&target, "fleet/a", "2026-03-01T10:02:00Z").await;
        assert_eq!(older, Outcome::Older { ingested: "2026-03-01T10:05:00Z".parse().unwrap() });
        assert_eq!(carry(&target, "fleet/a", "2026-03-01T10:05:00Z").await, Outcome::AlreadyIngested);
        assert_eq!(target.get(&a).await.unwrap().unwrap(), newer);
    }

    #[tokio::test]
    async fn a_report_in_another_clusters_place_is_refused_even_well_signed() {
        let (_dir, target, store) = setup().await;
        // b's own report, signed by b, written where a's reports go.
        let report = json!({"apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": "fleet/b", "finishedAt": "2026-03-01T10:00:00Z",
            "result": "up-to-date", "appliedVersion": 2, "appliedDigest": null, "bundle": null, "kubernetesVersion": null, "error": null});
        let envelope = envelope::sign(REPORT_PAYLOAD_TYPE, &serde_json::to_vec(&report).unwrap(), &[key(2)]);
        let push = ReportPush {
            cluster: "fleet/a".parse().unwrap(),
            finished_at: "2026-03-01T10:00:00Z".parse().unwrap(),
            result: "up-to-date".into(),
            envelope,
        };
        store.reports().unwrap().push_report(&push).await.unwrap();
        let pass = run(&*store, &target, &mut Marks::default(), "2026-03-01T10:01:00Z").await;
        let misplaced = ReportError::Misplaced { place: "fleet/a".parse().unwrap(), claimed: "fleet/b".parse().unwrap() };
        assert_eq!(pass.rows[0].outcome, Outcome::Rejected(misplaced));
        assert!(target.get(&"fleet/b".parse().unwrap()).await.unwrap().unwrap()["status"].is_null(), "b is untouched");
    }

    #[tokio::test]
    async fn a_cluster_gone_quiet_is_down_after_the_missed_intervals() {
        let (_dir, target, store) = setup().await;
        push(&*store, "fleet/a", "2026-03-01T10:00:00Z", 1).await;
        let mut marks = Marks::default();
        run(&*store, &target, &mut marks, "2026-03-01T10:01:00Z").await;
        let quiet = run(&*store, &target, &mut marks, "2026-03-01T10:20:00Z").await;
        let [(cluster, update, Ok(()))] = quiet.missed.as_slice() else { panic!("{:?}", quiet.missed) };
        assert_eq!((cluster.to_string(), update.status["connectionStatus"].clone()), ("fleet/a".to_string(), json!("Down")));
        let object = target.get(&"fleet/a".parse().unwrap()).await.unwrap().unwrap();
        assert_eq!((object["status"]["ready"].clone(), object["status"]["connectionFailures"].clone()), (json!(true), json!(3)));
        push(&*store, "fleet/a", "2026-03-01T10:21:00Z", 1).await;
        run(&*store, &target, &mut marks, "2026-03-01T10:21:30Z").await;
        let object = target.get(&"fleet/a".parse().unwrap()).await.unwrap().unwrap();
        assert_eq!((object["status"]["ready"].clone(), object["status"]["connectionStatus"].clone()), (json!(true), json!("Healthy")));
        assert!(object["status"].get("failureMessage").is_none(), "{object}");
        let b = target.get(&"fleet/b".parse().unwrap()).await.unwrap().unwrap();
        assert!(b["status"].is_null(), "a cluster with no report in this store is not judged by it: {b}");
    }

    #[tokio::test]
    async fn an_old_report_read_again_still_counts_the_missed_intervals() {
        let (_dir, target, store) = setup().await;
        push(&*store, "fleet/a", "2026-03-01T10:00:00Z", 1).await;
        run(&*store, &target, &mut Marks::default(), "2026-03-01T10:01:00Z").await;
        let later = run(&*store, &target, &mut Marks::default(), "2026-03-01T10:30:00Z").await;
        assert_eq!(later.rows[0].outcome, Outcome::AlreadyIngested);
        assert_eq!(later.missed.len(), 1, "{:?}", later.missed);
    }
}
