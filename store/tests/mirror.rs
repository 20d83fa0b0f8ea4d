//! Export and import across an air gap between OCI layouts and Git on disk:
//! round trip, deltas carrying only what changed, idempotent import, and every refusal
//! leaving the target unchanged.

use std::path::Path;

use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::Floor;
use airlock_bundle::{ClusterId, Limits};
use airlock_store::mirror::{self, ExportIndex, ImportTarget, Imported, MirrorError};
use airlock_store::{Fetch, OciStore, PublishMeta, StoreRef, fetch_verified, open, open_oci};

const L: Limits = Limits::SPEC;

fn fx(cluster: &str) -> Fixture {
    let mut f = Fixture::new(1);
    f.cluster = cluster.parse().unwrap();
    f
}

const CLUSTERS: [&str; 3] = ["fleet/a", "fleet/b", "fleet/c"];

fn changed_files() -> Vec<(String, Vec<u8>)> {
    let mut files = Fixture::files();
    files[0].1 = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nginx-conf\n  namespace: web\ndata:\n  port: \"9090\"\n".to_vec();
    files
}

fn trust(fx: &Fixture) -> mirror::Trust<'_> {
    mirror::Trust { keyring: &fx.keyring, now: Fixture::now(), limits: &L }
}

async fn layout(dir: &Path) -> Box<dyn OciStore> {
    open_oci(&StoreRef::OciLayout(dir.to_path_buf()), &Default::default()).await.unwrap()
}

async fn export(from: &dyn OciStore, to: &Path, since: Option<&ExportIndex>) -> Result<ExportIndex, MirrorError> {
    let clusters: Vec<ClusterId> = CLUSTERS.iter().map(|c| c.parse().unwrap()).collect();
    mirror::export(from, &clusters, since, to, &trust(&Fixture::new(1)), &mut |_| {}).await
}

async fn import(archive: &Path, target: &ImportTarget) -> Result<Vec<Imported>, MirrorError> {
    mirror::import(archive, target, &trust(&Fixture::new(1)), &mut |_| {}).await
}

async fn version_in(store: &dyn airlock_store::Store, cluster: &str) -> u64 {
    let f = fx(cluster);
    match fetch_verified(store, &f.expect(&Floor::default()), &L).await.unwrap() {
        Fetch::New(b) => b.predicate().version,
        Fetch::AlreadyApplied(_) => unreachable!(),
    }
}

fn tree_snapshot(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    if dir.exists() {
        for e in walk(dir) {
            out.push((e.strip_prefix(dir).unwrap().display().to_string(), std::fs::metadata(&e).unwrap().len()));
        }
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

#[tokio::test]
async fn full_then_delta_round_trip_carries_only_what_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let (near, far) = (tmp.path().join("near"), tmp.path().join("far"));
    let source = layout(&near).await;
    let v1: Vec<_> = CLUSTERS.iter().map(|c| fx(c).signed(1, Fixture::files())).collect();
    source.publish(&v1, &PublishMeta::default()).await.unwrap();

    let full = tmp.path().join("full.tar");
    let index = export(source.as_ref(), &full, None).await.unwrap();
    assert_eq!(index.clusters.len(), 3);
    assert_eq!(ExportIndex::read(&full).unwrap(), index, "the sidecar index is written and readable");
    let target = ImportTarget::Oci(layout(&far).await);
    let first = import(&full, &target).await.unwrap();
    assert!(first.iter().all(|i| matches!(i, Imported::Written { version: 1, .. })), "{first:?}");
    for c in CLUSTERS {
        assert_eq!(version_in(target_store(&target), c).await, 1);
    }
    let again = import(&full, &target).await.unwrap();
    assert!(again.iter().all(|i| matches!(i, Imported::AlreadyPresent { .. })), "safe to run twice: {again:?}");

    // One profile changes for two clusters: the delta carries that part once, plus the
    // two clusters' envelopes and manifests.
    let v2: Vec<_> = CLUSTERS[..2].iter().map(|c| fx(c).signed(2, changed_files())).collect();
    source.publish(&v2, &PublishMeta::default()).await.unwrap();
    let delta = tmp.path().join("delta.tar");
    let delta_index = export(source.as_ref(), &delta, Some(&index)).await.unwrap();
    assert_eq!(delta_index.clusters.iter().map(|c| c.cluster.as_str()).collect::<Vec<_>>(), ["fleet/a", "fleet/b"]);
    assert_eq!(delta_index.carried.len(), 3);
    let full_size = std::fs::metadata(&full).unwrap().len();
    let delta_size = std::fs::metadata(&delta).unwrap().len();
    assert!(delta_size < full_size, "delta {delta_size} bytes, full {full_size}");
    // New blobs: two envelopes and the one changed part, shared by both clusters.
    assert_eq!(delta_index.blobs.len() - index.blobs.len(), 3);
    assert!(delta_index.new_bytes < delta_index.total_bytes, "{delta_index:?}");

    // A delta does not stand alone: an empty target is refused and left untouched.
    let empty = tmp.path().join("empty");
    let err = import(&delta, &ImportTarget::Oci(layout(&empty).await)).await.unwrap_err();
    assert!(matches!(&err, MirrorError::MissingBlobs { missing, .. } if !missing.is_empty()), "{err}");
    assert!(tree_snapshot(&empty).is_empty(), "nothing written");

    import(&delta, &target).await.unwrap();
    assert_eq!(version_in(target_store(&target), "fleet/a").await, 2);
    assert_eq!(version_in(target_store(&target), "fleet/c").await, 1);

    // The older full archive no longer applies: refused, target unchanged.
    let before = tree_snapshot(&far);
    let err = import(&full, &target).await.unwrap_err();
    assert!(matches!(err, MirrorError::Older { held: 2, offered: 1, .. }), "{err}");
    assert!(err.is_rejection());
    assert_eq!(tree_snapshot(&far), before);
}

fn target_store(t: &ImportTarget) -> &dyn airlock_store::Store {
    match t {
        ImportTarget::Oci(s) => s.as_ref(),
        ImportTarget::Other(s) => s.as_ref(),
    }
}

#[tokio::test]
async fn flipped_truncated_and_wrongly_signed_archives_import_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let source = layout(&tmp.path().join("near")).await;
    source.publish(&CLUSTERS.map(|c| fx(c).signed(1, Fixture::files())), &PublishMeta::default()).await.unwrap();
    let archive = tmp.path().join("full.tar");
    export(source.as_ref(), &archive, None).await.unwrap();
    let bytes = std::fs::read(&archive).unwrap();
    let far = tmp.path().join("far");
    let target = ImportTarget::Oci(layout(&far).await);

    let truncated = tmp.path().join("truncated.tar");
    std::fs::write(&truncated, &bytes[..bytes.len() * 2 / 3]).unwrap();
    assert!(import(&truncated, &target).await.is_err());

    // Flip one byte inside the last blob's data (tar data, not a header).
    let flipped = tmp.path().join("flipped.tar");
    let mut bad = bytes.clone();
    let at = bytes.len() - 1024 - 600;
    bad[at] ^= 0x01;
    std::fs::write(&flipped, &bad).unwrap();
    assert!(import(&flipped, &target).await.is_err());

    let wrong_key = mirror::import(&archive, &target, &trust(&Fixture::new(9)), &mut |_| {}).await.unwrap_err();
    assert!(matches!(wrong_key, MirrorError::Rejected { .. }), "{wrong_key}");
    assert!(tree_snapshot(&far).is_empty(), "nothing imported");
}

