//! `airlock-publisher status`: what the store holds for each selected cluster, beside what
//! its puller last reported (as `ingest` recorded it on the SveltosCluster).
//!
//! Reads each cluster's newest envelope WITHOUT verifying it: this is the publisher
//! looking at its own output, not a decision to apply anything. The reported columns are
//! only as fresh as the last `ingest` (REPORTED is when that report's run finished).

use airlock_bundle::statement::rfc3339;
use airlock_bundle::{ClusterId, Digest, Limits};
use airlock_cli::exit;
use airlock_store::StoreError;
use clap::Args;

use super::{SourceArgs, StoreArgs};
use crate::ingest::status::Ingested;
use crate::sveltos::select;
use crate::table;

const EXAMPLES: &str = "Example:
  airlock-publisher status --from-dir ./management --from oci://registry.example/airlock

Clusters the store holds nothing for show \"never published\". READY, APPLIED (the bundle version
the cluster runs), KUBERNETES and DRIFT (objects found drifted and corrected by the last run)
come from the reports `airlock-publisher ingest` recorded; \"-\" until one is ingested.";

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct StatusArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Store to read: same references as publish --to.
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// Show only this cluster (NAMESPACE/NAME); repeatable.
    #[arg(long = "cluster", value_name = "NS/NAME")]
    pub clusters: Vec<ClusterId>,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub async fn run(args: StatusArgs) -> anyhow::Result<u8> {
    let store = args.store.open(&args.from).await?;
    let inventory = args.source.open().await?.load().await?;
    let clusters = select::candidates(&inventory.clusters, &args.clusters)?;
    let mut rows = Vec::with_capacity(clusters.len());
    let mut code = exit::OK;
    for c in clusters {
        let cells = match store.fetch_envelope(&c.id, &Limits::SPEC).await {
            Ok(fetched) => match fetched.unverified_statement() {
                Some(s) => {
                    let p = &s.predicate;
                    let digest = s.subject.first().and_then(|d| Digest::from_hex(&d.digest.sha256).ok());
                    vec![
                        p.version.to_string(),
                        digest.as_ref().map_or_else(|| "-".into(), table::short),
                        rfc3339::format(&p.issued_at),
                        rfc3339::format(&p.expires),
                        "published".into(),
                    ]
                }
                None => {
                    code = exit::PARTIAL;
                    status_only("unreadable envelope")
                }
            },
            Err(StoreError::NotFound { .. }) => status_only("never published"),
            Err(e) => {
                tracing::error!(cluster = %c.id, "{e}");
                code = exit::PARTIAL;
                status_only("store error")
            }
        };
        rows.push([vec![c.id.to_string()], cells, reported(&Ingested::of(&c.object))].concat());
    }
    let headers = ["CLUSTER", "VERSION", "DIGEST", "ISSUED", "EXPIRES", "STATUS", "READY", "APPLIED", "KUBERNETES", "DRIFT", "REPORTED"];
    table::write(&mut std::io::stdout().lock(), &headers, &rows)?;
    Ok(code)
}

/// The ingested report's columns.
fn reported(i: &Ingested) -> Vec<String> {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    vec![
        or_dash(i.ready.map(|r| r.to_string())),
        or_dash(i.applied_version.as_ref().map(|v| format!("v{v}"))),
        or_dash(i.kubernetes_version.clone()),
        or_dash(i.drift_corrected.clone()),
        or_dash(i.report_time.clone()),
    ]
}

fn status_only(status: &str) -> Vec<String> {
    ["-", "-", "-", "-", status].map(String::from).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shows_what_was_ingested_and_dashes_before() {
        let object = json!({
            "metadata": {"annotations": {"airlock.dev/applied-version": "7", "airlock.dev/drift-corrected": "2",
                                         "airlock.dev/report-time": "2026-03-01T10:00:00.250Z"}},
            "status": {"ready": true, "version": "v1.20.2"},
        });
        assert_eq!(reported(&Ingested::of(&object)), ["true", "v7", "v1.20.2", "2", "2026-03-01T10:00:00Z"]);
        assert_eq!(reported(&Ingested::of(&json!({"metadata": {}}))), ["-"; 5]);
    }
}
