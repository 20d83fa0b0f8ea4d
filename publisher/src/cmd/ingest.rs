//! `airlock-publisher ingest`: reads the pullers' signed reports and records them on the
//! SveltosClusters; one table row per report, and an exit code scripts can act on.

use std::path::PathBuf;

use airlock_bundle::Limits;
use airlock_bundle::statement::rfc3339;
use airlock_cli::{KubeArgs, exit};
use anyhow::Context;
use clap::Args;

use crate::ingest::target::Target;
use crate::ingest::{self, Outcome, Row, input};
use crate::table;

const EXAMPLES: &str = "Examples:
  # Reports carried from a disconnected site, into the management cluster:
  airlock-publisher ingest --from /media/usb/reports.json --kubeconfig ~/.kube/mgmt
  kubectl get sveltoscluster -A

  # A directory of report-*.json files, into a management set kept in Git:
  airlock-publisher ingest --from ./reports --to-dir ./management/clusters

Each report must verify with the key `register cluster` recorded on its SveltosCluster
(annotation airlock.dev/report-key). Per cluster, the newest report wins; one that is not newer
than the report already ingested (annotation airlock.dev/report-time) changes nothing.

Exit codes: 0 every report ingested or skipped as old, 1 an error (the management cluster or a
file could not be read or written: run again), 3 some report was rejected (named in the table
and the log; the good ones were ingested).";

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct IngestArgs {
    /// A reports file from `airlock-puller export-reports`, or a directory of the puller's
    /// report-*.json files.
    #[arg(long, value_name = "FILE|DIR")]
    pub from: String,
    /// Update DIR/<namespace>.<name>.sveltoscluster.yaml (as written by `register cluster
    /// --to-dir`) instead of the management cluster.
    #[arg(long, value_name = "DIR")]
    pub to_dir: Option<PathBuf>,
    #[command(flatten)]
    pub kube: KubeArgs,
}

pub async fn run(args: IngestArgs) -> anyhow::Result<u8> {
    let limits = Limits::SPEC;
    let received = input::read(&args.from, &limits)?;
    if received.is_empty() {
        tracing::warn!(from = %args.from, "no reports found");
    }
    let target = match &args.to_dir {
        Some(dir) => {
            anyhow::ensure!(dir.is_dir(), "--to-dir {}: not a directory", dir.display());
            Target::Dir(dir.clone())
        }
        None => Target::Live(args.kube.client().await.context("connecting to the management cluster")?),
    };
    let rows = ingest::ingest(received, &target, &limits).await;
    for r in &rows {
        let cluster = r.cluster.as_ref().map(ToString::to_string).unwrap_or_default();
        match &r.outcome {
            Outcome::Rejected(e) => tracing::error!(report = %r.origin, cluster, "report rejected: {e}"),
            Outcome::Failed(e) => tracing::error!(report = %r.origin, cluster, "{e}"),
            Outcome::Ingested => tracing::info!(report = %r.origin, cluster, "report ingested"),
            _ => {}
        }
    }
    write_table(&rows)?;
    Ok(exit_code(&rows))
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
