//! The OCI registry store against the real registries of `hack/services.sh`
//! (Distribution 2.8): plain on `$AIRLOCK_REGISTRY`, htpasswd on `$AIRLOCK_REGISTRY_AUTH`.
//! Every test writes under its own repository prefix, so reruns never collide.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use airlock_bundle::{Bundle, ClusterSettings, Expectation, Floor, Keyring, PartSettings, Release, SignedBundle, SigningKey, sign};
use airlock_bundle::{ClusterId, Limits};
use airlock_store::oci::{self, GzipCache};
use airlock_store::{Fetch, FetchError, OciManifest, PublishMeta, RegistryCredentials, Store, StoreError, StoreRef};
use base64::Engine;
use jiff::{SignedDuration, Timestamp};

const SHARED: &str = "ClusterProfile.base";

fn setup() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A repository prefix no other test or earlier run has used.
fn unique_prefix(test: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("airlock-e2e/{test}-{}-{}-{n}", Timestamp::now().as_second(), std::process::id())
}

async fn open(host: &str, prefix: &str, credentials: &RegistryCredentials) -> Box<dyn Store> {
    let reference = StoreRef::OciRegistry { host: host.into(), prefix: prefix.into(), plain_http: true };
    airlock_store::open(&reference, credentials).await.expect("store opens")
}

fn plain_host() -> String {
    airlock_e2e::service_env("AIRLOCK_REGISTRY")
}

fn config_map(name: &str, data: &str) -> Vec<u8> {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  value: \"{data}\"\n").into_bytes()
}

/// A bundle for `cluster` with the shared part and one part of its own, signed by `key`.
fn signed(key: &SigningKey, cluster: &ClusterId, version: u64, own: &str) -> SignedBundle {
    let own_part = format!("ClusterProfile.{}", cluster.name());
    let files = vec![
        (format!("{SHARED}/ConfigMap.default.base.yaml"), config_map("base", "same everywhere")),
        (format!("{own_part}/ConfigMap.default.own.yaml"), config_map("own", own)),
    ];
    let bundle = Bundle::new([SHARED.to_string(), own_part], files, &Limits::SPEC).expect("valid bundle");
    let now = Timestamp::from_second(Timestamp::now().as_second()).expect("valid time");
    let release = Release {
        cluster: cluster.clone(),
        version,
        issued_at: now,
        expires: now.checked_add(SignedDuration::from_hours(1)).expect("valid time"),
        keyring_version: 1,
        settings: ClusterSettings::default(),
        decommission: false,
    };
    sign::sign(bundle, &release, &|_| PartSettings::default(), std::slice::from_ref(key), None)
}

fn keyring(key: &SigningKey) -> Keyring {
    Keyring::new(1, 1, vec![key.public()], &Limits::SPEC).expect("valid keyring")
}

async fn fetch(store: &dyn Store, cluster: &ClusterId, keyring: &Keyring, floor: &Floor) -> Result<Fetch, FetchError> {
    let expect = Expectation { cluster, keyring, floor, now: Timestamp::now() };
    airlock_store::fetch_verified(store, &expect, &Limits::SPEC).await
}

/// The registry's answer for a manifest: its bytes and `Docker-Content-Digest`.
async fn manifest(host: &str, repository: &str, tag: &str) -> (Vec<u8>, String) {
    let response = reqwest::Client::new()
        .get(format!("http://{host}/v2/{repository}/manifests/{tag}"))
        .header("Accept", oci::MANIFEST_MEDIA_TYPE)
        .send()
        .await
        .expect("registry answers");
    assert_eq!(response.status(), 200, "manifest {repository}:{tag}");
    let digest = response.headers()["Docker-Content-Digest"].to_str().expect("ascii").to_string();
    (response.bytes().await.expect("body").to_vec(), digest)
}

