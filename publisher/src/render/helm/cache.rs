//! Chart archives kept on disk across publishes, by content:
//!
//! ```text
//! <dir>/blobs/<sha256>.tgz            the archive as helm pulled it
//! <dir>/refs/<sha256 of key>.json     repository + login scope + chart + exact version
//!                                      → name, version, digest
//! ```
//!
//! A chart version is treated as immutable, as helm's own dependency lock does: once
//! `repository/chart@version` is here, it is never fetched again, so a publisher with a
//! cache filled by an earlier run (or copied from a connected machine) renders exact
//! versions with no network at all. Ranges still ask the repository once per publish; the
//! archive they resolve to is kept under its exact version too. A blob whose bytes no
//! longer match its name is treated as missing. Files are written to a temporary name and
//! renamed, so concurrent publishers sharing the directory never read half a file. An
//! archive fetched with a login is found only by requests with the same login.

use std::path::{Path, PathBuf};

use airlock_bundle::Digest;
use serde::{Deserialize, Serialize};

use super::error::{HelmError, cache_error};

/// A chart archive in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedChart {
    /// The chart's own name, from its `Chart.yaml`.
    pub name: String,
    /// The exact version fetched (a range resolved).
    pub version: String,
    /// sha256 of the archive: the chart's identity in render memo keys.
    pub digest: Digest,
    pub archive: PathBuf,
}

/// What `refs/<key>.json` holds: the archive a repository's chart at a version is.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct RefFile {
    pub repository: String,
    pub chart: String,
    pub version: String,
    pub name: String,
    pub digest: Digest,
}

/// Which chart of which repository, fetched with which login (`Access::cache_scope`).
#[derive(Debug, Clone, Copy)]
pub(super) struct CacheKey<'a> {
    pub repository: &'a str,
    pub scope: &'a str,
    pub chart: &'a str,
}

#[derive(Debug)]
pub(super) struct ChartCache {
    dir: PathBuf,
}

impl ChartCache {
    pub(super) fn open(dir: &Path) -> Result<ChartCache, HelmError> {
        for sub in ["blobs", "refs"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| cache_error(&dir.join(sub), e))?;
        }
        Ok(ChartCache { dir: dir.to_path_buf() })
    }

    /// The archive kept for `key` at exactly `version`.
    pub(super) fn lookup(&self, key: &CacheKey<'_>, version: &str) -> Option<FetchedChart> {
        let text = std::fs::read(self.ref_path(key, version)).ok()?;
        let file: RefFile = serde_json::from_slice(&text).ok()?;
        let archive = self.blob_path(&file.digest);
        let bytes = std::fs::read(&archive).ok()?;
        (Digest::of(&bytes) == file.digest).then_some(FetchedChart { name: file.name, version: file.version, digest: file.digest, archive })
    }

    /// Keeps `bytes`, the archive of chart `name` at `version`, for `key` under each of
    /// `versions` (the exact version fetched, and the one asked for when that was exact too).
    pub(super) fn store(
        &self,
        key: &CacheKey<'_>,
        versions: &[&str],
        name: &str,
        version: &str,
        bytes: &[u8],
    ) -> Result<FetchedChart, HelmError> {
        let digest = Digest::of(bytes);
        let archive = self.blob_path(&digest);
        if std::fs::read(&archive).map(|b| Digest::of(&b) != digest).unwrap_or(true) {
            write_atomically(&archive, bytes)?;
        }
        for asked in versions {
            let file =
                RefFile { repository: key.repository.into(), chart: key.chart.into(), version: version.into(), name: name.into(), digest };
            write_atomically(&self.ref_path(key, asked), &serde_json::to_vec(&file).expect("JSON serialises"))?;
        }
        Ok(FetchedChart { name: name.into(), version: version.into(), digest, archive })
    }

    /// The directory, holding `blobs/` and `refs/`.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    fn ref_path(&self, key: &CacheKey<'_>, version: &str) -> PathBuf {
        let key = format!("{}\0{}\0{}\0{version}", key.repository, key.scope, key.chart);
        self.dir.join("refs").join(format!("{}.json", Digest::of(key.as_bytes()).hex()))
    }

    pub(super) fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.dir.join("blobs").join(format!("{}.tgz", digest.hex()))
    }
}

/// Writes `bytes` to `path` through a temporary file beside it.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), HelmError> {
    let dir = path.parent().expect("cache paths have a parent");
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| cache_error(dir, e))?;
    std::fs::write(tmp.path(), bytes).map_err(|e| cache_error(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| cache_error(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEB: CacheKey<'static> = CacheKey { repository: "http://r", scope: "", chart: "web" };

    #[test]
    fn finds_what_it_stored_under_each_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ChartCache::open(dir.path()).expect("opens");
        let stored = cache.store(&WEB, &["1.2.3", "v1.2.3"], "web", "1.2.3", b"archive").expect("stores");
        assert_eq!(cache.lookup(&WEB, "1.2.3"), Some(stored.clone()));
        assert_eq!(cache.lookup(&WEB, "v1.2.3"), Some(stored));
        assert_eq!(cache.lookup(&CacheKey { repository: "http://other", ..WEB }, "1.2.3"), None);
        assert_eq!(cache.lookup(&CacheKey { scope: "login", ..WEB }, "1.2.3"), None);
    }

    #[test]
    fn a_corrupt_blob_is_a_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ChartCache::open(dir.path()).expect("opens");
        let stored = cache.store(&WEB, &["1.2.3"], "web", "1.2.3", b"archive").expect("stores");
        std::fs::write(&stored.archive, b"tampered").expect("write");
        assert_eq!(cache.lookup(&WEB, "1.2.3"), None);
    }
}
