//! Bundles the puller refuses, by verification (rollback, expiry, tampering, another
//! cluster's), by a setting or annotation it cannot honour, or by the watch-namespaces
//! policy: exit 3, and nothing written.

use airlock_bundle::statement::{DriftExclusion, Target};
use airlock_bundle::{ClusterId, PartSettings};
use airlock_e2e::assert_exit;
use airlock_e2e::puller::{Signing, Site, assert_refused};
use jiff::SignedDuration;

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
    site.publish("store", &[site.signed(1, files, |r| r.settings.watch_namespaces = Some(watch))]).await;

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

#[tokio::test(flavor = "multi_thread")]
async fn rejects_a_drift_exclusion_it_cannot_use_before_writing_anything() {
    let site = Site::new("badregex").await;
    let target = Target { kind: Some("Deploy(".into()), ..Target::default() };
    let exclusions = vec![DriftExclusion { paths: vec!["/spec/replicas".into()], target: Some(target) }];
    let how = Signing { settings: Some(PartSettings { drift_exclusions: exclusions, ..PartSettings::default() }), ..Signing::default() };
    site.publish("store", &[site.signed_as(1, site.files(1, "one"), how, |_| {})]).await;
    let run = site.sync("store").await;
    assert_refused(&run, "profile ClusterProfile.app: driftExclusions[0].target.kind: \"Deploy(\" is not a regular expression");
    site.assert_untouched("nothing written").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rejects_a_create_only_annotation_other_than_true_before_writing_anything() {
    let site = Site::new("badonce").await;
    let mut files = site.files(1, "one");
    let ns = &site.app_ns;
    files[0].1 =
        format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n  annotations:\n    airlock.dev/create-only: \"yes\"\n")
            .into_bytes();
    site.publish("store", &[site.signed(1, files, |_| {})]).await;
    let run = site.sync("store").await;
    assert_refused(&run, "annotation airlock.dev/create-only is \"yes\"");
    site.assert_untouched("nothing written").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rejects_a_release_annotation_out_of_its_range_before_writing_anything() {
    let site = Site::new("badwait").await;
    let mut files = site.files(1, "one");
    let ns = &site.app_ns;
    let release = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: main\n  namespace: {ns}\n  labels:\n    airlock.dev/helm-release: web\n  annotations:\n    airlock.dev/helm-wait: \"ready\"\n    airlock.dev/helm-wait-timeout-seconds: \"90000\"\n"
    );
    files.push((format!("ClusterProfile.app/ConfigMap.{ns}.main.yaml"), release.into_bytes()));
    site.publish("store", &[site.signed(1, files, |_| {})]).await;
    let run = site.sync("store").await;
    assert_refused(&run, "annotation airlock.dev/helm-wait-timeout-seconds is \"90000\", not a whole number of seconds from 1 to 86400");
    site.assert_untouched("nothing written").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_document_is_refused_and_nothing_is_applied() {
    let site = Site::new("list").await;
    let mut files = site.files(1, "x");
    let list = format!(
        "apiVersion: v1\nkind: List\nmetadata:\n  name: several\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: inside\n    namespace: {}\n",
        site.app_ns
    );
    files.push(("ClusterProfile.app/List.cluster.several.yaml".into(), list.into_bytes()));
    site.publish("store", &[site.signed(1, files, |_| {})]).await;
    assert_refused(&site.sync("store").await, "a v1 List, which no API serves");
    site.assert_untouched("nothing of the bundle applied").await;
}