async fn put_manifest(host: &str, repository: &str, tag: &str, bytes: Vec<u8>) {
    let response = reqwest::Client::new()
        .put(format!("http://{host}/v2/{repository}/manifests/{tag}"))
        .header("Content-Type", oci::MANIFEST_MEDIA_TYPE)
        .body(bytes)
        .send()
        .await
        .expect("registry answers");
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap_or_default());
}

async fn blob_exists(host: &str, repository: &str, digest: &str) -> bool {
    let url = format!("http://{host}/v2/{repository}/blobs/{digest}");
    reqwest::Client::new().head(url).send().await.expect("registry answers").status() == 200
}

/// Debug events of `airlock_store` from every test of this process, as text. One global
/// subscriber, installed once: a thread-local one (`set_default`) races with the callsite
/// interest cache when tests run in parallel, and then captures nothing. Tests pick their
/// own lines by their unique repository prefix.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    static LOGS: std::sync::OnceLock<Arc<Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = logs.clone();
        tracing_subscriber::fmt().with_env_filter("airlock_store=debug").with_ansi(false).with_writer(move || Sink(sink.clone())).init();
        logs
    })
    .clone()
}

#[tokio::test]
async fn two_clusters_share_a_part_and_round_trip() {
    setup();
    let (host, prefix) = (plain_host(), unique_prefix("share"));
    let store = open(&host, &prefix, &RegistryCredentials::default()).await;
    let key = SigningKey::from_seed([11; 32]);
    let clusters: Vec<ClusterId> = ["fleet/edge-a", "fleet/edge-b"].iter().map(|c| c.parse().unwrap()).collect();
    let bundles: Vec<SignedBundle> = clusters.iter().map(|c| signed(&key, c, 1, c.name())).collect();
    let meta = PublishMeta { source: Some("https://git.example/profiles".into()), revision: Some("abc123".into()) };

    let logs = captured_logs();
    store.publish(&bundles, &meta).await.expect("publish");

    let shared_digest = bundles[0].statement.predicate.profiles.iter().find(|p| p.name == SHARED).unwrap().digest;
    let mut shared_layers = Vec::new();
    for (cluster, signed) in clusters.iter().zip(&bundles) {
        let Fetch::New(verified) = fetch(store.as_ref(), cluster, &keyring(&key), &Floor::default()).await.expect("fetch") else {
            panic!("a first fetch is never already applied");
        };
        assert_eq!(verified.bundle(), &signed.bundle);
        assert_eq!(verified.predicate().version, 1);

        // The registry holds the artifact's exact bytes under both tags.
        let artifact = oci::artifact(signed, &meta, &GzipCache::default());
        let repository = format!("{prefix}/{cluster}");
        for tag in ["v1", "latest"] {
            let (bytes, digest) = manifest(&host, &repository, tag).await;
            assert_eq!(bytes, artifact.manifest_bytes, "{repository}:{tag}");
            assert_eq!(digest, artifact.manifest_digest.to_string());
        }
        let stored: OciManifest = serde_json::from_slice(&artifact.manifest_bytes).unwrap();
        let layer = stored.part_layer(&shared_digest).expect("shared part layer").digest.to_string();
        assert!(blob_exists(&host, &repository, &layer).await);
        shared_layers.push(layer);
    }
    assert_eq!(shared_layers[0], shared_layers[1], "an identical part is one blob");

    // Uploaded into one repository, mounted into the other.
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let events: Vec<&str> = logs.lines().filter(|l| l.contains(&prefix) && l.contains(&shared_layers[0])).collect();
    assert_eq!(events.iter().filter(|l| l.contains("uploaded")).count(), 1, "{logs}");
    assert_eq!(events.iter().filter(|l| l.contains("mounted")).count(), 1, "{logs}");

    assert_eq!(store.clusters(&Limits::SPEC).await.expect("catalog"), clusters);
    assert!(store.describe().starts_with("oci+http://") && store.describe().ends_with(&prefix));
}