#[tokio::test]
async fn import_into_git_writes_verified_bundles() {
    let tmp = tempfile::tempdir().unwrap();
    let source = layout(&tmp.path().join("near")).await;
    source.publish(&CLUSTERS.map(|c| fx(c).signed(1, Fixture::files())), &PublishMeta::default()).await.unwrap();
    let archive = tmp.path().join("full.tar");
    export(source.as_ref(), &archive, None).await.unwrap();
    let repo = tmp.path().join("far.git");
    git2::Repository::init_bare(&repo).unwrap();
    let git_ref: StoreRef = format!("git+file://{}", repo.display()).parse().unwrap();
    let target = ImportTarget::Other(open(&git_ref, &Default::default()).await.unwrap());
    import(&archive, &target).await.unwrap();
    for c in CLUSTERS {
        assert_eq!(version_in(target_store(&target), c).await, 1);
    }
}

#[tokio::test]
async fn concurrent_export_writes_the_same_archive_in_cluster_order() {
    // More clusters than are read at once, half of them sharing every part.
    let tmp = tempfile::tempdir().unwrap();
    let source = layout(&tmp.path().join("near")).await;
    let names: Vec<String> = (0..40).map(|i| format!("fleet/c{i:02}")).collect();
    let bundles: Vec<_> =
        names.iter().enumerate().map(|(i, c)| fx(c).signed(1, if i % 2 == 0 { Fixture::files() } else { changed_files() })).collect();
    source.publish(&bundles, &PublishMeta::default()).await.unwrap();
    let clusters: Vec<ClusterId> = names.iter().rev().map(|c| c.parse().unwrap()).collect();
    let mut archives = Vec::new();
    for run in 0..2 {
        let path = tmp.path().join(format!("run-{run}.tar"));
        let mut seen = Vec::new();
        let index = mirror::export(source.as_ref(), &clusters, None, &path, &trust(&Fixture::new(1)), &mut |p| {
            seen.push((p.cluster.to_string(), p.done))
        })
        .await
        .unwrap();
        let order: Vec<String> = clusters.iter().map(ClusterId::to_string).collect();
        assert_eq!(index.clusters.iter().map(|c| c.cluster.clone()).collect::<Vec<_>>(), order, "in the order asked");
        assert_eq!(seen, order.into_iter().zip(1..).collect::<Vec<_>>(), "progress in order, one step per cluster");
        archives.push(std::fs::read(&path).unwrap());
    }
    assert_eq!(archives[0], archives[1], "the same store makes the same archive");
    let target = ImportTarget::Oci(layout(&tmp.path().join("far")).await);
    let imported = import(&tmp.path().join("run-0.tar"), &target).await.unwrap();
    assert_eq!(imported.len(), 40);
    assert_eq!(version_in(target_store(&target), "fleet/c39").await, 1);
}
