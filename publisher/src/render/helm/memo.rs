//! Renders remembered by their inputs, in memory for one publish and on disk across
//! publishes, and charts that render differently every time.
//!
//! The key ([`inputs_digest`]) is a digest of everything `helm template` reads: the helm
//! version, the chart archive's digest, the values' digest, release name and namespace,
//! `--kube-version`, the sorted API list and the template options. 10,000 clusters with
//! equal inputs render once; a publish whose inputs are unchanged starts no helm at all.
//!
//! Nondeterministic charts are found by rendering a second time on a miss, but only where
//! the templates or the values name a function that reads randomness or the clock
//! (`genCA`, `randAlphaNum`, `now`…, found by `variance`); any other chart is a function of
//! its inputs and renders once. When the two outputs differ, the first is kept and the
//! render is marked [`nondeterministic`](Entry::nondeterministic). Because the disk memo is
//! keyed by the inputs digest, the *previous* output of an unchanged release is simply the
//! entry under the same key: it is served again, so certificates and passwords such a chart
//! makes stay what the cluster already has until an input changes (which must make new
//! ones). Losing the cache directory loses them too: the next publish renders anew.
//!
//! On disk: `<dir>/<inputs digest>.json`, written through a temporary file. An entry is
//! touched when read; entries unread for [`STALE`] are removed when the memo opens.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use airlock_bundle::Digest;
use serde::{Deserialize, Serialize};

use super::cache::write_atomically;
use super::error::HelmError;
use super::template::ReleaseRequest;

/// Names the file format; a file of another format is a miss.
const FORMAT: &str = "airlock-publisher/helm-render/v1";
/// An entry nobody read for this long belongs to inputs no profile has any more.
const STALE: Duration = Duration::from_secs(30 * 86_400);

/// One remembered render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Entry {
    format: String,
    /// `helm template`'s output, as printed.
    pub output: String,
    /// Two renders of these inputs differed; `output` is the first.
    pub nondeterministic: bool,
}

impl Entry {
    pub(super) fn new(output: String, nondeterministic: bool) -> Entry {
        Entry { format: FORMAT.into(), output, nondeterministic }
    }
}

/// The digest of everything a render reads.
pub(super) fn inputs_digest(helm_version: &str, chart: &Digest, values: &Digest, request: &ReleaseRequest) -> Digest {
    let mut api_versions = request.capabilities.api_versions.clone();
    api_versions.sort();
    api_versions.dedup();
    let key = serde_json::json!({
        "format": FORMAT,
        "helm": helm_version,
        "chart": chart,
        "values": values,
        "release": request.release,
        "namespace": request.namespace,
        "kubeVersion": request.capabilities.kube_version,
        "apiVersions": api_versions,
        "options": request.options,
    });
    Digest::of(&serde_json::to_vec(&key).expect("JSON serialises"))
}

/// Renders kept on disk.
#[derive(Debug)]
pub(super) struct DiskMemo {
    dir: PathBuf,
}

impl DiskMemo {
    /// The memo in `dir`, with stale entries removed.
    pub(super) fn open(dir: &Path) -> Result<DiskMemo, HelmError> {
        std::fs::create_dir_all(dir).map_err(|e| super::error::cache_error(dir, e))?;
        let cutoff = SystemTime::now().checked_sub(STALE);
        for entry in std::fs::read_dir(dir).map_err(|e| super::error::cache_error(dir, e))?.flatten() {
            let modified = entry.metadata().and_then(|m| m.modified()).ok();
            if let (Some(modified), Some(cutoff)) = (modified, cutoff)
                && modified < cutoff
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(DiskMemo { dir: dir.to_path_buf() })
    }

    pub(super) fn get(&self, inputs: &Digest) -> Option<Entry> {
        let path = self.path(inputs);
        let entry: Entry = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        if entry.format != FORMAT {
            return None;
        }
        if let Ok(file) = std::fs::File::options().append(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        Some(entry)
    }

    pub(super) fn put(&self, inputs: &Digest, entry: &Entry) -> Result<(), HelmError> {
        write_atomically(&self.path(inputs), &serde_json::to_vec(entry).expect("JSON serialises"))
    }

    fn path(&self, inputs: &Digest) -> PathBuf {
        self.dir.join(format!("{}.json", inputs.hex()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_and_finds_entries_by_inputs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memo = DiskMemo::open(dir.path()).expect("opens");
        let (a, b) = (Digest::of(b"a"), Digest::of(b"b"));
        memo.put(&a, &Entry::new("out".into(), true)).expect("writes");
        assert_eq!(memo.get(&a), Some(Entry::new("out".into(), true)));
        assert_eq!(memo.get(&b), None);
        std::fs::write(dir.path().join(format!("{}.json", b.hex())), br#"{"format":"other","output":"","nondeterministic":false}"#)
            .expect("write");
        assert_eq!(memo.get(&b), None);
    }

    #[test]
    fn removes_stale_entries_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memo = DiskMemo::open(dir.path()).expect("opens");
        let a = Digest::of(b"a");
        memo.put(&a, &Entry::new("out".into(), false)).expect("writes");
        let old = SystemTime::now() - STALE - Duration::from_secs(60);
        std::fs::File::options().append(true).open(memo.path(&a)).expect("open").set_modified(old).expect("set mtime");
        let memo = DiskMemo::open(dir.path()).expect("opens");
        assert_eq!(memo.get(&a), None);
    }
}
