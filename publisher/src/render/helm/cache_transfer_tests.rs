use super::*;
use crate::render::helm::cache::CacheKey;

const WEB: CacheKey<'static> = CacheKey { repository: "https://charts.example", scope: "", chart: "web" };

/// A cache in `dir` holding chart `web` 1.2.3 (asked for as `v1.2.3` too).
fn filled(dir: &Path) -> ChartCache {
    let cache = ChartCache::open(dir).expect("opens");
    cache.store(&WEB, &["1.2.3", "v1.2.3"], "web", "1.2.3", b"the archive").expect("stores");
    cache
}

/// A tar of `entries` (name, bytes), as a hand-made or tampered one would be.
fn tar_of(dir: &Path, entries: &[(&str, &[u8])]) -> PathBuf {
    let path = dir.join("hand-made.tar");
    let mut builder = tar::Builder::new(std::fs::File::create(&path).expect("creates"));
    for (name, bytes) in entries {
        // Written into the header as they are: the builder would refuse `..`.
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        builder.append(&header, *bytes).expect("appends");
    }
    builder.finish().expect("finishes");
    path
}

/// The names of the files of a cache directory, to see that a refused import changed none.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(dir).expect("below").display().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn an_exported_cache_serves_its_charts_where_it_is_imported() {
    let (outside, inside, medium) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    filled(outside.path());
    let archive = medium.path().join("charts.tar");
    let exported = export(outside.path(), &archive).expect("exports");
    assert_eq!(exported, Carried { records: 2, archives: 1, bytes: 11 });
    let imported = import(inside.path(), &archive).expect("imports");
    assert_eq!(imported, exported);
    let cache = ChartCache::open(inside.path()).expect("opens");
    for asked in ["1.2.3", "v1.2.3"] {
        let hit = cache.lookup(&WEB, asked).expect("the imported cache holds it");
        assert_eq!((hit.version.as_str(), hit.digest), ("1.2.3", Digest::of(b"the archive")));
    }
    assert_eq!(import(inside.path(), &archive).expect("imports again"), imported, "importing twice is harmless");
}

#[test]
fn an_export_is_the_same_bytes_each_time() {
    let (outside, medium) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    filled(outside.path());
    let (a, b) = (medium.path().join("a.tar"), medium.path().join("b.tar"));
    export(outside.path(), &a).expect("exports");
    export(outside.path(), &b).expect("exports");
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}

#[test]
fn leaves_out_a_record_whose_archive_is_damaged() {
    let (outside, medium) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cache = filled(outside.path());
    let other = CacheKey { chart: "api", ..WEB };
    let damaged = cache.store(&other, &["2.0.0"], "api", "2.0.0", b"api archive").expect("stores");
    std::fs::write(&damaged.archive, b"tampered").unwrap();
    assert_eq!(export(outside.path(), &medium.path().join("c.tar")).expect("exports").records, 2);
}

#[test]
fn rejects_an_empty_cache() {
    let (outside, medium) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert!(matches!(export(outside.path(), &medium.path().join("c.tar")), Err(TransferError::Empty { .. })));
    let never = outside.path().join("never-published");
    assert!(matches!(export(&never, &medium.path().join("c.tar")), Err(TransferError::Empty { .. })));
    assert!(!never.exists(), "exporting creates no cache");
}

/// Imports `entries` into a cache that already holds `web`; the error, after checking
/// that the cache did not change.
fn refused(entries: &[(&str, &[u8])]) -> TransferError {
    let (inside, medium) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    filled(inside.path());
    let before = listing(inside.path());
    let err = import(inside.path(), &tar_of(medium.path(), entries)).expect_err("refused");
    assert_eq!(listing(inside.path()), before, "a refused import changes nothing");
    err
}

fn record(digest: &Digest) -> Vec<u8> {
    serde_json::to_vec(
        &serde_json::json!({"repository": "https://charts.example", "chart": "api", "version": "2.0.0", "name": "api", "digest": digest}),
    )
    .unwrap()
}

#[test]
fn rejects_an_archive_whose_bytes_do_not_match_its_name() {
    let named = Digest::of(b"api archive");
    let key = format!("refs/{}.json", "a".repeat(64));
    let err = refused(&[(&format!("blobs/{}.tgz", named.hex()), b"other bytes"), (&key, &record(&named))]);
    assert!(matches!(err, TransferError::DigestMismatch { .. }), "{err}");
}

#[test]
fn rejects_a_record_whose_archive_is_nowhere() {
    let key = format!("refs/{}.json", "b".repeat(64));
    let err = refused(&[(&key, &record(&Digest::of(b"never carried")))]);
    assert!(matches!(err, TransferError::MissingArchive { .. }), "{err}");
}

#[test]
fn rejects_a_record_that_does_not_read() {
    let err = refused(&[(&format!("refs/{}.json", "c".repeat(64)), b"{\"repository\": 1}")]);
    assert!(matches!(err, TransferError::Record { .. }), "{err}");
}

#[test]
fn rejects_an_entry_outside_the_cache_layout() {
    for name in ["../escape.tgz", "blobs/short.tgz", "refs/x/../../y.json", "index.json", "blobs/ABC.tgz"] {
        let err = refused(&[(name, b"x")]);
        assert!(matches!(err, TransferError::UnexpectedEntry { .. }), "{name}: {err}");
    }
}

#[test]
fn rejects_a_record_over_its_cap() {
    let big = vec![b' '; MAX_RECORD_BYTES as usize + 1];
    let err = refused(&[(&format!("refs/{}.json", "d".repeat(64)), &big)]);
    assert!(matches!(err, TransferError::TooLarge { limit: MAX_RECORD_BYTES, .. }), "{err}");
}

#[test]
fn rejects_what_is_not_a_tar() {
    let (inside, medium) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let path = medium.path().join("not.tar");
    std::fs::write(&path, vec![7u8; 1024]).unwrap();
    assert!(import(inside.path(), &path).is_err());
}
