//! Reports read from the store, with no file carried (spec 14.7): one [`pass`] over the
//! SveltosClusters that carry a report key reads each one's newest report unless it is the
//! one read last ([`Marks`], which `watch` keeps between passes), ingests what is new like
//! carried reports (each from its cluster's place, spec 14.4 step 5), and counts the
//! intervals missed by the clusters that sent nothing new (`liveness`, spec 14.9).
//!
//! `ingest --from STORE` makes one pass with no marks; `watch` one every `--reports-every`.
//! Reading is the store's (`airlock_store::ReportStore`), checking and writing `ingest`'s;
//! a pass ingests the clusters a chunk at a time while the store reads the next ones.

use std::collections::{HashMap, HashSet};

use airlock_bundle::vocabulary::REPORT_KEY_ANNOTATION;
use airlock_bundle::{ClusterId, Limits};
use airlock_store::{Latest, ReportStore, StoreError};
use futures::StreamExt;
use futures::channel::mpsc;
use jiff::Timestamp;
use serde_json::Value;

use super::input::Received;
use super::status::Update;
use super::target::{Target, TargetError};
use super::{Ingest, Outcome, Row, liveness};

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

/// Clusters read and ingested together: the next ones are read while these are ingested,
/// so a pass holds the envelopes of about two of these at a time, not of the whole fleet.
const CHUNK: usize = 256;

/// One pass over `clusters` (SveltosClusters as JSON) at time `now`.
pub async fn pass(
    store: &dyn ReportStore,
    clusters: &[Value],
    marks: &mut Marks,
    target: &Target,
    now: Timestamp,
    limits: &Limits,
) -> Pass {
    in_chunks(store, clusters, marks, &mut Ingest::new(target, limits), now, CHUNK).await
}

/// [`pass`], reading the reports of `chunk` clusters while the ones before are ingested.
async fn in_chunks(
    store: &dyn ReportStore,
    clusters: &[Value],
    marks: &mut Marks,
    ingest: &mut Ingest<'_>,
    now: Timestamp,
    chunk: usize,
) -> Pass {
    let keyed: Vec<(ClusterId, &Value)> = clusters
        .iter()
        .filter(|o| o["metadata"]["annotations"][REPORT_KEY_ANNOTATION].is_string())
        .filter_map(|o| Some((ClusterId::new(o["metadata"]["namespace"].as_str()?, o["metadata"]["name"].as_str()?).ok()?, o)))
        .collect();
    let wanted: Vec<(ClusterId, Option<String>)> = keyed.iter().map(|(c, _)| (c.clone(), marks.0.get(c).cloned())).collect();
    // A cluster's reports are decided together, and a pass reads one per cluster, so
    // clusters can be ingested a chunk at a time. Only a list naming a cluster twice (no
    // management cluster or directory does) would read two: then one chunk holds all.
    let unique = keyed.iter().map(|(c, _)| c).collect::<HashSet<_>>().len() == keyed.len();
    let chunk = if unique { chunk.max(1) } else { keyed.len().max(1) };
    let (tx, mut rx) = mpsc::channel(chunk);
    let read = store.latest_reports(&wanted, ingest.limits()).map(Ok).forward(tx);
    let work = async {
        let (target, origin) = (ingest.target(), store.describe_reports());
        let (mut pass, mut keyed) = (Pass::default(), keyed.into_iter());
        // Clusters whose report was read again and was not new: their missed intervals
        // are listed after those of the clusters the store had nothing new of.
        let mut read_again = Vec::new();
        loop {
            let found: Vec<_> = (&mut rx).take(chunk).collect().await;
            if found.is_empty() {
                break;
            }
            let (mut received, mut read) = (Vec::new(), Vec::new());
            for (found, (cluster, object)) in found.into_iter().zip(&mut keyed) {
                match found {
                    Ok(Latest::Report { envelope, mark }) => {
                        received.push(Received { origin: format!("{origin} {cluster}"), bytes: envelope, place: Some(cluster.clone()) });
                        read.push((cluster, object, mark));
                    }
                    Ok(Latest::Unchanged) => pass.missed.extend(missed(target, cluster, object, now).await),
                    // The store holds no report of it at all: it may send its reports
                    // elsewhere (another store, files), and its silence here says nothing.
                    Ok(Latest::None) => {}
                    Err(e) => pass.unread.push((cluster, e)),
                }
            }
            let rows = ingest.reports(received).await;
            for (row, (cluster, object, mark)) in rows.iter().zip(read) {
                match row.outcome {
                    // Read again next pass.
                    Outcome::Failed(_) => continue,
                    Outcome::AlreadyIngested | Outcome::Older { .. } => {
                        read_again.extend(missed(target, cluster.clone(), object, now).await)
                    }
                    _ => {}
                }
                marks.0.insert(cluster, mark);
            }
            pass.rows.extend(rows);
        }
        pass.missed.extend(read_again);
        pass
    };
    futures::join!(read, work).1
}

