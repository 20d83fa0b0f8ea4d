//! OCI layout and archive stores: round trips through `fetch_verified`, content-addressed
//! sharing, version tags, malformed archives, and `skopeo` reading what we write.

use std::path::Path;
use std::process::Command;

use airlock_bundle::Limits;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::Floor;
use airlock_store::{Fetch, FetchError, PublishMeta, Store, StoreError, StoreRef, fetch_verified, open};

const L: Limits = Limits::SPEC;

fn fixture_for(cluster: &str) -> Fixture {
    let mut fx = Fixture::new(1);
    fx.cluster = cluster.parse().unwrap();
    fx
}

async fn store(reference: &str) -> Box<dyn Store> {
    open(&reference.parse::<StoreRef>().unwrap(), &Default::default()).await.unwrap()
}

async fn fetch(store: &dyn Store, fx: &Fixture) -> Result<Fetch, FetchError> {
    fetch_verified(store, &fx.expect(&Floor::default()), &L).await
}

fn blob_count(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("blobs/sha256")).unwrap().count()
}

#[tokio::test]
async fn layout_round_trip_shares_identical_parts_and_moves_latest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("layout");
    let s = store(&format!("oci-layout:{}", dir.display())).await;
    let (a, b) = (fixture_for("fleet/edge-1"), fixture_for("fleet/edge-2"));
    s.publish(&[a.signed(1, Fixture::files()), b.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    // Per cluster: a manifest and an envelope; shared: the config and both parts.
    assert_eq!(blob_count(&dir), 2 * 2 + 1 + 2);
    for fx in [&a, &b] {
        let Fetch::New(bundle) = fetch(s.as_ref(), fx).await.unwrap() else { panic!("expected a new bundle") };
        assert_eq!(bundle.bundle().file_count(), 3);
        assert_eq!(bundle.predicate().cluster, fx.cluster.to_string());
    }
    let mut files = Fixture::files();
    files[0].1 = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nginx-conf\n  namespace: web\n".to_vec();
    s.publish(&[a.signed(2, files)], &PublishMeta::default()).await.unwrap();
    let Fetch::New(v2) = fetch(s.as_ref(), &a).await.unwrap() else { panic!() };
    assert_eq!(v2.predicate().version, 2);
    let index = std::fs::read_to_string(dir.join("index.json")).unwrap();
    for tag in ["fleet/edge-1:v1", "fleet/edge-1:v2", "fleet/edge-1:latest", "fleet/edge-2:latest"] {
        assert!(index.contains(&format!("\"{tag}\"")), "{tag} missing from {index}");
    }
    let clusters = s.clusters(&L).await.unwrap();
    assert_eq!(clusters, vec![a.cluster.clone(), b.cluster.clone()]);
}

#[tokio::test]
async fn layout_refuses_to_reuse_a_version_with_other_content() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store(&format!("oci-layout:{}", tmp.path().display())).await;
    let fx = Fixture::new(1);
    s.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    let err = s.publish(&[fx.signed(1, Fixture::files()[..1].to_vec())], &PublishMeta::default()).await.unwrap_err();
    assert!(matches!(&err, StoreError::Config { message, .. } if message.contains("never reused")), "{err}");
}

#[tokio::test]
async fn unknown_cluster_is_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store(&format!("oci-layout:{}", tmp.path().display())).await;
    let fx = Fixture::new(1);
    s.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    let other = fixture_for("fleet/nowhere");
    assert!(matches!(fetch(s.as_ref(), &other).await, Err(FetchError::Store(StoreError::NotFound { .. }))));
}

#[tokio::test]
async fn archive_round_trip_then_truncation_and_flips_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bundles.tar");
    let s = store(&format!("oci-archive:{}", path.display())).await;
    let fx = Fixture::new(1);
    s.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    s.publish(&[fixture_for("fleet/edge-2").signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    assert!(matches!(fetch(s.as_ref(), &fx).await.unwrap(), Fetch::New(_)));
    assert_eq!(s.clusters(&L).await.unwrap().len(), 2, "the second publish kept the first cluster");

    let bytes = std::fs::read(&path).unwrap();
    let cut = tmp.path().join("cut.tar");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cut_store = store(&format!("oci-archive:{}", cut.display())).await;
    assert!(matches!(fetch(cut_store.as_ref(), &fx).await, Err(FetchError::Store(StoreError::Malformed { .. }))));

    // A flipped byte inside any blob is caught by its digest, or (for a part) by verification.
    let flipped = tmp.path().join("flipped.tar");
    let mut refused = 0;
    for at in (0..bytes.len()).step_by(97) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x20;
        std::fs::write(&flipped, &bad).unwrap();
        let st = store(&format!("oci-archive:{}", flipped.display())).await;
        match fetch(st.as_ref(), &fx).await {
            Err(_) => refused += 1,
            Ok(Fetch::New(b)) => assert_eq!(b.bundle().file_count(), 3, "a flip at {at} changed content"),
            Ok(Fetch::AlreadyApplied(_)) => unreachable!(),
        }
    }
    assert!(refused > 0);
}

