//! Which report of each cluster is ingested, and what became of every received one
//! ([`ingest`]): each envelope is opened and checked against the key `register cluster`
//! recorded for its cluster, and only the newest verified report per cluster, if newer
//! than what was ingested, is written. A bad report is refused and named; it never stops
//! the good ones.

use std::collections::BTreeMap;

use airlock_bundle::{ClusterId, Limits};
use jiff::Timestamp;
use serde_json::Value;

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
    Ingest::new(target, limits).reports(received).await
}

/// Ingests into one target in parts (`online` ingests a pass as its reports are read):
/// what is read once however many parts there are, a directory's Classifiers and
/// ClassifierReports, is kept between them.
pub struct Ingest<'a> {
    target: &'a Target,
    limits: &'a Limits,
    /// A directory's Classifiers and ClassifierReports, read when the first report is
    /// written.
    dir_classifiers: Option<Result<(DirClassifiers, KeptFiles), TargetError>>,
}

impl<'a> Ingest<'a> {
    pub fn new(target: &'a Target, limits: &'a Limits) -> Ingest<'a> {
        Ingest { target, limits, dir_classifiers: None }
    }

    pub fn target(&self) -> &'a Target {
        self.target
    }

    pub fn limits(&self) -> &'a Limits {
        self.limits
    }

    /// Ingests every report of `received`; one row per report, in input order. The reports
    /// of one cluster are decided together, so they must come in one call. Yields between
    /// reports, so that what the caller runs beside it (the store's reads) keeps going.
    pub async fn reports(&mut self, received: Vec<Received>) -> Vec<Row> {
        let mut rows: Vec<Row> = Vec::with_capacity(received.len());
        let mut by_cluster: BTreeMap<ClusterId, Vec<(usize, Opened)>> = BTreeMap::new();
        for (i, r) in received.into_iter().enumerate() {
            let (cluster, outcome) = match report::open(&r.bytes, self.limits) {
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
            tokio::task::yield_now().await;
        }
        for (cluster, reports) in by_cluster {
            self.decide(&cluster, &reports, &mut rows).await;
            tokio::task::yield_now().await;
        }
        rows
    }

    /// Verifies the `reports` of `cluster` and writes the newest, if newer than what was
    /// ingested; sets their rows' outcomes.
    async fn decide(&mut self, cluster: &ClusterId, reports: &[(usize, Opened)], rows: &mut [Row]) {
        let mut set_all = |outcome: Outcome| reports.iter().for_each(|(i, _)| rows[*i].outcome = outcome.clone());
        let object = match self.target.get(cluster).await {
            Ok(Some(object)) => object,
            Ok(None) => return set_all(Outcome::Rejected(ReportError::UnknownCluster(cluster.clone()))),
            Err(e) => return set_all(Outcome::Failed(e)),
        };
        let key = match report::registered_key(cluster, &object) {
            Ok(key) => key,
            Err(e) => return set_all(Outcome::Rejected(e)),
        };
        let mut newest: Option<(usize, Timestamp)> = None;
        for (i, opened) in reports {
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
        let Some((i, finished)) = newest else { return };
        rows[i].outcome = match status::ingested_time(&object) {
            Some(t) if t == finished => Outcome::AlreadyIngested,
            Some(t) if t > finished => Outcome::Older { ingested: t },
            _ => match self.write(cluster, &object, rows[i].report.as_ref().expect("verified above")).await {
                Ok(()) => Outcome::Ingested,
                Err(e) => Outcome::Failed(e),
            },
        };
    }

    /// Writes what `report` means for `cluster`, whose SveltosCluster is `object`.
    async fn write(&mut self, cluster: &ClusterId, object: &Value, report: &PullReport) -> Result<(), TargetError> {
        // The profiles first: the cluster's report time, written last, marks the report
        // done, and a failure before it leaves the report to be read again. A directory's
        // SveltosCluster file is rewritten whole, so the Classifiers' labels ride along
        // with the status in that one write.
        let labelled = match self.target {
            Target::Live(client) => {
                sveltos_target::write(client, cluster, report).await?;
                classifier_target::write(client, cluster, object, report).await?;
                event_target::write(client, cluster, report).await?;
                health_target::write(client, cluster, object, report).await?;
                object.clone()
            }
            Target::Dir { clusters, classifiers } => {
                let read = || Ok((DirClassifiers::read(classifiers)?, KeptFiles::read(clusters)?));
                let (found, kept) = self.dir_classifiers.get_or_insert_with(read).as_mut().map_err(|e| e.clone())?;
                classifier_files::write(clusters, found, kept, cluster, object, report)?.0
            }
        };
        self.target.write(cluster, &labelled, &status::update(report, &labelled)).await
    }
}
