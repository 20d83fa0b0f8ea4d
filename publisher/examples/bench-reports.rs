//! The data of `hack/bench/reports.sh`: a fleet of registered clusters, each with its own
//! report key, and each one's newest report in a store, as a puller with `--push-reports`
//! leaves them (bundles-format.md 14.2, 14.7). Per cluster it writes the SveltosCluster as
//! `register cluster --to-dir` names it, with the report key's public half and the report
//! interval, and pushes one signed report through the store's own `push_report`, so the
//! artifacts are byte for byte what pullers push.
//!
//! Each report also carries what its puller evaluated (14.3 `evaluations`): an EventSource
//! whose event is `--collected` Services, collected whole and split over as many results
//! as the per-result bound asks, and a HealthCheck judging five Deployments, one of them
//! degraded, so ingest reads reports of the size events and health checks make.
//!
//! It measures nothing and checks nothing that ingest checks; cluster `i`'s key comes from
//! `--seed` and `i`, so a run with the same seed registers the same keys. An example, never
//! part of a release binary. Entry point: `main`.

use std::path::PathBuf;

use airlock_bundle::report::{Collected, Evaluated, HealthStatus, MAX_MATCHING, PullReport, ResourceHealth, RunResult};
use airlock_bundle::statement::{Evaluation, EvaluationKind};
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
    /// Services each report's EventSource results collect, in all.
    #[arg(long, default_value_t = 2)]
    collected: usize,
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
            Ok(report(&cluster, &key, finished, args.collected))
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
fn report(cluster: &ClusterId, key: &SigningKey, finished: Timestamp, collected: usize) -> ReportPush {
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
    report.evaluations = evaluations(collected);
    ReportPush { cluster: cluster.clone(), finished_at: finished, result: "up-to-date".into(), envelope: report.file_bytes(Some(key)) }
}

/// An EventSource's results, `collected` Services in all at most [`MAX_MATCHING`] a result,
/// then a HealthCheck's: what a puller reports of them, in the order a bundle sorts them.
fn evaluations(collected: usize) -> Vec<Evaluated> {
    let service = |i: usize| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("front-{i:04}"), "namespace": "web",
            "labels": {"app.kubernetes.io/name": "front", "sveltos": "fv"}},
            "spec": {"type": "LoadBalancer", "selector": {"app.kubernetes.io/name": "front"},
                "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": format!("10.0.{}.{}", i / 250, i % 250)}]}}})
    };
    let services: Vec<Value> = (0..collected).map(service).collect();
    let definition = |kind, name: String| Evaluation { kind, name, selectors: vec![], aggregate: None, collect_resources: true };
    let mut results: Vec<Evaluated> = services
        .chunks(MAX_MATCHING)
        .enumerate()
        .map(|(k, chunk)| {
            let source = definition(EvaluationKind::EventSource, format!("load-balancers-{k}"));
            Evaluated::event(&source, Ok((Collected::of(chunk, true).expect("within the bounds"), String::new())))
        })
        .collect();
    let health = definition(EvaluationKind::HealthCheck, "deployment-replicas".into());
    let judged = (0..5)
        .map(|i| {
            let deployment =
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": format!("app-{i}"), "namespace": "web"}});
            let (status, message) =
                if i == 0 { (HealthStatus::Degraded, "0 of 2 replicas available") } else { (HealthStatus::Healthy, "") };
            ResourceHealth::judged(&deployment, status, message.into(), None)
        })
        .collect();
    results.push(Evaluated { health: Some(judged), ..Evaluated::of(&health, Ok((false, "1 of 5 objects not healthy".into()))) });
    results
}
