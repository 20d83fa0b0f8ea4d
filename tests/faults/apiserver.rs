//! The API server gone mid-apply and back, two ways. The shared API server keeps running
//! (other tests use it): the puller reaches it through the byte-forwarding fault proxy,
//! with a kubeconfig whose server is the proxy (the serving certificate's SANs hold
//! 127.0.0.1, so TLS verifies on any port), and the proxy closes every connection and
//! refuses new ones while the apply is under way. And a real kube-apiserver stopped and
//! restarted against the same etcd: the `faults` instance of `hack/kube.sh`, which only
//! this test uses and starts. The test itself watches the cluster directly.

use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use airlock_e2e::fault_proxy::Proxy;
use airlock_e2e::hostile_site::{BASELINE, Site, Snapshot};
use airlock_e2e::{Run, service_env};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};

use super::{
    CLUSTER_LABEL, VERSION_ANNOTATION, Version, assert_applied, assert_converged, changes, publish_layout, site_with_baseline,
    state_version, with_baseline,
};

/// Enough ConfigMaps that the apply takes seconds, as in `puller.rs`'s SIGKILL test.
const MAPS: usize = 600;
/// How a run whose apply failed for some objects ends.
const FAILED_OBJECTS: &str = "object(s) failed to apply: ConfigMap";
/// Short, so the Lease the cut-off run could not release runs out soon.
const LEASE: &str = "--lease-duration=5s";

#[tokio::test(flavor = "multi_thread")]
async fn an_api_server_gone_mid_apply_fails_the_run_and_the_next_run_converges() {
    let (site, source) = site_with_baseline("store", &Version::new(BASELINE, 3, 64)).await;
    let (proxy, kubeconfig) = proxied_kubeconfig(&site).await;
    let via_proxy = [format!("--kubeconfig={kubeconfig}"), LEASE.to_string()];
    let next = Version::new(BASELINE + 1, MAPS, 16);

    let (before, cut) = cut_mid_apply(&site, &source, &via_proxy, &next, "api server gone", || proxy.stop()).await;
    // Every object fails at once on the refused connections, so the engine finishes
    // and the run fails on them, before the Lease renewal gives up.
    assert!(cut.stderr.contains("client error (Connect)"), "{cut:?}");
    assert!(cut.stderr.contains(FAILED_OBJECTS), "{cut:?}");

    proxy.resume().await;
    heal(&site, &source, &via_proxy, &next, &before).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_api_server_restarted_mid_apply_fails_the_run_and_the_next_run_converges() {
    let site = Site::on(faults_instance()).await;
    let (site, source) = with_baseline(site, "store", &Version::new(BASELINE, 3, 64)).await;
    let extra = [LEASE.to_string()];
    let next = Version::new(BASELINE + 1, MAPS, 16);

    let stop = || tokio::task::block_in_place(|| kube_sh("stop-apiserver"));
    let (before, cut) = cut_mid_apply(&site, &source, &extra, &next, "api server stopped", stop).await;
    // The stopping kube-apiserver holds the requests in flight until it is killed (10 s
    // after TERM), longer than the Lease: the run ends on whichever the engine meets
    // first, the failed objects or the lost Lease; either way nothing is recorded.
    let lost = "lost the lease during the apply; nothing was recorded";
    assert!(cut.stderr.contains(lost) || cut.stderr.contains(FAILED_OBJECTS), "{cut:?}");

    tokio::task::block_in_place(|| kube_sh("start"));
    heal(&site, &source, &extra, &next, &before).await;
}

/// Publishes `next`, starts the puller on it, lets it apply some of its ConfigMaps, then
/// `cut`s the API server off. The run must fail (exit 1), naming objects it could not
/// apply, and claim no version ([`heal`] checks the cluster once the server is back).
/// The snapshot from before the run, and the run.
async fn cut_mid_apply(site: &Site, source: &str, extra: &[String], next: &Version, what: &str, cut: impl FnOnce()) -> (Snapshot, Run) {
    publish_layout(site, "store", next.signed(site)).await;
    let before = site.snapshot().await;
    let child = site.sync_command(source, extra).spawn().expect("the puller starts");
    let applied_when_cut = wait_for_apply(site, next.number).await;
    let cut_at = Instant::now();
    cut();
    assert!(applied_when_cut < MAPS, "the apply finished before the API server went away; use a larger bundle");
    let run: Run = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the puller gives up within 2 minutes")
        .expect("the puller ran")
        .into();
    let last_line = run.stderr.lines().last().unwrap_or_default();
    println!("| {what} after {applied_when_cut} of {MAPS} ({:?} to cut) | {:?} | {last_line} |", cut_at.elapsed(), run.code);
    assert_eq!(run.code, Some(1), "a partial apply is a failure: {run:?}");
    assert!(run.stderr.contains("apply failed"), "{run:?}");
    assert!(!run.stdout.contains("applied version"), "{run:?}");
    (before, run)
}

/// With the API server back: the cut-off run left the state at the baseline and changed
/// nothing outside the bundle; the next sync (once its Lease ran out) applies exactly
/// `next`, and nothing outside the inventory changed since `before`.
async fn heal(site: &Site, source: &str, extra: &[String], next: &Version, before: &Snapshot) {
    assert_eq!(state_version(site).await, Some(BASELINE), "the state claims a version not fully applied");
    let outside = not_in(site, next, changes(before, &site.snapshot().await));
    assert!(outside.is_empty(), "objects outside the bundle changed: {outside:?}");

    let healed = sync_when_lease_free(site, source, extra).await;
    assert_applied(&healed, next.number);
    assert_converged(site, next).await;
    let mut outside = not_in(site, next, changes(before, &site.snapshot().await));
    // The puller's own bookkeeping: the state and the inventory it names.
    let own = ["state", "inventory"].map(|what| format!("Secret {}/airlock-{what}-{}", site.state_ns, site.cluster.name()));
    outside.retain(|k| !own.contains(k));
    assert!(outside.is_empty(), "objects outside the inventory changed: {outside:?}");
}

/// The `faults` Kubernetes instance, started once per test process; its kubeconfig.
fn faults_instance() -> String {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| kube_sh("start"));
    format!("{}/kube-faults/kubeconfig", service_env("AIRLOCK_STATE"))
}