/// Listing a prefix's clusters reads the catalog from the prefix on and stops past it: a
/// shared registry holds many more repositories (here every earlier test's) than one
/// prefix, and Distribution walks its storage for every page.
#[tokio::test]
async fn the_catalog_is_read_from_the_prefix_and_no_further() {
    setup();
    let logs = captured_logs();
    let (host, prefix) = (plain_host(), unique_prefix("catalog"));
    let key = SigningKey::from_seed([12; 32]);
    let ours: Vec<ClusterId> = ["fleet/a", "fleet/b"].iter().map(|c| c.parse().unwrap()).collect();
    // A sibling that sorts after the prefix's repositories by path, before them by bytes.
    let sibling: ClusterId = "fleet/sibling".parse().unwrap();
    for (prefix, clusters) in [(prefix.clone(), ours.clone()), (format!("{prefix}-b"), vec![sibling.clone()])] {
        let bundles: Vec<SignedBundle> = clusters.iter().map(|c| signed(&key, c, 1, c.name())).collect();
        let store = open(&host, &prefix, &RegistryCredentials::default()).await;
        store.publish(&bundles, &PublishMeta::default()).await.expect("publish");
    }

    let store = open(&host, &prefix, &RegistryCredentials::default()).await;
    assert_eq!(store.clusters(&Limits::SPEC).await.expect("catalog"), ours);
    let sibling_store = open(&host, &format!("{prefix}-b"), &RegistryCredentials::default()).await;
    assert_eq!(sibling_store.clusters(&Limits::SPEC).await.expect("catalog"), [sibling]);
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let reads: Vec<&str> = logs.lines().filter(|l| l.contains("catalog read") && l.contains(&prefix)).collect();
    assert_eq!(reads.len(), 2, "{logs}");
    assert!(reads.iter().all(|l| l.contains("pages=1")), "one page each: {reads:?}");
}

/// A batch pushes each bundle as it is added (a registry has no index to write last), and
/// a part shared across the batch's additions is uploaded once and mounted after.
#[tokio::test]
async fn a_batch_pushes_as_it_goes_and_uploads_a_shared_part_once() {
    setup();
    let (host, prefix) = (plain_host(), unique_prefix("batch"));
    let store = open(&host, &prefix, &RegistryCredentials::default()).await;
    let key = SigningKey::from_seed([12; 32]);
    let clusters: Vec<ClusterId> = ["fleet/edge-a", "fleet/edge-b"].iter().map(|c| c.parse().unwrap()).collect();
    let bundles: Vec<SignedBundle> = clusters.iter().map(|c| signed(&key, c, 1, c.name())).collect();
    let meta = PublishMeta::default();
    let logs = captured_logs();
    let mut batch = store.batch(&meta);
    batch.add(vec![bundles[0].clone()]).await.expect("first addition");
    assert!(matches!(fetch(store.as_ref(), &clusters[0], &keyring(&key), &Floor::default()).await, Ok(Fetch::New(_))));
    batch.add(vec![bundles[1].clone()]).await.expect("second addition");
    batch.commit().await.expect("commit");
    for cluster in &clusters {
        assert!(matches!(fetch(store.as_ref(), cluster, &keyring(&key), &Floor::default()).await, Ok(Fetch::New(_))), "{cluster}");
    }
    let shared = bundles[0].statement.predicate.profiles.iter().find(|p| p.name == SHARED).unwrap().digest;
    let manifest: OciManifest = serde_json::from_slice(&oci::artifact(&bundles[0], &meta, &GzipCache::default()).manifest_bytes).unwrap();
    let layer = manifest.part_layer(&shared).expect("shared part layer").digest.to_string();
    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let events: Vec<&str> = logs.lines().filter(|l| l.contains(&prefix) && l.contains(&layer)).collect();
    assert_eq!(events.iter().filter(|l| l.contains("uploaded")).count(), 1, "{logs}");
    assert_eq!(events.iter().filter(|l| l.contains("mounted")).count(), 1, "{logs}");
}

