//! `airlock-puller` end to end: the real binary, bundles published into OCI layout
//! directories, and the real Kubernetes 1.20 API server of `hack/services.sh`
//! (`AIRLOCK_KUBECONFIG_MANAGED`). These pin the run around the engine: verification
//! refusals with nothing written, no writes when nothing changed, state and Lease, crash
//! recovery, reports; the engine's own behaviour is pinned by `engine.rs`.
//!
//! Every test is its own cluster (`e2e/<unique>`) with its own state namespace and
//! application namespace, so tests run in parallel and reruns never collide; the harness
//! is `airlock_e2e::puller`, and what the puller keeps is read through `airlock_e2e::kept`. Here:
//! a first sync, an unchanged one and drift; `run`. The rest by theme: refusals
//! (`puller/refused.rs`), the commands that write nothing (`puller/offline.rs`), the state
//! and Lease under stress (`puller/recovery.rs`), reports (`puller/reports.rs`), the
//! active window and the publisher's notes (`puller/window.rs`), failures counted across
//! runs (`puller/failures.rs`), the reloader across runs (`puller/reloader.rs`), a part's
//! checks around the apply (`puller/checks.rs`), an offline root recovering from a stolen
//! online key (`puller/root.rs`).

mod checks;
mod failures;
mod offline;
mod recovery;
mod refused;
mod reloader;
mod reports;
mod root;
mod window;

use std::process::Stdio;
use std::time::Duration;

