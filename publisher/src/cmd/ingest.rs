//! `airlock-publisher ingest`: reads the pullers' signed reports, carried as files or from
//! the store (one pass of `online`), and records them on the SveltosClusters; one
//! table row per report, one line per cluster whose missed intervals changed, and an exit
//! code scripts can act on.
//!
//! The pipeline, shared with `watch` and `status`: `input` (a reports file or directory)
//! or `online` (the store, spec 14.7) → `report` (each envelope checked against the key
//! `register cluster` recorded for its cluster) → [`ingest`] (`reports`: the newest
//! verified report per cluster, if newer than what was ingested) → `status` (what
//! changes) → `target` (the management cluster, or the register `--to-dir` files), with
//! the ClusterConfiguration and ClusterSummary shapes in `addons`, `charts`, `configuration`, `drift`,
//! `dryrun`, `profiles` and `sveltos_target`, and what the report's evaluations mean for the
//! Classifiers in `classified` and `classifier_target` (`classifier_files` for `--to-dir`), for
//! the events in `events` and `event_target`, for the health checks in `health_reports`,
//! `cluster_health`, `notify` and `health_target`. Clusters whose reports stopped coming are
//! `liveness`' (spec 14.9). The annotations written are named in `crate::annotations`.
//! Nothing here talks to managed clusters.

pub mod addons;
pub mod applied;
pub mod charts;
pub mod classified;
pub mod classifier_files;
pub mod classifier_target;
pub mod cluster_health;
pub mod configuration;
pub mod drift;
pub mod dryrun;
pub mod event_target;
pub mod events;
pub mod health_reports;
pub mod health_target;
pub mod input;
pub mod liveness;
pub mod notify;
pub mod online;
pub mod profiles;
pub mod report;
mod reports;
pub mod staging;
pub mod status;
pub mod sveltos_target;
pub mod target;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;

pub use reports::{Ingest, Outcome, Row, ingest};

use std::path::PathBuf;

use airlock_bundle::Limits;
use airlock_bundle::statement::rfc3339;
use airlock_cli::{KubeArgs, exit};
use anyhow::Context;
use clap::Args;
use jiff::Timestamp;

use super::StoreArgs;

use crate::cmd::table;
use target::Target;

const EXAMPLES: &str = "Examples:
  # Reports carried from a disconnected site, into the management cluster:
  airlock-publisher ingest --from /media/usb/reports.json --kubeconfig ~/.kube/mgmt
  kubectl get sveltoscluster -A

  # A directory of report-*.json files, into a management set kept in Git:
  airlock-publisher ingest --from ./reports --to-dir ./management/clusters --classifiers-from ./management

  # The reports the pullers sent to the store themselves (bundles-format.md 14.7):
  airlock-publisher ingest --from oci://registry.example/airlock --kubeconfig ~/.kube/mgmt

Each report must verify with the key `register cluster` recorded on its SveltosCluster
(annotation airlock.dev/report-key). Per cluster, the newest report wins; one that is not newer
than the report already ingested (annotation airlock.dev/report-time) changes nothing. From a
store, ingest reads the newest report of every SveltosCluster with a report key, and marks a
cluster not ready when it sent none for spec.consecutiveFailureThreshold (default 3) of its
report intervals (annotation airlock.dev/report-interval, default 30m).

On a management cluster, ingest also looks for ConfigurationGroups Sveltos's own controllers
staged for a registered cluster (label pullmode.projectsveltos.io/clustername): it warns,
records their authors in the annotation airlock.dev/sveltos-staged and a Warning Event
(reason SveltosStagesConfiguration) on the SveltosCluster, and removes the annotation once
they are gone (docs/operations.md, Sveltos beside Airlock).

On a management cluster serving Sveltos's Classifier and ClassifierReport CRDs, ingest also
decides each Classifier's match from the report (the puller's results, the Kubernetes version),
writes a ClassifierReport per Classifier in the cluster's namespace and sets or removes the
Classifiers' labels on the SveltosCluster; profiles select on them at the next publish. With
--to-dir it does the same to the files: the Classifiers are read from --classifiers-from (by
default the --to-dir directory), the labels go into the SveltosCluster files and each
ClassifierReport is kept as DIR/<namespace>.<report name>.classifierreport.yaml, which
`publish --from-dir` ignores.