#[tokio::test]
async fn archive_with_a_symlink_entry_is_malformed() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("evil.tar");
    let mut b = tar::Builder::new(std::fs::File::create(&path).unwrap());
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    b.append_link(&mut h, "index.json", "/etc/passwd").unwrap();
    b.finish().unwrap();
    let s = store(&format!("oci-archive:{}", path.display())).await;
    let err = s.clusters(&L).await.unwrap_err();
    assert!(matches!(&err, StoreError::Malformed { message, .. } if message.contains("index.json")), "{err}");
}

/// `skopeo` (Debian's, installed by hack/test.sh) must read our layouts and archives and
/// copy one cluster's artifact keeping its manifest digest.
#[tokio::test]
async fn skopeo_copies_one_cluster_out_of_a_layout_and_an_archive_keeping_the_digest() {
    assert!(Command::new("skopeo").arg("--version").output().is_ok(), "skopeo is missing: run hack/test.sh");
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("layout");
    let archive = tmp.path().join("bundles.tar");
    let (a, b) = (fixture_for("fleet/edge-1"), fixture_for("fleet/edge-2"));
    let bundles = [a.signed(1, Fixture::files()), b.signed(4, Fixture::files())];
    for reference in [format!("oci-layout:{}", layout.display()), format!("oci-archive:{}", archive.display())] {
        store(&reference).await.publish(&bundles, &PublishMeta::default()).await.unwrap();
    }
    for (n, src) in [format!("oci:{}:fleet/edge-2:v4", layout.display()), format!("oci-archive:{}:fleet/edge-2:v4", archive.display())]
        .iter()
        .enumerate()
    {
        let dest = tmp.path().join(format!("copy{n}"));
        let out =
            Command::new("skopeo").args(["copy", "--quiet", src, &format!("oci:{}:fleet/edge-2:latest", dest.display())]).output().unwrap();
        assert!(out.status.success(), "skopeo copy {src}: {}", String::from_utf8_lossy(&out.stderr));
        let copied = store(&format!("oci-layout:{}", dest.display())).await;
        let Fetch::New(bundle) = fetch(copied.as_ref(), &b).await.unwrap() else { panic!() };
        assert_eq!(bundle.predicate().version, 4);
        let digest = |dir: &Path| {
            let index: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
            index["manifests"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == "fleet/edge-2:latest")
                .unwrap()["digest"]
                .clone()
        };
        assert_eq!(digest(&dest), digest(&layout));
    }
}

