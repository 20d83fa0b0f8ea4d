//! The registry store's reports and its conditional reads, against the real registry of
//! `hack/registry.sh` behind a proxy that logs every request (`airlock_e2e::fault_proxy`): a
//! cluster's reports go to `<prefix>/<namespace>/<name>/reports` with a history tag each
//! (bundles-format.md 14.7), and an unchanged bundle or report costs one conditional GET
//! that the registry answers 304 (spec 8, its last paragraph; 14.7.2). An idle scheduled
//! run of a puller that pushes its reports costs the registry that one request and the API
//! server two reads.

use std::time::{Duration, Instant};

use airlock_bundle::testkit::Fixture;
use airlock_bundle::{Limits, SigningKey};
use airlock_e2e::assert_exit;
use airlock_e2e::fault_proxy::Proxy;
use airlock_e2e::puller::{Site, publish_to};
use airlock_store::{Latest, ReportPush, Store, StoreRef};
use jiff::{SignedDuration, Timestamp};

/// A registry store under a prefix of this test, opened through `proxy`.
async fn store(proxy: &Proxy, test: &str) -> (String, Box<dyn Store>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let prefix = format!("airlock-e2e-reports/{test}-{}", std::process::id());
    let reference: StoreRef = format!("oci+http://{}/{prefix}", proxy.addr()).parse().unwrap();
    (prefix, airlock_store::open(&reference, &Default::default()).await.unwrap())
}

/// The requests the proxy passed since `from`, once there are `expected` of them or a
/// second has passed, and a moment later: the proxy logs a request when the response has
/// passed, which may be after the client has read it.
async fn requests_since(proxy: &Proxy, from: usize, expected: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(1);
    while proxy.events().len() < from + expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy.events()[from..].to_vec()
}

/// The number of requests the proxy has logged once no more arrive for a moment: what
/// an earlier call sent is counted before a measurement starts, not inside it.
async fn settled(proxy: &Proxy) -> usize {
    let mut seen = proxy.events().len();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = proxy.events().len();
        if now == seen {
            return now;
        }
        seen = now;
    }
}

#[tokio::test]
async fn an_unchanged_bundle_costs_the_registry_one_conditional_request() {
    let proxy = Proxy::http(&airlock_e2e::service_env("AIRLOCK_REGISTRY")).await;
    let (_, publisher) = store(&proxy, "unchanged").await;
    let fixture = Fixture::new(1);
    publisher.publish(&[fixture.signed(1, Fixture::files())], &Default::default()).await.unwrap();
    let first = publisher.fetch_envelope(&fixture.cluster, &Limits::SPEC).await.unwrap();
    let known = first.manifest().expect("the registry names the manifest");

    // A new store, as a puller's next run opens one: it knows nothing of tokens yet.
    let (_, puller) = store(&proxy, "unchanged").await;
    let before = settled(&proxy).await;
    assert!(puller.fetch_envelope_unless(&fixture.cluster, &known, &Limits::SPEC).await.unwrap().is_none());
    let requests = requests_since(&proxy, before, 1).await;
    assert_eq!(requests.len(), 1, "one request: {requests:?}");
    assert!(requests[0].starts_with("GET ") && requests[0].contains("/manifests/latest"), "{requests:?}");

    let mut files = Fixture::files();
    files[0].1.extend_from_slice(b"  extra: \"1\"\n");
    publisher.publish(&[fixture.signed(2, files)], &Default::default()).await.unwrap();
    let changed = puller.fetch_envelope_unless(&fixture.cluster, &known, &Limits::SPEC).await.unwrap().expect("a new manifest");
    assert_ne!(changed.manifest(), Some(known));
}

