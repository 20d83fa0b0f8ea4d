//! Unit tests of the archive store: writing, scanning again, and cuts anywhere.

use super::scan::{ArchiveFiles, BLOCK};
use super::*;
use crate::oci::{self, GzipCache};
use airlock_bundle::testkit::Fixture;

fn artifacts() -> Vec<(ClusterId, u64, Artifact)> {
    let cache = GzipCache::default();
    ["fleet/a", "fleet/b", "fleet/c"]
        .map(|c| {
            let mut fx = Fixture::new(1);
            fx.cluster = c.parse().unwrap();
            (fx.cluster.clone(), 1, oci::artifact(&fx.signed(1, Fixture::files()), &PublishMeta::default(), &cache))
        })
        .to_vec()
}

#[tokio::test]
async fn writes_from_memory_the_archive_a_layout_directory_makes_in_any_order() {
    let tmp = tempfile::tempdir().unwrap();
    let arts = artifacts();
    let (one, two, three) = (tmp.path().join("one.tar"), tmp.path().join("two.tar"), tmp.path().join("three.tar"));
    let written = write_new(&one, &arts).unwrap();
    let mut reversed = arts.clone();
    reversed.reverse();
    write_new(&two, &reversed).unwrap();
    assert_eq!(fs::read(&one).unwrap(), fs::read(&two).unwrap(), "the order of the artifacts does not matter");
    let through_layout = ArchiveStore::open(&three).unwrap();
    for (cluster, version, artifact) in &arts {
        through_layout.put_artifact(cluster, *version, artifact).await.unwrap();
    }
    assert_eq!(fs::read(&one).unwrap(), fs::read(&three).unwrap(), "byte for byte what a layout directory makes");
    // Every distinct blob once: the config, the shared part and its neighbour, an
    // envelope and a manifest per cluster.
    let distinct: std::collections::BTreeSet<_> = arts
        .iter()
        .flat_map(|(_, _, a)| a.blobs.iter().map(|b| (b.digest, b.bytes.len())).chain([(a.manifest_digest, a.manifest_bytes.len())]))
        .collect();
    assert_eq!(written, distinct.iter().map(|(_, len)| *len as u64).sum::<u64>());
    let store = ArchiveStore::open(&one).unwrap();
    assert_eq!(store.clusters(&Limits::SPEC).await.unwrap(), arts.iter().map(|(c, _, _)| c.clone()).collect::<Vec<_>>());
}

#[tokio::test]
async fn scans_an_archive_again_only_when_it_was_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("a.tar");
    let arts = artifacts();
    write_new(&path, &arts[..1]).unwrap();
    let store = ArchiveStore::open(&path).unwrap();
    let first = store.reader(&Limits::SPEC).unwrap();
    assert!(Arc::ptr_eq(&first, &store.reader(&Limits::SPEC).unwrap()), "the same archive is scanned once");
    write_new(&path, &arts).unwrap();
    assert_eq!(store.clusters(&Limits::SPEC).await.unwrap().len(), 3, "a replaced archive is read anew");
}

/// Wherever a carried copy is cut (inside a header, inside a file, in the marker, or
/// between two entries, where every header left reads fine), it is refused in the same
/// words, so operators and scripts can tell a short copy from a forged one.
#[test]
fn an_archive_cut_anywhere_is_truncated() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole.tar");
    write_new(&whole, &artifacts()).unwrap();
    let bytes = fs::read(&whole).unwrap();
    let scanned = ArchiveFiles::scan(&whole, &Limits::SPEC).unwrap();
    let between = scanned.entries.values().map(|&(offset, size)| (offset + size.next_multiple_of(BLOCK)) as usize);
    let in_marker = bytes.len() - BLOCK as usize;
    let cut = tmp.path().join("cut.tar");
    for end in (1..bytes.len()).step_by(128).chain(between).chain([in_marker]) {
        fs::write(&cut, &bytes[..end]).unwrap();
        let Err(err) = ArchiveFiles::scan(&cut, &Limits::SPEC) else { panic!("a cut at byte {end} was accepted") };
        assert!(err.to_string().contains("is truncated"), "cut at byte {end}: {err}");
    }
}
