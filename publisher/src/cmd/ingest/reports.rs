//! Which report of each cluster is ingested, and what became of every received one
//! ([`ingest`]): each envelope is opened and checked against the key `register cluster`
//! recorded for its cluster, and only the newest verified report per cluster, if newer
//! than what was ingested, is written. A bad report is refused and named; it never stops
//! the good ones.

use std::collections::BTreeMap;

use airlock_bundle::{ClusterId, Limits};
use jiff::Timestamp;

use super::classifier_files::{self, DirClassifiers, KeptFiles};
use super::input::Received;
use super::report::{self, Opened, PullReport, ReportError};
use super::target::{Target, TargetError};
use super::{classifier_target, event_target, health_target, status, sveltos_target};

/// What became of one received report.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Ingested,
    /// A report with the same finish time was ingested before: nothing to do.
    AlreadyIngested,
    /// Older than the report already ingested for its cluster.
    Older {
        ingested: Timestamp,
    },
    /// A newer verified report of the same cluster came in the same input.
    Superseded,
    Rejected(ReportError),
    /// Could not be read from or written to the target; retrying may help.
    Failed(TargetError),
}

/// One received report and its fate.
#[derive(Debug, Clone)]
pub struct Row {
    pub origin: String,
    /// The cluster the report claims, when it could be read.
    pub cluster: Option<ClusterId>,
    /// The report, once verified.
    pub report: Option<PullReport>,
    pub outcome: Outcome,
}

/// Ingests every report of `received` into `target`; one row per report, in input order.
pub async fn ingest(received: Vec<Received>, target: &Target, limits: &Limits) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::with_capacity(received.len());
    let mut by_cluster: BTreeMap<ClusterId, Vec<(usize, Opened)>> = BTreeMap::new();
    for (i, r) in received.into_iter().enumerate() {
        let (cluster, outcome) = match report::open(&r.bytes, limits) {
            Ok(opened) if r.place.as_ref().is_some_and(|place| *place != opened.cluster) => {
                let place = r.place.clone().expect("checked above");
                (Some(opened.cluster.clone()), Outcome::Rejected(ReportError::Misplaced { place, claimed: opened.cluster }))
            }
            Ok(opened) => {
                let cluster = opened.cluster.clone();
                by_cluster.entry(cluster.clone()).or_default().push((i, opened));
                // Decided below, once the cluster's key is known.
                (Some(cluster), Outcome::Superseded)
            }
            Err(e) => (None, Outcome::Rejected(e)),
        };
        rows.push(Row { origin: r.origin, cluster, report: None, outcome });
    }
    // A directory's Classifiers and ClassifierReports, read once, when the first report
    // is written.
    let mut dir_classifiers: Option<Result<(DirClassifiers, KeptFiles), TargetError>> = None;
    for (cluster, reports) in by_cluster {
        let mut set = |i: usize, outcome: Outcome| rows[i].outcome = outcome;
        let object = match target.get(&cluster).await {
            Ok(Some(object)) => object,
            Ok(None) => {
                reports.iter().for_each(|(i, _)| set(*i, Outcome::Rejected(ReportError::UnknownCluster(cluster.clone()))));
                continue;
            }
            Err(e) => {
                reports.iter().for_each(|(i, _)| set(*i, Outcome::Failed(e.clone())));
                continue;
            }
        };
        let key = match report::registered_key(&cluster, &object) {
            Ok(key) => key,
            Err(e) => {
                reports.iter().for_each(|(i, _)| set(*i, Outcome::Rejected(e.clone())));
                continue;
            }
        };
        let mut newest: Option<(usize, Timestamp)> = None;
        for (i, opened) in &reports {
            match report::verify(opened, &key) {
                Ok(r) => {
                    if newest.is_none_or(|(_, t)| r.finished_at > t) {
                        newest = Some((*i, r.finished_at));
                    }
                    rows[*i].report = Some(r);
                }
                Err(e) => rows[*i].outcome = Outcome::Rejected(e),
            }
        }
        let Some((i, finished)) = newest else { continue };
        rows[i].outcome = match status::ingested_time(&object) {
            Some(t) if t == finished => Outcome::AlreadyIngested,
            Some(t) if t > finished => Outcome::Older { ingested: t },
            _ => {
                let report = rows[i].report.as_ref().expect("verified above");
                // The profiles first: the cluster's report time, written last, marks the
                // report done, and a failure before it leaves the report to be read again.
                // A directory's SveltosCluster file is rewritten whole, so the Classifiers'
                // labels ride along with the status in that one write.
                let labelled = match target {
                    Target::Live(client) => {
                        async {
                            sveltos_target::write(client, &cluster, report).await?;
                            classifier_target::write(client, &cluster, &object, report).await?;
                            event_target::write(client, &cluster, report).await?;
                            health_target::write(client, &cluster, &object, report).await?;
                            Ok(object.clone())
                        }
                        .await
                    }
                    Target::Dir { clusters, classifiers } => {
                        let read = || Ok((DirClassifiers::read(classifiers)?, KeptFiles::read(clusters)?));
                        match dir_classifiers.get_or_insert_with(read) {
                            Ok((found, kept)) => {
                                classifier_files::write(clusters, found, kept, &cluster, &object, report).map(|(labelled, _)| labelled)
                            }
                            Err(e) => Err(e.clone()),
                        }
                    }
                };
                let written = match labelled {
                    Ok(object) => target.write(&cluster, &object, &status::update(report, &object)).await,
                    Err(e) => Err(e),
                };
                match written {
                    Ok(()) => Outcome::Ingested,
                    Err(e) => Outcome::Failed(e),
                }
            }
        };
    }
    rows
}
