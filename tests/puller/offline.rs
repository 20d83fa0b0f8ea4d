//! The commands that write nothing: `verify`, which touches no cluster, and `plan` and
//! `sync --dry-run`, which show what a sync would do.

use airlock_bundle::ClusterId;
use airlock_e2e::puller::{Site, assert_refused, publish_to};
use airlock_e2e::{Run, assert_exit, puller_bin};
use airlock_store::StoreRef;
use tokio::process::Command;

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