/// What `now` changes on `cluster`, whose SveltosCluster is `object` and of which no new
/// report came, and whether that was written.
async fn missed(
    target: &Target,
    cluster: ClusterId,
    object: &Value,
    now: Timestamp,
) -> Option<(ClusterId, Update, Result<(), TargetError>)> {
    let update = liveness::missed(object, now)?;
    let written = target.write(&cluster, object, &update).await;
    tokio::task::yield_now().await;
    Some((cluster, update, written))
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
    use crate::cmd::ingest::{classifier_files, ingest};
    use crate::yaml;
    use airlock_bundle::vocabulary::{REPORT_INTERVAL_ANNOTATION, REPORT_TIME_ANNOTATION};

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_seed([seed; 32])
    }

    /// `--to-dir` files of fleet/a and fleet/b, each with its own key, and a layout store.
    async fn setup() -> (tempfile::TempDir, Target, Box<dyn Store>) {
        setup_fleet(&[("a", 1), ("b", 2)]).await
    }

    /// `--to-dir` files of the clusters `fleet/NAME`, each with the key of its seed, and a
    /// layout store.
    async fn setup_fleet(clusters: &[(&str, u8)]) -> (tempfile::TempDir, Target, Box<dyn Store>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("clusters")).unwrap();
        for &(name, seed) in clusters {
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

    /// Five clusters, four with a report in the store, with Sveltos's documented Classifiers
    /// beside their files; passes two clusters at a time, and all at once.
    /// Returns each pass with the clusters it was given.
    async fn passes_in_chunks_of(chunk: usize) -> (tempfile::TempDir, Target, [(Vec<Value>, Pass); 2]) {
        let fleet = [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)];
        let (dir, target, store) = setup_fleet(&fleet).await;
        let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/sveltos-docs/classifier/management.yaml");
        std::fs::copy(example, dir.path().join("clusters/management.yaml")).unwrap();
        for (name, seed) in fleet.into_iter().filter(|(name, _)| *name != "d") {
            push(&*store, &format!("fleet/{name}"), "2026-03-01T10:00:00Z", seed).await;
        }
        let clusters = target.list().await.unwrap();
        let (mut marks, reports) = (Marks::default(), store.reports().unwrap());
        classifier_files::READS.with(|n| n.set(0));
        let mut ingest = Ingest::new(&target, &Limits::SPEC);
        let first = in_chunks(reports, &clusters, &mut marks, &mut ingest, "2026-03-01T10:01:00Z".parse().unwrap(), chunk).await;
        assert_eq!(classifier_files::READS.with(|n| n.get()), 1, "the Classifiers are read once per pass");
        // Later: c sends a newer report, b's mark is forgotten, the others sent nothing new.
        push(&*store, "fleet/c", "2026-03-01T10:19:00Z", 3).await;
        marks.0.remove(&"fleet/b".parse().unwrap());
        let mut ingest = Ingest::new(&target, &Limits::SPEC);
        let listed = target.list().await.unwrap();
        let later = in_chunks(reports, &listed, &mut marks, &mut ingest, "2026-03-01T10:20:00Z".parse().unwrap(), chunk).await;
        (dir, target, [(clusters, first), (listed, later)])
    }

    fn outcomes(pass: &Pass) -> Vec<(Option<ClusterId>, Outcome)> {
        pass.rows.iter().map(|r| (r.cluster.clone(), r.outcome.clone())).collect()
    }

    #[tokio::test]
    async fn a_pass_in_chunks_ingests_every_cluster_once_as_one_pass_does() {
        let (_dir, target, [(clusters, first), (listed, later)]) = passes_in_chunks_of(2).await;
        let ids = |clusters: &[Value]| -> Vec<ClusterId> {
            clusters
                .iter()
                .map(|o| format!("fleet/{}", o["metadata"]["name"].as_str().unwrap()).parse().unwrap())
                .filter(|c: &ClusterId| c.name() != "d")
                .collect()
        };
        let reported = ids(&clusters);
        let ingested: Vec<_> = reported.iter().map(|c| (Some(c.clone()), Outcome::Ingested)).collect();
        assert_eq!(outcomes(&first), ingested, "each once, in the list's order");
        assert!(first.missed.is_empty() && first.unread.is_empty());
        for cluster in &reported {
            let object = target.get(cluster).await.unwrap().unwrap();
            assert_eq!(object["metadata"]["labels"]["k8s"], "v1-20", "{cluster}: labelled by the Classifier read in another chunk");
            let time = if cluster.name() == "c" { "2026-03-01T10:19:00Z" } else { "2026-03-01T10:00:00Z" };
            assert_eq!(object["metadata"]["annotations"][REPORT_TIME_ANNOTATION], time, "{cluster}");
        }
        let b: ClusterId = "fleet/b".parse().unwrap();
        let reported = ids(&listed);
        let again: Vec<_> = reported
            .iter()
            .filter(|c| c.name() == "b" || c.name() == "c")
            .map(|c| (Some(c.clone()), if *c == b { Outcome::AlreadyIngested } else { Outcome::Ingested }))
            .collect();
        assert_eq!(outcomes(&later), again);
        // Those the store held nothing new of first, then b, whose report was read again.
        let quiet: Vec<&ClusterId> = reported.iter().filter(|c| c.name() == "a" || c.name() == "e").chain([&b]).collect();
        assert_eq!(later.missed.iter().map(|(c, _, _)| c).collect::<Vec<_>>(), quiet);
        assert!(later.missed.iter().all(|(_, update, written)| update.status["connectionStatus"] == "Down" && written.is_ok()));

        let (_whole_dir, _, [(_, whole_first), (_, whole_later)]) = passes_in_chunks_of(CHUNK).await;
        assert_eq!((outcomes(&whole_first), outcomes(&whole_later)), (outcomes(&first), outcomes(&later)), "as one chunk");
    }
}
