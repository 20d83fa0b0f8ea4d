//! The API server unreachable mid-apply and back. The shared API server keeps running
//! (other tests use it): the puller reaches it through the byte-forwarding fault proxy,
//! with a kubeconfig whose server is the proxy (the serving certificate's SANs hold
//! 127.0.0.1, so TLS verifies on any port), and the proxy closes every connection and
//! refuses new ones while the apply is under way, which is what the puller sees of an
//! API server that stopped. The test itself watches the cluster directly.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};

use crate::common::{Run, service_env};
use crate::proxy::Proxy;
use crate::site::{BASELINE, Site};
use crate::{
    CLUSTER_LABEL, VERSION_ANNOTATION, Version, assert_applied, assert_converged, changes, publish_layout,
    site_with_baseline, state_version,
};

/// Enough ConfigMaps that the apply takes seconds, as in `puller.rs`'s SIGKILL test.
const MAPS: usize = 600;
/// Short, so the Lease the cut-off run could not release runs out soon.
const LEASE: &str = "--lease-duration=5s";

#[tokio::test(flavor = "multi_thread")]
async fn an_api_server_gone_mid_apply_fails_the_run_and_the_next_run_converges() {
    let (site, source) = site_with_baseline("store", &Version::new(BASELINE, 3, 64)).await;

    let (proxy, kubeconfig) = proxied_kubeconfig(&site).await;
    let via_proxy = [format!("--kubeconfig={kubeconfig}"), LEASE.to_string()];
    let next = Version::new(BASELINE + 1, MAPS, 16);
    publish_layout(&site, "store", next.signed(&site)).await;
    let before = site.snapshot().await;

    let child = site.sync_command(&source, &via_proxy).spawn().expect("the puller starts");
    let applied_when_cut = wait_for_apply(&site, next.number).await;
    proxy.stop();
    assert!(applied_when_cut < MAPS, "the apply finished before the API server went away; use a larger bundle");
    let cut: Run = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the puller gives up within 2 minutes")
        .expect("the puller ran")
        .into();
    println!("| api server gone after {applied_when_cut} of {MAPS} | {:?} | {} |", cut.code, last_line(&cut));
    assert_eq!(cut.code, Some(1), "a partial apply is a failure: {cut:?}");
    // Each object that could not be applied is named with the cause, then the run fails.
    assert!(cut.stderr.contains("apply failed") && cut.stderr.contains("client error (Connect)"), "{cut:?}");
    assert!(cut.stderr.contains("object(s) failed to apply: ConfigMap"), "{cut:?}");
    assert!(!cut.stdout.contains("applied version"), "{cut:?}");
    assert_eq!(state_version(&site).await, Some(BASELINE), "the state claims a version not fully applied");
    let partial = site.snapshot().await;
    let outside = not_in(&site, &next, changes(&before, &partial));
    assert!(outside.is_empty(), "objects outside the bundle changed: {outside:?}");

    proxy.resume().await;
    let healed = sync_when_lease_free(&site, &source, &via_proxy).await;
    assert_applied(&healed, next.number);
    assert_converged(&site, &next).await;
    let mut outside = not_in(&site, &next, changes(&before, &site.snapshot().await));
    let state_secret = format!("Secret {}/airlock-state-{}", site.state_ns, site.cluster.name());
    outside.retain(|k| *k != state_secret);
    assert!(outside.is_empty(), "objects outside the inventory changed: {outside:?}");
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

fn last_line(run: &Run) -> &str {
    run.stderr.lines().last().unwrap_or_default()
}