#[tokio::test]
async fn republishing_moves_latest() {
    setup();
    let (host, prefix) = (plain_host(), unique_prefix("republish"));
    let store = open(&host, &prefix, &RegistryCredentials::default()).await;
    let key = SigningKey::from_seed([12; 32]);
    let cluster: ClusterId = "fleet/edge-c".parse().unwrap();
    let meta = PublishMeta::default();
    let v1 = signed(&key, &cluster, 1, "first");
    let v2 = signed(&key, &cluster, 2, "second");
    store.publish(std::slice::from_ref(&v1), &meta).await.expect("publish v1");
    store.publish(std::slice::from_ref(&v2), &meta).await.expect("publish v2");

    let repository = format!("{prefix}/{cluster}");
    let (_, d1) = manifest(&host, &repository, "v1").await;
    let (_, d2) = manifest(&host, &repository, "v2").await;
    let (_, latest) = manifest(&host, &repository, "latest").await;
    assert_ne!(d1, d2);
    assert_eq!(latest, d2);
    assert_eq!(d2, oci::artifact(&v2, &meta, &GzipCache::default()).manifest_digest.to_string());

    let Fetch::New(verified) = fetch(store.as_ref(), &cluster, &keyring(&key), &Floor::default()).await.unwrap() else {
        panic!("nothing applied yet");
    };
    assert_eq!(verified.predicate().version, 2);
    let floor = Floor { applied: Some((2, v2.digest())), highest_issued_at: None, keyring_version: None };
    let again = fetch(store.as_ref(), &cluster, &keyring(&key), &floor).await.unwrap();
    assert!(matches!(again, Fetch::AlreadyApplied(_)), "same version and digest fetch no content");
}

#[tokio::test]
async fn credentials_on_an_htpasswd_registry() {
    setup();
    let host = airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH");
    let user = airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH_USER");
    let password = airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH_PASSWORD");
    let prefix = unique_prefix("auth");
    let key = SigningKey::from_seed([13; 32]);
    let cluster: ClusterId = "fleet/edge-d".parse().unwrap();
    let bundle = signed(&key, &cluster, 1, "guarded");

    // An empty config.json, so the machine's own Docker login cannot help.
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "{}").unwrap();
    let anonymous = RegistryCredentials { docker_config: Some(empty), ..Default::default() };
    let store = open(&host, &prefix, &anonymous).await;
    let refused = store.publish(std::slice::from_ref(&bundle), &PublishMeta::default()).await;
    assert!(matches!(refused, Err(StoreError::Config { .. })), "{refused:?}");
    let refused = store.fetch_envelope(&cluster, &Limits::SPEC).await;
    assert!(matches!(refused, Err(StoreError::Config { .. })), "{refused:?}");

    let wrong = RegistryCredentials { username: Some(user.clone()), password: Some("wrong".into()), ..Default::default() };
    let refused = open(&host, &prefix, &wrong).await.fetch_envelope(&cluster, &Limits::SPEC).await;
    let Err(StoreError::Config { message, .. }) = refused else { panic!("{refused:?}") };
    assert!(!message.contains("wrong"), "no secret in {message}");

    let basic = RegistryCredentials { username: Some(user.clone()), password: Some(password.clone()), ..Default::default() };
    let store = open(&host, &prefix, &basic).await;
    store.publish(std::slice::from_ref(&bundle), &PublishMeta::default()).await.expect("publish with credentials");
    assert!(matches!(fetch(store.as_ref(), &cluster, &keyring(&key), &Floor::default()).await, Ok(Fetch::New(_))));
    assert_eq!(store.clusters(&Limits::SPEC).await.expect("catalog"), vec![cluster.clone()]);

    // The same login through a Docker config.json.
    let config = dir.path().join("config.json");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    std::fs::write(&config, serde_json::json!({ "auths": { &host: { "auth": auth } } }).to_string()).unwrap();
    let docker = RegistryCredentials { docker_config: Some(config), ..Default::default() };
    let store = open(&host, &prefix, &docker).await;
    assert!(matches!(fetch(store.as_ref(), &cluster, &keyring(&key), &Floor::default()).await, Ok(Fetch::New(_))));
}

