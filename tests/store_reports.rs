//! The registry store's reports and its conditional reads, against the real registry of
//! `hack/registry.sh` behind a proxy that logs every request (`faults/proxy.rs`): a
//! cluster's reports go to `<prefix>/<namespace>/<name>/reports` with a history tag each
//! (bundles-format.md 14.7), and an unchanged bundle or report costs one conditional GET
//! that the registry answers 304 (spec 8, its last paragraph; 14.7.2).

mod common;
// Shared with the fault suite, which also uses its TCP flavour and its stops.
#[allow(dead_code)]
#[path = "faults/proxy.rs"]
mod proxy;

use airlock_bundle::Limits;
use airlock_bundle::testkit::Fixture;
use airlock_store::{Latest, ReportPush, Store, StoreRef};
use jiff::{SignedDuration, Timestamp};
use proxy::Proxy;

/// A registry store under a prefix of this test, opened through `proxy`.
async fn store(proxy: &Proxy, test: &str) -> (String, Box<dyn Store>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let prefix = format!("airlock-e2e-reports/{test}-{}", std::process::id());
    let reference: StoreRef = format!("oci+http://{}/{prefix}", proxy.addr()).parse().unwrap();
    (prefix, airlock_store::open(&reference, &Default::default()).await.unwrap())
}

/// The requests the proxy passed since `from`.
fn requests_since(proxy: &Proxy, from: usize) -> Vec<String> {
    proxy.events()[from..].to_vec()
}

#[tokio::test]
async fn an_unchanged_bundle_costs_the_registry_one_conditional_request() {
    let proxy = Proxy::http(&common::service_env("AIRLOCK_REGISTRY")).await;
    let (_, publisher) = store(&proxy, "unchanged").await;
    let fixture = Fixture::new(1);
    publisher.publish(&[fixture.signed(1, Fixture::files())], &Default::default()).await.unwrap();
    let first = publisher.fetch_envelope(&fixture.cluster, &Limits::SPEC).await.unwrap();
    let known = first.manifest().expect("the registry names the manifest");

    // A new store, as a puller's next run opens one: it knows nothing of tokens yet.
    let (_, puller) = store(&proxy, "unchanged").await;
    let before = proxy.events().len();
    assert!(puller.fetch_envelope_unless(&fixture.cluster, &known, &Limits::SPEC).await.unwrap().is_none());
    let requests = requests_since(&proxy, before);
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
    let proxy = Proxy::http(&common::service_env("AIRLOCK_REGISTRY")).await;
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

    let before = proxy.events().len();
    assert_eq!(reports.latest_report(&cluster, Some(&mark), &Limits::SPEC).await.unwrap(), Latest::Unchanged);
    let requests = requests_since(&proxy, before);
    assert_eq!(requests.len(), 1, "one conditional request: {requests:?}");

    let url = format!("http://{}/v2/{prefix}/fleet/edge-1/reports/tags/list", common::service_env("AIRLOCK_REGISTRY"));
    let tags: serde_json::Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    let mut tags: Vec<String> = serde_json::from_value(tags["tags"].clone()).unwrap();
    tags.sort();
    assert_eq!(tags, ["latest", "r20260301T100000.250Z", "r20260301T100100.250Z"]);
    assert!(store.clusters(&Limits::SPEC).await.unwrap().is_empty(), "a reports repository is no cluster's bundles");
}
