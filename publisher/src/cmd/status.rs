//! `airlock-publisher status`: what the store holds for each selected cluster, beside what
//! its puller last reported (as `ingest` recorded it on the SveltosCluster).
//!
//! Reads each cluster's newest envelope WITHOUT verifying it: this is the publisher
//! looking at its own output, not a decision to apply anything. The reported columns are
//! only as fresh as the last `ingest` (REPORTED is when that report's run finished).
//! Below the table come the profiles whose parts carry a failure, per cluster, and the
//! fields of each profile the bundles note as not supported or not applicable.

use std::collections::BTreeMap;

use airlock_bundle::statement::{ProfileEntry, rfc3339};
use airlock_bundle::vocabulary::STAGED_ANNOTATION;
use airlock_bundle::{ClusterId, Digest, Limits};
use airlock_cli::exit;
use airlock_store::StoreError;
use anyhow::Context;
use clap::Args;

use super::{SourceArgs, StoreArgs};
use crate::cmd::ingest::staging;
use crate::cmd::ingest::status::Ingested;
use crate::cmd::table;
use crate::sources::select;

const EXAMPLES: &str = "Example:
  airlock-publisher status --from-dir ./management --from oci://registry.example/airlock

Clusters the store holds nothing for show \"never published\". READY, APPLIED (the bundle version
the cluster runs), KUBERNETES and DRIFT (objects found drifted and corrected by the last run)
come from the reports `airlock-publisher ingest` recorded; \"-\" until one is ingested. Then
one line per profile that failed for a cluster (its part keeps what it held), and one per
profile field the bundles note as not done as Sveltos would. A line starting WARNING comes first
for each cluster Sveltos's own controllers stage ConfigurationGroups for (read from the
management cluster, or, with --from-dir, as `ingest` recorded it in the annotation
airlock.dev/sveltos-staged): Sveltos treats it as its own pull-mode cluster (docs/operations.md,
Sveltos beside Airlock).";

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
    let mut lines = Lines::default();
    let groups = staged_groups(&args.source).await?;
    for c in clusters {
        lines.staged(&c.id, &c.object, groups.as_deref());
        let cells = match store.fetch_envelope(&c.id, &Limits::SPEC).await {
            Ok(fetched) => match fetched.unverified_statement() {
                Some(s) => {
                    let p = &s.predicate;
                    lines.add(&c.id.to_string(), &p.profiles);
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
    let mut out = std::io::stdout().lock();
    table::write(&mut out, &headers, &rows)?;
    lines.write(&mut out)?;
    Ok(code)
}

/// The ConfigurationGroups Sveltos staged for some cluster, read from the management
/// cluster; `None` with `--from-dir`, where what `ingest` recorded is shown instead.
async fn staged_groups(source: &SourceArgs) -> anyhow::Result<Option<Vec<serde_json::Value>>> {
    if source.from_dir.is_some() {
        return Ok(None);
    }
    let client = source.kube.client().await.context("connecting to the management cluster")?;
    Ok(Some(staging::list(&client, None).await?))
}

/// What the bundles say beyond the table: failures per cluster, notes per profile.
#[derive(Default)]
struct Lines {
    /// Clusters Sveltos stages ConfigurationGroups for, first: the topology is wrong.
    warnings: Vec<String>,
    failures: Vec<String>,
    /// (part, note line) → clusters whose bundle carries it.
    notes: BTreeMap<(String, String), usize>,
}

impl Lines {
    /// A warning when Sveltos stages work for `cluster`: from `groups` when read, else from
    /// the annotation `ingest` recorded on the SveltosCluster `object`.
    fn staged(&mut self, cluster: &ClusterId, object: &serde_json::Value, groups: Option<&[serde_json::Value]>) {
        let summary = match groups {
            Some(groups) => staging::summary(&staging::staged_for(cluster, groups)),
            None => object["metadata"]["annotations"][STAGED_ANNOTATION].as_str().map(str::to_string),
        };
        if let Some(summary) = summary {
            self.warnings.push(format!("WARNING {}", staging::warning(cluster, &summary)));
        }
    }

    fn add(&mut self, cluster: &str, profiles: &[ProfileEntry]) {
        for p in profiles {
            if let Some(f) = &p.failure {
                let kept = f.kept_from.map_or_else(|| "left empty".to_string(), |v| format!("keeps version {v}"));
                self.failures.push(format!("{cluster}: {} failed ({kept}): {}", p.name, f.message));
            }
            for n in &p.notes {
                let support = serde_json::to_value(n.support).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
                *self.notes.entry((p.name.clone(), format!("{} {support}: {}", n.field, n.detail))).or_default() += 1;
            }
        }
    }

    fn write(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        for line in self.warnings.iter().chain(&self.failures) {
            writeln!(out, "{line}")?;
        }
        for ((part, note), clusters) in &self.notes {
            writeln!(out, "{part}: {note} ({clusters} cluster{})", if *clusters == 1 { "" } else { "s" })?;
        }
        Ok(())
    }
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
    fn lists_failures_per_cluster_and_notes_per_profile() {
        use airlock_bundle::statement::{FieldNote, RenderFailure, Support};
        let mut entry: ProfileEntry = serde_json::from_value(json!({
            "name": "ClusterProfile.web", "digest": airlock_bundle::Digest::of(b"").to_string(), "size": 1024,
            "syncMode": "Continuous", "tier": 100, "dependsOn": [], "stopMatchingBehavior": "WithdrawPolicies", "forceConflicts": false
        }))
        .unwrap();
        entry.notes = vec![FieldNote { field: "spec.helmCharts".into(), support: Support::NotSupported, detail: "not rendered".into() }];
        let mut lines = Lines::default();
        lines.add("fleet/a", std::slice::from_ref(&entry));
        entry.failure = Some(RenderFailure { message: "template: x".into(), kept_from: Some(3) });
        lines.add("fleet/b", &[entry]);
        let mut out = Vec::new();
        lines.staged(
            &ClusterId::new("fleet", "b").unwrap(),
            &json!({"metadata": {"annotations": {STAGED_ANNOTATION: "Classifier/gpu (Classifier)"}}}),
            None,
        );
        lines.staged(&ClusterId::new("fleet", "a").unwrap(), &json!({"metadata": {}}), None);
        lines.write(&mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let (warning, out) = out.split_once('\n').unwrap();
        assert!(
            warning.starts_with("WARNING fleet/b: Sveltos stages ConfigurationGroups") && warning.contains("Classifier/gpu"),
            "{warning}"
        );
        assert_eq!(
            out,
            "fleet/b: ClusterProfile.web failed (keeps version 3): template: x\n\
             ClusterProfile.web: spec.helmCharts not-supported: not rendered (2 clusters)\n"
        );
    }

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