#[tokio::test]
async fn an_unknown_cluster_is_not_found() {
    setup();
    let store = open(&plain_host(), &unique_prefix("unknown"), &RegistryCredentials::default()).await;
    let cluster: ClusterId = "fleet/nobody".parse().unwrap();
    match store.fetch_envelope(&cluster, &Limits::SPEC).await {
        Err(StoreError::NotFound { what, .. }) => assert_eq!(what, "bundle for fleet/nobody"),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.clusters(&Limits::SPEC).await.unwrap(), vec![]);
}

#[tokio::test]
async fn a_layer_that_does_not_match_is_refused() {
    setup();
    let (host, prefix) = (plain_host(), unique_prefix("tamper"));
    let store = open(&host, &prefix, &RegistryCredentials::default()).await;
    let key = SigningKey::from_seed([14; 32]);
    let cluster: ClusterId = "fleet/edge-e".parse().unwrap();
    // Hex does not compress below half: the part's blob is well over 4 KiB.
    let noise: String = (0..1000u32).map(|i| format!("{:016x}", u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15))).collect();
    let bundle = signed(&key, &cluster, 1, &noise);
    let meta = PublishMeta::default();
    store.publish(std::slice::from_ref(&bundle), &meta).await.expect("publish");
    let own = bundle.statement.predicate.profiles.iter().find(|p| p.name != SHARED).unwrap().clone();

    // A signed size far below the blob: the transport cap refuses it before downloading.
    let fetched = store.fetch_envelope(&cluster, &Limits::SPEC).await.expect("envelope");
    let small = airlock_bundle::statement::ProfileEntry { size: 0, ..own.clone() };
    let refused = store.fetch_part(&cluster, &fetched, &small, &Limits::SPEC).await;
    assert!(matches!(&refused, Err(StoreError::Malformed { what, .. }) if what.contains("sha256:")), "{refused:?}");

    // A descriptor whose size does not match its blob.
    let artifact = oci::artifact(&bundle, &meta, &GzipCache::default());
    let repository = format!("{prefix}/{cluster}");
    let mut lying = artifact.manifest.clone();
    let layer = lying.layers.iter_mut().find(|l| l.annotations.get(oci::PART_DIGEST) == Some(&own.digest.to_string())).unwrap();
    layer.size -= 1;
    let layer_digest = layer.digest.to_string();
    put_manifest(&host, &repository, "latest", serde_json::to_vec(&lying).unwrap()).await;
    let fetched = store.fetch_envelope(&cluster, &Limits::SPEC).await.expect("envelope");
    match store.fetch_part(&cluster, &fetched, &own, &Limits::SPEC).await {
        Err(StoreError::Malformed { what, .. }) => assert!(what.contains(&layer_digest), "{what}"),
        other => panic!("{other:?}"),
    }

    // A part layer pointing at another blob (the envelope): served intact, rejected by
    // verification.
    let mut swapped = artifact.manifest.clone();
    let envelope = swapped.layers[0].clone();
    let layer = swapped.layers.iter_mut().find(|l| l.annotations.get(oci::PART_DIGEST) == Some(&own.digest.to_string())).unwrap();
    (layer.digest, layer.size) = (envelope.digest, envelope.size);
    put_manifest(&host, &repository, "latest", serde_json::to_vec(&swapped).unwrap()).await;
    let rejected = fetch(store.as_ref(), &cluster, &keyring(&key), &Floor::default()).await;
    assert!(matches!(rejected, Err(FetchError::Rejected { .. })), "{rejected:?}");
}

#[tokio::test]
async fn an_unreachable_registry_is_unavailable() {
    setup();
    // Port 9 (discard) is closed on the test machine.
    let store = open("127.0.0.1:9", "x", &RegistryCredentials::default()).await;
    let cluster: ClusterId = "fleet/edge-f".parse().unwrap();
    let result = store.fetch_envelope(&cluster, &Limits::SPEC).await;
    assert!(matches!(result, Err(StoreError::Unavailable { .. })), "{result:?}");
}