#[tokio::test]
async fn reports_go_to_the_clusters_reports_repository_with_their_history() {
    let proxy = Proxy::http(&airlock_e2e::service_env("AIRLOCK_REGISTRY")).await;
    let (prefix, store) = store(&proxy, "history").await;
    let reports = store.reports().expect("a registry keeps reports");
    let cluster: airlock_bundle::ClusterId = "fleet/edge-1".parse().unwrap();
    assert_eq!(reports.latest_report(&cluster, None, &Limits::SPEC).await.unwrap(), Latest::None);
    let at: Timestamp = "2026-03-01T10:00:00.25Z".parse().unwrap();
    for (i, body) in ["{\"first\":1}", "{\"second\":2}"].into_iter().enumerate() {
        let push = ReportPush {
            cluster: cluster.clone(),
            finished_at: at + SignedDuration::from_mins(i as i64),
            result: "up-to-date".into(),
            envelope: body.as_bytes().to_vec(),
        };
        reports.push_report(&push).await.unwrap();
    }
    let Latest::Report { envelope, mark } = reports.latest_report(&cluster, None, &Limits::SPEC).await.unwrap() else {
        panic!("the newest report")
    };
    assert_eq!(envelope, b"{\"second\":2}");

    let before = settled(&proxy).await;
    assert_eq!(reports.latest_report(&cluster, Some(&mark), &Limits::SPEC).await.unwrap(), Latest::Unchanged);
    let requests = requests_since(&proxy, before, 1).await;
    assert_eq!(requests.len(), 1, "one conditional request: {requests:?}");

    let url = format!("http://{}/v2/{prefix}/fleet/edge-1/reports/tags/list", airlock_e2e::service_env("AIRLOCK_REGISTRY"));
    let tags: serde_json::Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    let mut tags: Vec<String> = serde_json::from_value(tags["tags"].clone()).unwrap();
    tags.sort();
    assert_eq!(tags, ["latest", "r20260301T100000.250Z", "r20260301T100100.250Z"]);
    assert!(store.clusters(&Limits::SPEC).await.unwrap().is_empty(), "a reports repository is no cluster's bundles");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_run_pushing_reports_costs_the_registry_one_request_and_the_api_server_two() {
    let proxy = Proxy::http(&airlock_e2e::service_env("AIRLOCK_REGISTRY")).await;
    let site = Site::new("idle").await;
    let source = format!("oci+http://{}/airlock-e2e-reports/idle-{}", proxy.addr(), site.cluster.name());
    publish_to(&source.parse().unwrap(), &[site.signed(1, site.files(3, "one"), |_| {})]).await;
    let key = site.dir.path().join("report.key");
    std::fs::write(&key, SigningKey::from_seed([7; 32]).to_pkcs8_pem()).unwrap();
    let push = ["--push-reports", "--report-key", key.to_str().unwrap()];

    // Applied, then up to date: each a new outcome, kept and sent.
    for expected in ["applied version 1", "up to date at version 1"] {
        let (run, _) = site.counted_sync_from(&source, &push).await;
        assert_exit(&run, 0);
        assert!(run.stdout.contains(expected), "{run:?}");
    }
    let reports = airlock_store::open(&source.parse().unwrap(), &Default::default()).await.unwrap();
    let Latest::Report { mark, .. } = reports.reports().unwrap().latest_report(&site.cluster, None, &Limits::SPEC).await.unwrap() else {
        panic!("the pushed reports")
    };

    // The idle run: nothing new to apply, to keep or to send.
    let before = settled(&proxy).await;
    let (run, requests) = site.counted_sync_from(&source, &push).await;
    assert_exit(&run, 0);
    assert!(run.stdout.contains("up to date at version 1"), "{run:?}");
    let store = requests_since(&proxy, before, 1).await;
    assert_eq!(store.len(), 1, "one conditional manifest read: {store:?}");
    assert!(store[0].starts_with("GET ") && store[0].contains("/manifests/latest"), "{store:?}");
    let state = format!("GET /api/v1/namespaces/{}/secrets/airlock-state-{}", site.state_ns, site.cluster.name());
    let report = format!("GET /api/v1/namespaces/{}/configmaps/airlock-report-{}", site.state_ns, site.cluster.name());
    assert_eq!(requests, [state, report], "{run:?}");
    let latest = reports.reports().unwrap().latest_report(&site.cluster, Some(&mark), &Limits::SPEC).await.unwrap();
    assert_eq!(latest, Latest::Unchanged, "no report sent");
}