use airlock_bundle::SyncMode;
use airlock_e2e::puller::{Signing, Site, http_get};
use airlock_e2e::{assert_exit, managed_kubeconfig, puller_bin};
use airlock_puller::reports::report::RunResult;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread")]
async fn first_sync_applies_and_an_unchanged_resync_writes_nothing() {
    let site = Site::new("first").await;
    site.publish("store", &[site.signed(1, site.files(3, "one"), |_| {})]).await;
    let first = site.sync("store").await;
    assert_exit(&first, 0);
    assert!(first.stdout.contains("applied version 1"), "{first:?}");
    let cms = site.config_maps().await;
    assert_eq!(cms.keys().collect::<Vec<_>>(), ["cm-0", "cm-1", "cm-2"]);
    assert_eq!(cms["cm-1"].data.as_ref().unwrap()["value"], "one");
    let state = site.state().await.expect("state written");
    assert_eq!(state.version, 1);
    assert_eq!(state.cluster, site.cluster.to_string());
    // The inventory is apart, so an unchanged run reads a small state.
    assert!(state.inventory.is_none() && state.inventory_digest.is_some(), "{state:?}");
    let inventory = site.kept.inventory().await.expect("inventory written");
    assert_eq!((inventory.version, inventory.objects.len()), (1, 4));

    let before = site.versions().await;
    let second = site.sync("store").await;
    assert_exit(&second, 0);
    assert!(second.stdout.contains("up to date at version 1"), "{second:?}");
    assert_eq!(site.versions().await, before, "an unchanged re-sync writes nothing");
    assert_eq!(site.kept_report().await.report.result, RunResult::UpToDate, "the kept report follows the outcome");

    // Once the kept report says so too, a re-sync reads the state and the kept report,
    // and writes nothing at all: no Lease, no report, no server version.
    let kept = site.kept.report_version().await;
    let (third, requests) = site.counted_sync("store").await;
    assert_exit(&third, 0);
    assert!(third.stdout.contains("up to date at version 1"), "{third:?}");
    let state = format!("GET /api/v1/namespaces/{}/secrets/airlock-state-{}", site.state_ns, site.cluster.name());
    let report = format!("GET /api/v1/namespaces/{}/configmaps/airlock-report-{}", site.state_ns, site.cluster.name());
    assert_eq!(requests, [state, report], "{third:?}");
    assert_eq!(site.kept.report_version().await, kept, "the kept report is not rewritten");
    assert_eq!(site.versions().await, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn drift_is_corrected_on_an_unchanged_bundle() {
    let site = Site::new("drift").await;
    let how = Signing { sync_mode: SyncMode::ContinuousWithDriftDetection, ..Signing::default() };
    site.publish("store", &[site.signed_as(1, site.files(3, "one"), how, |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    let state_before = site.versions().await["state"].clone();

    let api = Api::<ConfigMap>::namespaced(site.client.clone(), &site.app_ns);
    let edit = serde_json::json!({"data": {"value": "edited by hand"}});
    api.patch("cm-0", &PatchParams::default(), &Patch::Merge(&edit)).await.expect("edited");
    api.delete("cm-1", &DeleteParams::default()).await.expect("deleted");

    let (run, requests) = site.counted_sync("store").await;
    assert_exit(&run, 0);
    assert!(run.stdout.contains("up to date at version 1 (drift: 2 found, 2 corrected)"), "{run:?}");
    let cms = site.config_maps().await;
    assert_eq!(cms.len(), 3);
    assert!(cms.values().all(|cm| cm.data.as_ref().unwrap()["value"] == "one"), "{cms:?}");
    assert_eq!(site.versions().await["state"], state_before, "drift correction records no new state");
    // At most kinds + 10 requests (Namespace and ConfigMap: 2 kinds). Here: the
    // state, one list per kind (no discovery: the state knows the kinds), the Lease taken
    // and the state read again under it, two corrections, the Lease released, the server
    // version and the kept report.
    let discovery = |r: &&String| r.as_str() == "GET /api/v1" || (r.starts_with("GET /apis/") && r.split('/').count() <= 4);
    assert_eq!(requests.iter().filter(discovery).count(), 0, "no discovery: {requests:?}");
    let patches = requests.iter().filter(|r| r.starts_with("PATCH ")).count();
    assert_eq!(patches, 3, "two corrections and the kept report: {requests:?}");
    assert!(requests.len() <= 2 + 10, "{} requests: {requests:?}", requests.len());

    // Nothing drifted: the state, the lists and the kept report (rewritten, since the last
    // one reported the corrections); then the same without the rewrite.
    let (quiet, requests) = site.counted_sync("store").await;
    assert_exit(&quiet, 0);
    assert!(quiet.stdout.contains("up to date at version 1"), "{quiet:?}");
    assert!(requests.len() <= 6, "{requests:?}");
    let (quiet, requests) = site.counted_sync("store").await;
    assert_exit(&quiet, 0);
    assert_eq!(requests.len(), 4, "the state, two lists, the kept report: {requests:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn run_serves_health_and_metrics_and_stops_on_sigterm() {
    let site = Site::new("run").await;
    site.publish("store", &[site.signed(1, site.files(2, "one"), |_| {})]).await;
    let config = site.dir.path().join("settings.json");
    let settings = serde_json::json!({
        "source": format!("oci-layout:{}", site.layout("store").display()),
        "cluster": site.cluster.to_string(),
        "keyring": site.dir.path().join("keyring.json"),
        "stateNamespace": site.state_ns,
    });
    std::fs::write(&config, settings.to_string()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(puller_bin())
        .args(["run", "--interval", "2s", "--lease-duration", "6s", "--metrics-addr", &format!("127.0.0.1:{port}")])
        .arg("--config")
        .arg(&config)
        .env("KUBECONFIG", managed_kubeconfig())
        .env("AIRLOCK_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("puller starts");

    let started = std::time::Instant::now();
    let healthy = loop {
        match http_get(port, "/healthz").await {
            Some(r) if r.starts_with("HTTP/1.1 200") => break r,
            _ if started.elapsed() > Duration::from_secs(30) => panic!("never healthy"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    assert!(healthy.ends_with("ok\n"), "{healthy}");
    assert_eq!(site.config_maps().await.len(), 2, "the first run applied the bundle");
    // Wait for a second run, then read the metrics.
    let ok_runs = |metrics: &str| {
        metrics.lines().find_map(|l| l.strip_prefix("airlock_sync_runs_total{result=\"ok\"} ")).and_then(|n| n.parse::<u64>().ok())
    };
    let metrics = loop {
        let metrics = http_get(port, "/metrics").await.expect("metrics answer");
        match ok_runs(&metrics) {
            Some(runs) if runs >= 2 => break metrics,
            _ if started.elapsed() > Duration::from_secs(60) => panic!("no second run within a minute: {metrics}"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    assert!(metrics.contains("airlock_applied_version 1\n"), "{metrics}");
    assert!(metrics.contains("airlock_sync_runs_total{result=\"error\"} 0\n"), "{metrics}");
    assert!(metrics.contains("airlock_bundle_expires_timestamp_seconds "), "{metrics}");

    let pid = child.id().expect("running").to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("stops on SIGTERM").unwrap();
    assert_eq!(status.code(), Some(0));
    let lease = Api::<Lease>::namespaced(site.client.clone(), &site.state_ns).get(&site.kept.name("airlock-puller-")).await.expect("lease");
    assert_eq!(lease.spec.unwrap().holder_identity, None, "the lease is released");
}
