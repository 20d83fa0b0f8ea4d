//! The data of `hack/bench/reports.sh`: a fleet of registered clusters, each with its own
//! report key, and each one's newest report in a store, as a puller with `--push-reports`
//! leaves them (bundles-format.md 14.2, 14.7). Per cluster it writes the SveltosCluster as
//! `register cluster --to-dir` names it, with the report key's public half and the report
//! interval, and pushes one signed report through the store's own `push_report`, so the
//! artifacts are byte for byte what pullers push.
//!
//! It measures nothing and checks nothing that ingest checks; cluster `i`'s key comes from
//! `--seed` and `i`, so a run with the same seed registers the same keys. An example, never
//! part of a release binary. Entry point: `main`.

use std::path::PathBuf;

use airlock_bundle::report::{PullReport, RunResult};
use airlock_bundle::vocabulary::{REPORT_INTERVAL_ANNOTATION, REPORT_KEY_ANNOTATION};
use airlock_bundle::{ClusterId, Digest, SigningKey};
use airlock_store::{ReportPush, StoreRef};
use anyhow::Context;
use clap::Parser;
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// Pushes in flight: a fleet's pullers push at once, each over its own connection.
const PUSHES_IN_FLIGHT: usize = 16;
/// Objects per report: a cluster's part of a small profile, all unchanged.
const OBJECTS: usize = 10;

#[derive(Parser)]
struct Args {
    /// Clusters to register: `bench/c00000` on.
    #[arg(long)]
    clusters: usize,
    /// The store the reports go to (oci+http://…, oci-layout:…, git+…).
    #[arg(long)]
    store: String,
    /// Where the SveltosCluster files go (an empty directory, made if missing).
    #[arg(long)]
    to_dir: PathBuf,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    airlock_cli::install_crypto_provider();
    let args = Args::parse();
    let reference: StoreRef = args.store.parse().with_context(|| format!("--store {}", args.store))?;
    let store = airlock_store::open(&reference, &Default::default()).await?;
    let reports = store.reports().context("this kind of store keeps no reports")?;
    std::fs::create_dir_all(&args.to_dir)?;
    // Finished a moment ago: ingest then finds every cluster within its report interval.
    let finished = Timestamp::now() - SignedDuration::from_secs(1);
    let pushes: Vec<ReportPush> = (0..args.clusters)
        .map(|i| {
            let cluster = ClusterId::new("bench", &format!("c{i:05}")).expect("a valid cluster id");
            let key = cluster_key(args.seed, i);
            let file = args.to_dir.join(format!("{}.{}.sveltoscluster.yaml", cluster.namespace(), cluster.name()));
            std::fs::write(&file, serde_json::to_vec_pretty(&sveltos_cluster(&cluster, &key))?)?;
            Ok(report(&cluster, &key, finished))
        })
        .collect::<std::io::Result<_>>()?;
    let sent: Vec<_> = pushes.iter().map(|push| reports.push_report(push)).collect();
    let results: Vec<_> = futures::stream::iter(sent).buffer_unordered(PUSHES_IN_FLIGHT).collect().await;
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    println!("{} clusters registered in {}, their reports in {}", args.clusters, args.to_dir.display(), args.store);
    Ok(())
}

fn cluster_key(seed: u64, i: usize) -> SigningKey {
    let mut bytes = [0; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&(i as u64).to_le_bytes());
    SigningKey::from_seed(bytes)
}

/// The SveltosCluster as JSON, which is YAML too.
fn sveltos_cluster(cluster: &ClusterId, key: &SigningKey) -> Value {
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1",
        "kind": "SveltosCluster",
        "metadata": {
            "name": cluster.name(),
            "namespace": cluster.namespace(),
            "annotations": {REPORT_KEY_ANNOTATION: key.public().to_openssh(&cluster.to_string()), REPORT_INTERVAL_ANNOTATION: "30m"},
        },
        "spec": {"pullMode": true},
    })
}

/// An up-to-date run's report, signed with the cluster's key.
fn report(cluster: &ClusterId, key: &SigningKey, finished: Timestamp) -> ReportPush {
    let mut report = PullReport::<Value>::start(cluster);
    report.started_at = finished - SignedDuration::from_millis(800);
    report.finished_at = finished;
    report.duration_ms = 800;
    report.result = RunResult::UpToDate;
    report.applied_version = Some(1);
    report.applied_digest = Some(Digest::of(cluster.to_string().as_bytes()));
    report.kubernetes_version = Some("v1.20.2".into());
    report.api_requests = OBJECTS as u64;
    report.objects = (0..OBJECTS)
        .map(|k| {
            let id = json!({"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "default", "name": format!("config-{k}")});
            json!({"id": id, "profile": "base", "action": "unchanged"})
        })
        .collect();
    ReportPush { cluster: cluster.clone(), finished_at: finished, result: "up-to-date".into(), envelope: report.file_bytes(Some(key)) }
}
