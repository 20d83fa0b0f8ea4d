//! `airlock-puller` end to end: the real binary, bundles published into OCI layout
//! directories, and the real Kubernetes 1.20 API server of `hack/services.sh`
//! (`AIRLOCK_KUBECONFIG_MANAGED`). These pin the run around the engine: verification
//! refusals with nothing written, no writes when nothing changed, state and Lease, crash
//! recovery, reports; the engine's own behaviour is pinned by `engine.rs`.
//!
//! Every test is its own cluster (`e2e/<unique>`) with its own state namespace and
//! application namespace, so tests run in parallel and reruns never collide; the harness
//! is `common::puller`, and what the puller keeps is read through `common::kept`.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use airlock_bundle::envelope::REPORT_PAYLOAD_TYPE;
use airlock_bundle::{ClusterId, Limits};
use airlock_bundle::{Keyring, SigningKey, SyncMode, envelope, keyring};
use airlock_puller::report::{Report, RunResult};
use airlock_store::StoreRef;
use common::puller::{Signing, Site, assert_refused, http_get, publish_to};
use common::{Run, assert_exit, managed_kubeconfig, puller_bin};
use jiff::SignedDuration;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
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
async fn a_rollback_is_refused_and_changes_nothing() {
    let site = Site::new("rollback").await;
    let v1 = site.signed(1, site.files(2, "one"), |_| {});
    site.publish("store", std::slice::from_ref(&v1)).await;
    assert_exit(&site.sync("store").await, 0);
    site.publish("store", &[site.signed(2, site.files(2, "two"), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    let before = site.versions().await;

    site.publish("old", &[v1]).await;
    let run = site.sync("old").await;
    assert_refused(&run, "rollback");
    assert_eq!(site.versions().await, before);
    assert_eq!(site.state_version().await, Some(2));

    // Offline, against a copy of the state, verify sees the same.
    let state_file = site.dir.path().join("state.json.gz");
    std::fs::write(&state_file, site.kept.state_bytes().await.expect("state")).unwrap();
    let state_arg = format!("--state={}", state_file.display());
    assert_refused(&site.run("verify", "old", &[&state_arg]).await, "rollback");
    let current = site.run("verify", "store", &[&state_arg]).await;
    assert_exit(&current, 0);
    assert!(current.stdout.contains("OK (the version the state says is applied)"), "{current:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_bundle_is_refused() {
    let site = Site::new("expired").await;
    let expired = site.signed(1, site.files(1, "one"), |r| {
        r.issued_at -= SignedDuration::from_hours(2);
        r.expires = r.issued_at + SignedDuration::from_hours(1);
    });
    site.publish("store", &[expired]).await;
    let run = site.sync("store").await;
    assert_refused(&run, "expired");
    site.assert_untouched("nothing written").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tampered_blob_is_refused() {
    let site = Site::new("tampered").await;
    site.publish("store", &[site.signed(1, site.files(5, "one"), |_| {})]).await;
    // The largest blob is the part: flip a byte in the middle of it.
    let blobs = site.layout("store").join("blobs/sha256");
    let biggest =
        std::fs::read_dir(&blobs).unwrap().map(|e| e.unwrap().path()).max_by_key(|p| std::fs::metadata(p).unwrap().len()).unwrap();
    let mut bytes = std::fs::read(&biggest).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&biggest, bytes).unwrap();

    let run = site.sync("store").await;
    assert!(matches!(run.code, Some(1 | 3)), "{run:?}");
    site.assert_untouched("nothing written").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn another_clusters_bundle_is_refused() {
    let site = Site::new("wrong").await;
    let other: ClusterId = format!("e2e/other-{}", site.cluster.name()).parse().unwrap();
    let bundle = site.signed(1, site.files(1, "one"), |r| r.cluster = other.clone());
    site.publish("store", &[bundle]).await;
    // Serve the other cluster's bundle under this cluster's name.
    let index = site.layout("store").join("index.json");
    let text = std::fs::read_to_string(&index).unwrap().replace(&format!("{other}:"), &format!("{}:", site.cluster));
    std::fs::write(&index, text).unwrap();

    let run = site.sync("store").await;
    assert_refused(&run, &format!("bundle is for cluster {other}"));
    site.assert_untouched("nothing written").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_prints_every_cluster_and_touches_no_cluster() {
    let site = Site::new("verify").await;
    let second: ClusterId = format!("e2e/second-{}", site.cluster.name()).parse().unwrap();
    let mine = site.signed(3, site.files(2, "one"), |_| {});
    let theirs = site.signed(1, site.files(1, "two"), |r| r.cluster = second.clone());
    let bundles = [mine, theirs];
    site.publish("store", &bundles).await;

    let one = site.run("verify", "store", &["--kubeconfig", "/nonexistent/kubeconfig"]).await;
    assert_exit(&one, 0);
    for want in [
        format!("cluster {}: OK", site.cluster),
        "  version:   3".to_string(),
        format!("  signers:   {}", site.fixture.keys[0].public().key_id()),
        "ClusterProfile.app  syncMode=Continuous tier=100".to_string(),
        format!("ConfigMap {}/cm-1", site.app_ns),
        format!("Namespace {}", site.app_ns),
    ] {
        assert!(one.stdout.contains(&want), "{want:?} missing in {one:?}");
    }
    assert!(one.stdout.contains("expires:   ") && one.stdout.contains("issuedAt:  "), "{one:?}");

    // An archive, without --cluster: every cluster it holds.
    let archive = site.dir.path().join("update.tar");
    publish_to(&StoreRef::OciArchive(archive.clone()), &bundles).await;
    let mut all = Command::new(puller_bin());
    all.arg("verify")
        .arg(format!("--source=oci-archive:{}", archive.display()))
        .arg("--keyring")
        .arg(site.dir.path().join("keyring.json"))
        .env("AIRLOCK_LOG", "warn");
    let all: Run = all.output().await.unwrap().into();
    assert_exit(&all, 0);
    assert!(
        all.stdout.contains(&format!("cluster {}: OK", site.cluster)) && all.stdout.contains(&format!("cluster {second}: OK")),
        "{all:?}"
    );

    let floor = site.run("verify", "store", &["--floor", "4"]).await;
    assert_refused(&floor, "older than --floor 4");
    site.assert_untouched("verify wrote nothing").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_shows_changes_and_writes_nothing() {
    let site = Site::new("plan").await;
    site.publish("store", &[site.signed(1, site.files(2, "one"), |_| {})]).await;
    let first = site.run("plan", "store", &[]).await;
    assert_exit(&first, 0);
    assert!(first.stdout.contains("wouldCreate") && first.stdout.contains(&format!("ConfigMap {}/cm-0", site.app_ns)), "{first:?}");
    site.assert_untouched("plan wrote nothing").await;

    assert_exit(&site.sync("store").await, 0);
    site.publish("store", &[site.signed(2, site.files(1, "two"), |_| {})]).await;
    let before = site.versions().await;
    let second = site.run("plan", "store", &[]).await;
    assert_exit(&second, 0);
    assert!(second.stdout.contains("wouldConfigure") && second.stdout.contains("wouldPrune"), "{second:?}");
    assert_eq!(site.versions().await, before, "plan wrote nothing");

    let dry = site.run("sync", "store", &["--dry-run"]).await;
    assert_exit(&dry, 0);
    assert!(dry.stdout.contains("dry run of version 2, nothing written"), "{dry:?}");
    assert_eq!(site.versions().await, before, "--dry-run wrote nothing");
    assert_eq!(site.state_version().await, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bundle_narrows_watch_namespaces() {
    let site = Site::new("watch").await;
    // Named so that Site's cleanup finds it.
    let outside = format!("{}-x", site.app_ns);
    let mut files = site.files(1, "one");
    files.push((
        format!("ClusterProfile.app/ConfigMap.{outside}.stray.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n  namespace: {outside}\ndata: {{}}\n").into_bytes(),
    ));
    let watch = vec![site.app_ns.clone()];
    site.publish("store", &[site.signed(1, files, |r| r.watch_namespaces = Some(watch))]).await;

    // The local list allows both namespaces; the bundle's narrows it to one.
    let both = format!("{},{outside}", site.app_ns);
    let refused = site.run("sync", "store", &["--watch-namespaces", &both]).await;
    assert_refused(&refused, &format!("ConfigMap {outside}/stray"));
    assert!(site.config_maps().await.is_empty() && site.state().await.is_none(), "nothing applied");

    let filtered = site.run("sync", "store", &["--watch-namespaces", &both, "--namespace-policy", "filter"]).await;
    assert_exit(&filtered, 0);
    assert_eq!(site.config_maps().await.keys().collect::<Vec<_>>(), ["cm-0"]);
    assert!(filtered.stdout.contains("1 refused"), "{filtered:?}");
}

/// A report of 5,000 objects is over 1 MiB, more than a ConfigMap holds. The
/// objects are refused by the namespace policy, so nothing but the Namespace is applied.
#[tokio::test(flavor = "multi_thread")]
async fn a_five_thousand_object_report_is_kept_without_its_object_list() {
    const COUNT: usize = 5_000;
    let site = Site::new("large-report").await;
    let outside = format!("{}-x", site.app_ns);
    let mut files = site.files(0, "");
    files.extend((0..COUNT).map(|i| {
        let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: {outside}\n");
        (format!("ClusterProfile.app/ConfigMap.{outside}.cm-{i}.yaml"), yaml.into_bytes())
    }));
    site.publish("store", &[site.signed(1, files, |_| {})]).await;
    let reports = site.dir.path().join("reports");
    std::fs::create_dir(&reports).unwrap();
    let policy = ["--watch-namespaces", &site.app_ns, "--namespace-policy", "filter"];
    let run = site.run("sync", "store", &[&policy[..], &["--report-to", reports.to_str().unwrap()]].concat()).await;
    assert_exit(&run, 0);
    assert!(run.stdout.contains(&format!("{COUNT} refused")), "{run:?}");
    assert!(!run.stderr.contains("report not kept"), "{run:?}");

    let file = std::fs::read_dir(&reports).unwrap().next().expect("a report file").unwrap().path();
    let whole: Report = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(whole.objects.len(), COUNT + 1, "the report file keeps every object");
    assert!(std::fs::metadata(&file).unwrap().len() > 1024 * 1024);
    let kept = site.kept_report().await;
    assert_eq!((kept.report.result, kept.report.applied_version), (RunResult::Applied, Some(1)));
    assert!(kept.report.objects.is_empty(), "{kept:?}");
    assert_eq!(kept.omitted_objects, BTreeMap::from([("created".to_string(), 1), ("refused".to_string(), COUNT as u64)]));

    // The next run reads that copy back, and replaces it with its own outcome.
    assert_exit(&site.run("sync", "store", &policy).await, 0);
    let kept = site.kept_report().await;
    assert_eq!((kept.report.result, kept.report.applied_version), (RunResult::UpToDate, Some(1)));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_pullers_at_once_do_not_both_apply() {
    let site = Site::new("two").await;
    site.publish("store", &[site.signed(1, site.files(200, "one"), |_| {})]).await;
    let (a, b) = tokio::join!(site.sync("store"), site.sync("store"));
    let applied = [&a, &b].iter().filter(|r| r.code == Some(0) && r.stdout.contains("applied version 1")).count();
    assert_eq!(applied, 1, "exactly one applies\n{a:?}\n{b:?}");
    let other = if a.stdout.contains("applied version 1") { &b } else { &a };
    let lost_lease = other.code == Some(1) && other.stderr.contains("another puller holds the lease");
    let came_after = other.code == Some(0) && other.stdout.contains("up to date");
    assert!(lost_lease || came_after, "{other:?}");
    assert_eq!(site.config_maps().await.len(), 200);
    // The puller turned away did nothing and must not replace the holder's report.
    let kept = site.kept_report().await;
    assert!([RunResult::Applied, RunResult::UpToDate].contains(&kept.report.result), "{kept:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_state_namespace_is_named() {
    let site = Site::new("nons").await;
    site.publish("store", &[site.signed(1, site.files(1, "one"), |_| {})]).await;
    let missing = format!("{}-missing", site.state_ns);
    let run = site.run("sync", "store", &["--state-namespace", &missing]).await;
    assert_exit(&run, 1);
    assert!(run.stderr.contains(&format!("state namespace {missing} does not exist")), "{run:?}");
    site.assert_untouched("nothing written").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_puller_killed_mid_apply_converges_on_the_next_run() {
    let site = Site::new("killed").await;
    site.publish("store", &[site.signed(1, site.files(1, "one"), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    const COUNT: usize = 600;
    site.publish("store", &[site.signed(2, site.files(COUNT, "two"), |_| {})]).await;

    let mut child = site.command("sync", "store", &["--lease-duration", "5s"]).spawn().expect("puller starts");
    // Kill it once the apply has started and before it can have finished.
    let started = std::time::Instant::now();
    loop {
        let applied = site.config_maps().await.values().filter(|cm| cm.data.as_ref().unwrap()["value"] == "two").count();
        if applied > 0 {
            assert!(applied < COUNT, "the apply finished before it could be killed; use a larger bundle");
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the puller exited before applying: {:?}",
            Run::from(child.wait_with_output().await.unwrap())
        );
        assert!(started.elapsed() < Duration::from_secs(60), "the apply never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().await.expect("SIGKILL");
    assert_eq!(site.state_version().await, Some(1), "the state never claims a version that was not fully applied");

    // The killed puller's Lease runs out, then the next run converges.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let next = site.run("sync", "store", &["--lease-duration", "5s"]).await;
    assert_exit(&next, 0);
    assert!(next.stdout.contains("applied version 2"), "{next:?}");
    let cms = site.config_maps().await;
    assert_eq!(cms.len(), COUNT);
    assert!(cms.values().all(|cm| cm.data.as_ref().unwrap()["value"] == "two"));
    assert_eq!(site.state_version().await, Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_report_is_written_and_verifies() {
    let site = Site::new("report").await;
    site.publish("store", &[site.signed(1, site.files(2, "one"), |_| {})]).await;
    let key = SigningKey::from_seed([42; 32]);
    let key_path = site.dir.path().join("cluster.key");
    std::fs::write(&key_path, key.to_pkcs8_pem()).unwrap();
    let reports = site.dir.path().join("reports");
    std::fs::create_dir(&reports).unwrap();
    let run = site.run("sync", "store", &["--report-to", reports.to_str().unwrap(), "--report-key", key_path.to_str().unwrap()]).await;
    assert_exit(&run, 0);

    let files: Vec<PathBuf> = std::fs::read_dir(&reports).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(&format!("report-e2e.{}-", site.cluster.name())), "{name}");
    let decoded = envelope::decode(&std::fs::read(&files[0]).unwrap(), REPORT_PAYLOAD_TYPE, &Limits::SPEC).expect("a DSSE envelope");
    let keyring = Keyring::new(1, 1, vec![key.public()], &Limits::SPEC).unwrap();
    assert_eq!(keyring.check(&decoded).expect("signed by the cluster key"), [key.public().key_id()]);
    let report: Report = serde_json::from_slice(&decoded.payload).unwrap();
    assert_eq!(report.result, RunResult::Applied);
    assert_eq!(report.cluster, site.cluster.to_string());
    assert_eq!(report.applied_version, Some(1));
    assert_eq!(report.kubernetes_version.as_deref(), Some("v1.20.2"));
    assert_eq!(report.objects.len(), 3, "{report:?}");

    let kept = site.kept_report().await;
    assert_eq!((kept.report.result, kept.report.applied_version), (RunResult::Applied, Some(1)));
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
async fn a_rotated_keyring_is_kept_in_the_state() {
    let site = Site::new("rotate").await;
    let new_key = SigningKey::from_seed([2; 32]);
    let rotated = Keyring::new(2, 1, vec![new_key.public()], &Limits::SPEC).unwrap();
    let chain = keyring::chain(&[rotated.sign_update(&site.fixture.keys)]);
    let how = Signing { keys: Some(vec![SigningKey::from_seed([2; 32])]), keyring_chain: Some(chain), ..Signing::default() };
    site.publish("store", &[site.signed_as(1, site.files(1, "one"), how, |r| r.keyring_version = 2)]).await;
    assert_exit(&site.sync("store").await, 0);
    let state = site.state().await.unwrap();
    assert_eq!(state.keyring.map(|k| k.version), Some(2));

    // The next bundle comes without the chain: only the kept keyring can verify it, the
    // local file (version 1) cannot.
    let how = Signing { keys: Some(vec![new_key]), ..Signing::default() };
    site.publish("store", &[site.signed_as(2, site.files(1, "two"), how, |r| r.keyring_version = 2)]).await;
    let run = site.sync("store").await;
    assert_exit(&run, 0);
    assert!(run.stdout.contains("applied version 2"), "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupted_state_stops_the_puller_and_a_deleted_one_starts_over() {
    let site = Site::new("corrupt").await;
    site.publish("store", &[site.signed(1, site.files(1, "one"), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    let secrets = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    let name = site.kept.name("airlock-state-");
    let garbage = serde_json::json!({"data": {"state.json.gz": "bm90IGd6aXA="}});
    secrets.patch(&name, &PatchParams::default(), &Patch::Merge(&garbage)).await.expect("state overwritten");
    let before = site.versions().await;

    let run = site.sync("store").await;
    assert_exit(&run, 1);
    let hint = format!("kubectl -n {} delete secret {name}", site.state_ns);
    assert!(run.stderr.contains(&format!("state Secret {}/{name} is unreadable", site.state_ns)) && run.stderr.contains(&hint), "{run:?}");
    assert_eq!(site.versions().await, before, "nothing written");

    secrets.delete(&name, &DeleteParams::default()).await.expect("state deleted");
    let run = site.sync("store").await;
    assert_exit(&run, 0);
    // The failed runs kept the applied version in the kept report: the floor now.
    let floor = "the rollback floor is version 1 (sha256:";
    assert!(run.stdout.contains("applied version 1") && run.stderr.contains(floor), "{run:?}");
    assert_eq!(site.state_version().await, Some(1));
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
    // Let a second run happen, then read the metrics.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let metrics = http_get(port, "/metrics").await.expect("metrics answer");
    assert!(metrics.contains("airlock_applied_version 1\n"), "{metrics}");
    let ok_runs = metrics
        .lines()
        .find_map(|l| l.strip_prefix("airlock_sync_runs_total{result=\"ok\"} "))
        .and_then(|n| n.parse::<u64>().ok())
        .expect("ok runs");
    assert!(ok_runs >= 2, "{metrics}");
    assert!(metrics.contains("airlock_sync_runs_total{result=\"error\"} 0\n"), "{metrics}");
    assert!(metrics.contains("airlock_bundle_expires_timestamp_seconds "), "{metrics}");

    let pid = child.id().expect("running").to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("stops on SIGTERM").unwrap();
    assert_eq!(status.code(), Some(0));
    let lease = Api::<Lease>::namespaced(site.client.clone(), &site.state_ns).get(&site.kept.name("airlock-puller-")).await.expect("lease");
    assert_eq!(lease.spec.unwrap().holder_identity, None, "the lease is released");
}