/// A reader keeps `index.json` parsed between calls; another writer's publish must still
/// show through it.
#[tokio::test]
async fn layout_reader_sees_what_another_writer_published() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = format!("oci-layout:{}", tmp.path().join("layout").display());
    let (writer, reader) = (store(&reference).await, store(&reference).await);
    let a = fixture_for("fleet/edge-1");
    writer.publish(&[a.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    let Fetch::New(v1) = fetch(reader.as_ref(), &a).await.unwrap() else { panic!("expected a new bundle") };
    assert_eq!(v1.predicate().version, 1);
    let mut files = Fixture::files();
    files[0].1 = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: changed\n  namespace: web\n".to_vec();
    writer.publish(&[a.signed(2, files)], &PublishMeta::default()).await.unwrap();
    let Fetch::New(v2) = fetch(reader.as_ref(), &a).await.unwrap() else { panic!("expected a new bundle") };
    assert_eq!(v2.predicate().version, 2);
}

/// A batch of many clusters is written on several threads: every shared blob once, no
/// temporary file left behind, and a second write of the same batch rewrites no blob.
#[tokio::test]
async fn layout_batch_writes_each_blob_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("layout");
    let s = store(&format!("oci-layout:{}", dir.display())).await;
    let fixtures: Vec<Fixture> = (0..40).map(|i| fixture_for(&format!("fleet/edge-{i}"))).collect();
    let batch: Vec<_> = fixtures.iter().map(|fx| fx.signed(1, Fixture::files())).collect();
    s.publish(&batch, &PublishMeta::default()).await.unwrap();
    // Per cluster: a manifest and an envelope; shared by all: the config and both parts.
    assert_eq!(blob_count(&dir), 40 * 2 + 1 + 2);
    let times = |dir: &Path| -> Vec<(std::ffi::OsString, std::time::SystemTime)> {
        let mut t: Vec<_> = std::fs::read_dir(dir.join("blobs/sha256"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name(), e.metadata().unwrap().modified().unwrap())
            })
            .collect();
        t.sort();
        t
    };
    let before = times(&dir);
    assert!(before.iter().all(|(name, _)| name.len() == 64), "only blobs in blobs/sha256: {before:?}");
    s.publish(&batch, &PublishMeta::default()).await.unwrap();
    assert_eq!(times(&dir), before);
    for fx in fixtures.iter().step_by(13) {
        let Fetch::New(bundle) = fetch(s.as_ref(), fx).await.unwrap() else { panic!("expected a new bundle") };
        assert_eq!(bundle.predicate().cluster, fx.cluster.to_string());
    }
    assert_eq!(s.clusters(&L).await.unwrap().len(), 40);
}

/// Blobs are created under their own names, so a write that crashed can leave one cut
/// short or garbled: the next write replaces it, and keeps the blobs that are intact.
#[tokio::test]
async fn layout_replaces_blobs_a_crashed_write_left_damaged() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("layout");
    let s = store(&format!("oci-layout:{}", dir.display())).await;
    let fixtures = [fixture_for("fleet/edge-1"), fixture_for("fleet/edge-2")];
    let batch: Vec<_> = fixtures.iter().map(|fx| fx.signed(1, Fixture::files())).collect();
    s.publish(&batch, &PublishMeta::default()).await.unwrap();
    let mut blobs: Vec<_> = std::fs::read_dir(dir.join("blobs/sha256")).unwrap().map(|e| e.unwrap().path()).collect();
    blobs.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).unwrap().len()));
    let [cut, garbled, intact] = [&blobs[0], &blobs[1], &blobs[2]];
    let bytes = std::fs::read(cut).unwrap();
    std::fs::write(cut, &bytes[..bytes.len() / 2]).unwrap();
    let len = std::fs::metadata(garbled).unwrap().len() as usize;
    std::fs::write(garbled, vec![b'x'; len]).unwrap();
    let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
    let intact_inode = inode(intact);

    s.publish(&batch, &PublishMeta::default()).await.unwrap();
    for blob in [cut, garbled, intact] {
        let name = blob.file_name().unwrap().to_str().unwrap();
        assert_eq!(airlock_bundle::Digest::of(&std::fs::read(blob).unwrap()).hex(), name, "{name} holds what its name promises");
    }
    assert_eq!(inode(intact), intact_inode, "the intact blob is not written again");
    assert_eq!(blob_count(&dir), blobs.len(), "no temporary file left behind");
    for fx in &fixtures {
        assert!(matches!(fetch(s.as_ref(), fx).await.unwrap(), Fetch::New(_)));
    }
}

/// A blob the manifest names but the layout lacks is damage to the store, not a cluster
/// without a bundle: a publisher taking it for the latter would start again at version 1.
#[tokio::test]
async fn layout_missing_a_named_blob_is_malformed_not_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("layout");
    let s = store(&format!("oci-layout:{}", dir.display())).await;
    let fx = fixture_for("fleet/edge-1");
    let signed = fx.signed(4, Fixture::files());
    s.publish(std::slice::from_ref(&signed), &PublishMeta::default()).await.unwrap();
    std::fs::remove_file(dir.join("blobs/sha256").join(airlock_bundle::Digest::of(&signed.envelope).hex())).unwrap();
    let err = s.fetch_envelope(&fx.cluster, &L).await.unwrap_err();
    assert!(matches!(&err, StoreError::Malformed { message, .. } if message.contains("named by the manifest of fleet/edge-1")), "{err}");
    let absent = s.fetch_envelope(&"fleet/edge-2".parse().unwrap(), &L).await.unwrap_err();
    assert!(matches!(absent, StoreError::NotFound { .. }), "{absent}");
}