On a management cluster serving Sveltos's HealthCheck, ClusterHealthCheck and HealthCheckReport
CRDs, ingest writes a HealthCheckReport per HealthCheck the cluster's puller evaluated, judges the
liveness checks of every ClusterHealthCheck selecting the cluster, records them in its
status.clusterCondition and, on a transition only, sends its KubernetesEvent and Teams
notifications.

On a management cluster serving Sveltos's EventSource and EventReport CRDs, ingest also writes
the EventReport sveltos--<eventsource>--<cluster> in the cluster's namespace for each event the
report carries, and deletes it when the event is gone; the next publish instantiates the
EventTriggers' add-ons for that cluster from them.

Exit codes: 0 every report ingested or skipped as old, 1 an error (the management cluster, the
store or a file could not be read or written: run again), 3 some report was rejected (named in
the table and the log; the good ones were ingested).";

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct IngestArgs {
    /// A reports file from `airlock-puller export-reports`, a directory of the puller's
    /// report-*.json files, or the store the pullers send their reports to (oci://,
    /// oci+http://, oci-layout:, git+…).
    #[arg(long, value_name = "FILE|DIR|STORE")]
    pub from: String,
    #[allow(rustdoc::invalid_html_tags, reason = "clap shows this comment as the flag's help, where <placeholders> read as such")]
    /// Update DIR/<namespace>.<name>.sveltoscluster.yaml (as written by `register cluster
    /// --to-dir`) instead of the management cluster.
    #[arg(long, value_name = "DIR")]
    pub to_dir: Option<PathBuf>,
    /// With --to-dir: read the Classifiers that label the clusters from the manifests
    /// under DIR, as `publish --from-dir DIR` reads them (default: the --to-dir directory).
    #[arg(long, value_name = "DIR", requires = "to_dir")]
    pub classifiers_from: Option<PathBuf>,
    #[command(flatten)]
    pub kube: KubeArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub async fn run(args: IngestArgs) -> anyhow::Result<u8> {
    let limits = Limits::SPEC;
    let target = match &args.to_dir {
        Some(dir) => {
            anyhow::ensure!(dir.is_dir(), "--to-dir {}: not a directory", dir.display());
            let classifiers = args.classifiers_from.clone().unwrap_or_else(|| dir.clone());
            anyhow::ensure!(classifiers.is_dir(), "--classifiers-from {}: not a directory", classifiers.display());
            Target::Dir { clusters: dir.clone(), classifiers }
        }
        None => Target::Live(args.kube.client().await.context("connecting to the management cluster")?),
    };
    if input::is_store(&args.from) {
        let store = args.store.open(&args.from).await?;
        let reports = store.reports().with_context(|| format!("--from {}: this kind of store keeps no reports", args.from))?;
        let clusters = target.list().await?;
        let pass = online::pass(reports, &clusters, &mut online::Marks::default(), &target, Timestamp::now(), &limits).await;
        let code = show_pass(&pass)?;
        return Ok(check_staging(&target, code).await);
    }
    let received = input::read(&args.from, &limits)?;
    if received.is_empty() {
        tracing::warn!(from = %args.from, "no reports found");
    }
    let rows = ingest(received, &target, &limits).await;
    show(&rows)?;
    Ok(check_staging(&target, exit_code(&rows)).await)
}

/// Looks for ConfigurationGroups Sveltos staged for the registered clusters of a management
/// cluster and records them (`staging`); a failure to look makes `code` an error.
async fn check_staging(target: &Target, code: u8) -> u8 {
    let Target::Live(client) = target else { return code };
    match target.list().await {
        Ok(clusters) if log_staging(client, &clusters).await => code,
        Ok(_) => exit::ERROR,
        Err(e) => {
            tracing::error!("{e}");
            exit::ERROR
        }
    }
}

/// Logs a warning per cluster Sveltos stages ConfigurationGroups for; false when the check
/// itself failed (logged).
pub async fn log_staging(client: &kube::Client, clusters: &[serde_json::Value]) -> bool {
    match staging::check(client, clusters).await {
        Ok(warnings) => {
            warnings.iter().for_each(|w| tracing::warn!("{w}"));
            true
        }
        Err(e) => {
            tracing::error!("checking for Sveltos's ConfigurationGroups: {e}");
            false
        }
    }
}

/// Logs and prints what a pass over the store did; its exit code.
fn show_pass(pass: &online::Pass) -> std::io::Result<u8> {
    let code = log_pass(pass);
    if !pass.rows.is_empty() {
        write_table(&pass.rows)?;
    }
    Ok(code)
}

/// Logs what a pass over the store did; the exit code it makes.
pub fn log_pass(pass: &online::Pass) -> u8 {
    log_rows(&pass.rows);
    for (cluster, update, written) in &pass.missed {
        let missed = &update.status["connectionFailures"];
        match written {
            Ok(()) => tracing::warn!(%cluster, missed = %missed, status = %update.status["connectionStatus"], "report intervals missed"),
            Err(e) => tracing::error!(%cluster, "{e}"),
        }
    }
    for (cluster, e) in &pass.unread {
        tracing::error!(%cluster, "reports not read: {e}");
    }
    let failed = pass.unread.len() + pass.missed.iter().filter(|(_, _, w)| w.is_err()).count();
    if failed > 0 { exit::ERROR } else { exit_code(&pass.rows) }
}

/// Logs each row and prints the table.
fn show(rows: &[Row]) -> std::io::Result<()> {
    log_rows(rows);
    write_table(rows)
}

fn log_rows(rows: &[Row]) {
    for r in rows {
        let cluster = r.cluster.as_ref().map(ToString::to_string).unwrap_or_default();
        match &r.outcome {
            Outcome::Rejected(e) => tracing::error!(report = %r.origin, cluster, "report rejected: {e}"),
            Outcome::Failed(e) => tracing::error!(report = %r.origin, cluster, "{e}"),
            Outcome::Ingested => tracing::info!(report = %r.origin, cluster, "report ingested"),
            _ => {}
        }
    }
}

fn write_table(rows: &[Row]) -> std::io::Result<()> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let report = r.report.as_ref();
            let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
            vec![
                r.origin.clone(),
                or_dash(r.cluster.as_ref().map(ToString::to_string)),
                or_dash(report.map(|r| rfc3339::format(&r.finished_at))),
                or_dash(report.map(|r| r.result.name().to_string())),
                or_dash(report.and_then(|r| r.applied_version).map(|v| v.to_string())),
                or_dash(report.and_then(|r| r.kubernetes_version.clone())),
                outcome_text(&r.outcome),
            ]
        })
        .collect();
    let headers = ["REPORT", "CLUSTER", "FINISHED", "RESULT", "APPLIED", "KUBERNETES", "OUTCOME"];
    table::write(&mut std::io::stdout().lock(), &headers, &cells)
}

fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ingested => "ingested".into(),
        Outcome::AlreadyIngested => "already ingested".into(),
        Outcome::Older { ingested } => format!("older than the ingested report of {}", rfc3339::format(ingested)),
        Outcome::Superseded => "superseded by a newer report".into(),
        Outcome::Rejected(e) => format!("rejected: {e}"),
        Outcome::Failed(e) => format!("failed: {e}"),
    }
}

/// 1 when a write failed (running again may help), else 3 when a report was rejected.
pub fn exit_code(rows: &[Row]) -> u8 {
    if rows.iter().any(|r| matches!(r.outcome, Outcome::Failed(_))) {
        exit::ERROR
    } else if rows.iter().any(|r| matches!(r.outcome, Outcome::Rejected(_))) {
        exit::REJECTED
    } else {
        exit::OK
    }
}