/// `hack/kube.sh <command> faults`, with the state directory the test services use.
fn kube_sh(command: &str) {
    let started = Instant::now();
    let out = Command::new(airlock_e2e::root().join("hack/kube.sh"))
        .args([command, "faults"])
        .env("AIRLOCK_STATE", service_env("AIRLOCK_STATE"))
        .output()
        .expect("hack/kube.sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "hack/kube.sh {command} faults failed: {stderr}");
    println!("hack/kube.sh {command} faults: {:?}", started.elapsed());
}

/// A fault proxy in front of the managed API server, and a kubeconfig (in the site's
/// directory) that reaches the server through it.
async fn proxied_kubeconfig(site: &Site) -> (Proxy, String) {
    let original = service_env("AIRLOCK_KUBECONFIG_MANAGED");
    let text = std::fs::read_to_string(&original).expect("kubeconfig readable");
    let config = kube::config::Kubeconfig::from_yaml(&text).expect("kubeconfig parses");
    let server = config.clusters[0].cluster.as_ref().and_then(|c| c.server.clone()).expect("a server URL");
    let upstream = server.strip_prefix("https://").expect("an https server").trim_end_matches('/');
    let proxy = Proxy::tcp(upstream).await;
    let proxied = text.replace(&server, &format!("https://{}", proxy.addr()));
    assert_ne!(proxied, text, "the kubeconfig names its server {server} exactly once");
    let path = site.path("kubeconfig-via-proxy");
    std::fs::write(&path, proxied).expect("kubeconfig written");
    (proxy, path.display().to_string())
}

/// Waits until the puller applied some of `version`'s ConfigMaps; how many.
async fn wait_for_apply(site: &Site, version: u64) -> usize {
    let api = Api::<ConfigMap>::namespaced(site.client.clone(), &site.app_ns);
    let started = Instant::now();
    loop {
        let list = api.list_metadata(&ListParams::default().labels(CLUSTER_LABEL)).await.expect("list ConfigMaps");
        let applied = list
            .items
            .iter()
            .filter(|cm| {
                let annotations = cm.metadata.annotations.as_ref();
                annotations.and_then(|a| a.get(VERSION_ANNOTATION)).is_some_and(|v| *v == version.to_string())
            })
            .count();
        if applied > 0 {
            return applied;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the apply never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The keys among `changed` that are not ConfigMaps of `version` (the only objects the
/// run may write besides its state).
fn not_in(site: &Site, version: &Version, changed: Vec<String>) -> Vec<String> {
    let ours = |k: &String| {
        let name = k.strip_prefix(&format!("ConfigMap {}/", site.app_ns));
        name.is_some_and(|n| version.maps.contains_key(n))
    };
    changed.into_iter().filter(|k| !ours(k)).collect()
}

/// A sync, repeated while the Lease the failed run could not release is still held.
async fn sync_when_lease_free(site: &Site, source: &str, extra: &[String]) -> Run {
    let started = Instant::now();
    loop {
        let run = site.sync(source, extra).await;
        if !(run.code == Some(1) && run.stderr.contains("another puller holds the lease")) {
            return run;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the Lease never ran out: {run:?}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