/// A batch fed in parts: the layout holds each part's blobs as it comes but names nothing
/// before the commit, and an archive (which writes everything at once) ends the same.
#[tokio::test]
async fn a_batch_names_its_bundles_only_at_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (fixture_for("fleet/edge-1"), fixture_for("fleet/edge-2"));
    for reference in
        [format!("oci-layout:{}", tmp.path().join("layout").display()), format!("oci-archive:{}", tmp.path().join("a.tar").display())]
    {
        let s = store(&reference).await;
        let mut batch = s.batch(&PublishMeta::default());
        batch.add(vec![a.signed(1, Fixture::files())]).await.unwrap();
        batch.add(Vec::new()).await.unwrap();
        batch.add(vec![b.signed(1, Fixture::files())]).await.unwrap();
        assert!(s.clusters(&L).await.unwrap_or_default().is_empty(), "{reference}: named before the commit");
        assert!(matches!(fetch(s.as_ref(), &a).await, Err(FetchError::Store(StoreError::NotFound { .. }))), "{reference}");
        batch.commit().await.unwrap();
        assert_eq!(s.clusters(&L).await.unwrap(), vec![a.cluster.clone(), b.cluster.clone()], "{reference}");
        for fx in [&a, &b] {
            assert!(matches!(fetch(s.as_ref(), fx).await, Ok(Fetch::New(_))), "{reference}: {}", fx.cluster);
        }
    }
    // Both parts' blobs, the config, and a manifest and an envelope per cluster: each once.
    assert_eq!(blob_count(&tmp.path().join("layout")), 2 * 2 + 1 + 2);
}

/// A batch given nothing writes nothing: a re-publish where no cluster changed leaves the
/// layout as it was, not even creating it.
#[tokio::test]
async fn an_empty_batch_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("layout");
    let s = store(&format!("oci-layout:{}", dir.display())).await;
    let mut batch = s.batch(&PublishMeta::default());
    batch.add(Vec::new()).await.unwrap();
    batch.commit().await.unwrap();
    assert!(!dir.exists());
}

#[tokio::test]
async fn a_layout_tells_an_unchanged_manifest_from_its_index_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("layout");
    let s = store(&format!("oci-layout:{}", dir.display())).await;
    let a = fixture_for("fleet/edge-1");
    s.publish(&[a.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    let first = s.fetch_envelope(&a.cluster, &L).await.unwrap();
    let known = first.manifest().expect("an OCI store names the manifest");
    // The envelope's blob is gone: an answer from the index alone does not miss it.
    let envelope = format!("blobs/sha256/{}", airlock_bundle::Digest::of(&first.envelope).hex());
    let kept = std::fs::read(dir.join(&envelope)).unwrap();
    std::fs::remove_file(dir.join(&envelope)).unwrap();
    assert!(s.fetch_envelope_unless(&a.cluster, &known, &L).await.unwrap().is_none());
    std::fs::write(dir.join(&envelope), kept).unwrap();
    let mut files = Fixture::files();
    files[0].1.extend_from_slice(b"  extra: \"1\"\n");
    s.publish(&[a.signed(2, files)], &PublishMeta::default()).await.unwrap();
    let second = s.fetch_envelope_unless(&a.cluster, &known, &L).await.unwrap().expect("a new manifest is read");
    assert_ne!(second.manifest(), Some(known));
    assert_ne!(second.envelope, first.envelope);
}

#[tokio::test]
async fn a_keyring_chain_over_its_cap_is_a_rejection_found_before_it_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store(&format!("oci-layout:{}", tmp.path().join("layout").display())).await;
    let fx = Fixture::new(1);
    let mut signed = fx.signed(1, Fixture::files());
    signed.keyring_chain = Some(vec![b' '; 200]);
    s.publish(&[signed], &PublishMeta::default()).await.unwrap();
    let small = Limits { keyring_chain_bytes: 100, ..L };
    let err = fetch_verified(s.as_ref(), &fx.expect(&Floor::default()), &small).await.unwrap_err();
    assert!(matches!(&err, FetchError::Rejected { .. }), "a rejection (exit 3), not a store error: {err:?}");
    assert!(err.to_string().contains("keyring chain") && err.to_string().contains("over 100 bytes"), "{err}");
}
