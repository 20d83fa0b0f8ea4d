//! Remembers between runs what each cluster rendered to, by the fingerprint of everything
//! its rendering reads (`render::inputs`). A run in which nothing a cluster's rendering
//! reads has changed compares the store with the remembered [`Outline`] instead of
//! rendering the cluster again: re-publishing an unchanged fleet then costs reading the
//! source and the store, not rendering, hashing and signing every bundle.
//!
//! The memo is a cache, never a source of truth: the store still decides every version
//! (spec 9.6), a cluster that must be published is always rendered in full, and a memo
//! file that is missing, unreadable or of another format counts as empty. It holds
//! outlines, never bundles. Each save keeps only the clusters of that run, so it does not
//! grow with clusters long gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, SystemTime};

use airlock_bundle::Digest;
use airlock_bundle::statement::{ClusterSettings, ProfileEntry, Statement};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::render::Failure;

/// Names the file format; a file of another format is ignored.
const FORMAT: &str = "airlock-publisher/render-memo/v2";
/// How memo files are named, in the cache directory they share: [`file_name`].
const FILE_PREFIX: &str = "render-memo-";
/// A memo last saved this long ago belongs to a source nobody publishes from any more.
const STALE: Duration = Duration::from_secs(30 * 86_400);

/// The memo file of a source, named by a digest of how the source is named.
pub fn file_name(source: &str) -> String {
    format!("{FILE_PREFIX}{}.json", Digest::of(source.as_bytes()).name_hex())
}

/// What the comparison with the store needs of a rendered cluster, and what its summary
/// row shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outline {
    pub cluster: String,
    /// The bundle digest.
    pub bundle: Digest,
    pub profiles: Vec<ProfileEntry>,
    /// The cluster's settings its statement carries.
    #[serde(flatten)]
    pub settings: ClusterSettings,
    pub objects: usize,
    pub warnings: Vec<String>,
    /// The profiles that failed to render, whose parts keep what they held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Failure>,
    /// The store's bundle of the same content, when the last run saw one.
    pub stored: Option<Stored>,
}

/// A bundle the store held with an outline's content: its envelope's digest, and what
/// comparing needs of its statement besides the content. The next run that finds the same
/// envelope there knows all this without parsing it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stored {
    pub envelope: Digest,
    /// The digest of the keyring chain stored beside it.
    pub chain: Option<Digest>,
    pub version: u64,
    #[serde(with = "airlock_bundle::statement::rfc3339")]
    pub expires: Timestamp,
    pub keyring_version: u64,
    /// The manifest the store names the bundle by, when it told: while its index names
    /// the same manifest, the store holds this bundle and nothing of it is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Digest>,
}

impl Outline {
    /// The outline of a statement describing a rendered cluster.
    pub fn of(statement: &Statement, objects: usize, warnings: Vec<String>, failures: Vec<Failure>) -> Outline {
        let p = &statement.predicate;
        let bundle = Digest::from_hex(&statement.subject[0].digest.sha256).expect("a statement made here names its bundle digest");
        Outline {
            cluster: p.cluster.clone(),
            bundle,
            profiles: p.profiles.clone(),
            settings: p.settings.clone(),
            objects,
            warnings,
            failures,
            stored: None,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct MemoFile {
    format: String,
    /// Outlines by the fingerprint of their inputs.
    clusters: BTreeMap<Digest, Outline>,
}

/// The outlines remembered from the last run, and those of this run.
#[derive(Debug, Default)]
pub struct Memo {
    /// Where the memo is kept; `None` remembers nothing.
    path: Option<PathBuf>,
    /// The file read and parsed on a thread of its own, taken by the first use of
    /// [`Memo::before`]: parsing a fleet's outlines weighs on an unchanged re-publish, and
    /// the source loads meanwhile.
    reading: Mutex<Option<std::thread::JoinHandle<BTreeMap<Digest, Outline>>>>,
    before: OnceLock<RwLock<BTreeMap<Digest, Outline>>>,
    now: Mutex<BTreeMap<Digest, Outline>>,
}

impl Memo {
    /// A memo that remembers nothing: every cluster is rendered.
    pub fn disabled() -> Memo {
        Memo::default()
    }

    /// The memo kept in `path`, read in the background.
    pub fn open(path: &Path) -> Memo {
        let file = path.to_path_buf();
        let reading = std::thread::spawn(move || read(&file));
        Memo { path: Some(path.to_path_buf()), reading: Mutex::new(Some(reading)), ..Memo::default() }
    }

    /// The outlines of the last run, once read.
    fn before(&self) -> &RwLock<BTreeMap<Digest, Outline>> {
        self.before.get_or_init(|| {
            let reading = self.reading.lock().expect("not poisoned").take();
            RwLock::new(reading.map(|r| r.join().expect("the memo reader panicked")).unwrap_or_default())
        })
    }

    /// What a cluster with these inputs rendered to last time.
    pub fn recall(&self, inputs: &Digest) -> Option<Outline> {
        self.before().read().expect("not poisoned").get(inputs).cloned()
    }

    /// Remembers a cluster of this run.
    pub fn keep(&self, inputs: Digest, outline: Outline) {
        if self.path.is_some() {
            self.now.lock().expect("not poisoned").insert(inputs, outline);
        }
    }

    /// Records the manifest the store names the bundle of the cluster with these inputs
    /// by, once it is written.
    pub fn named(&self, inputs: &Digest, manifest: Digest) {
        if let Some(Outline { stored: Some(stored), .. }) = self.now.lock().expect("not poisoned").get_mut(inputs) {
            stored.manifest = Some(manifest);
        }
    }

    /// Writes this run's outlines, which the next run recalls. Nothing is written when
    /// they are what the file holds already. A memo that cannot be written costs the next
    /// run its renders, not this run its result: it is logged, not returned.
    pub fn save(&self) {
        let Some(path) = &self.path else { return };
        let now = std::mem::take(&mut *self.now.lock().expect("not poisoned"));
        let mut before = self.before().write().expect("not poisoned");
        if now == *before {
            return;
        }
        let file = MemoFile { format: FORMAT.to_string(), clusters: now };
        if let Err(e) = write_atomically(path, &serde_json::to_vec(&file).expect("outlines serialise")) {
            tracing::warn!(path = %path.display(), "could not save the render memo: {e}");
        }
        *before = file.clusters;
        if let Some(dir) = path.parent() {
            forget_stale(dir, SystemTime::now());
        }
    }
}

/// The outlines a memo file holds; none when it is missing, unreadable or of another
/// format.
fn read(path: &Path) -> BTreeMap<Digest, Outline> {
    let file = match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        read => read
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice::<MemoFile>(&bytes).map(Some).map_err(|e| e.to_string())),
    };
    let before = match file {
        Ok(Some(file)) if file.format == FORMAT => file.clusters,
        Ok(_) => BTreeMap::new(),
        Err(e) => {
            tracing::warn!(path = %path.display(), "render memo unreadable, rendering every cluster: {e}");
            BTreeMap::new()
        }
    };
    tracing::debug!(path = %path.display(), clusters = before.len(), "render memo");
    before
}

/// Removes the memos of sources not published from for [`STALE`]: a CI job that checks out
/// to a new directory each time would otherwise leave one per run.
fn forget_stale(dir: &Path, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let memo = name.to_string_lossy().starts_with(FILE_PREFIX);
        let age = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| now.duration_since(t).ok());
        if memo && age.is_some_and(|age| age > STALE) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::ClusterSettings;

    fn outline(cluster: &str) -> Outline {
        let stored = Stored {
            envelope: Digest::of(b"e"),
            chain: None,
            version: 3,
            expires: Timestamp::from_second(1 << 30).unwrap(),
            keyring_version: 1,
            manifest: None,
        };
        let (bundle, warnings) = (Digest::of(cluster.as_bytes()), vec!["w".into()]);
        Outline {
            cluster: cluster.into(),
            bundle,
            profiles: vec![],
            settings: ClusterSettings::default(),
            objects: 1,
            warnings,
            failures: vec![],
            stored: Some(stored),
        }
    }

    #[test]
    fn recalls_what_the_last_run_kept_and_forgets_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sub/memo.json");
        let (a, b) = (Digest::of(b"a"), Digest::of(b"b"));
        let first = Memo::open(&path);
        assert_eq!(first.recall(&a), None);
        first.keep(a, outline("fleet/a"));
        first.keep(b, outline("fleet/b"));
        first.save();
        let second = Memo::open(&path);
        assert_eq!(second.recall(&a), Some(outline("fleet/a")));
        second.keep(b, outline("fleet/b"));
        second.save();
        let third = Memo::open(&path);
        assert_eq!((third.recall(&a), third.recall(&b)), (None, Some(outline("fleet/b"))), "a was not part of the second run");
    }

    #[test]
    fn an_unchanged_run_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("memo.json");
        let inode = || std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
        let a = Digest::of(b"a");
        let first = Memo::open(&path);
        first.keep(a, outline("fleet/a"));
        first.save();
        let written = inode();
        let second = Memo::open(&path);
        second.keep(a, outline("fleet/a"));
        second.save();
        assert_eq!(inode(), written, "a save replaces the file, so an equal inode means no save");
        second.keep(a, outline("fleet/changed"));
        second.save();
        assert_ne!(inode(), written);
    }

    #[test]
    fn memos_of_sources_long_unpublished_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let (old, other) = (tmp.path().join(file_name("dir /old")), tmp.path().join("notes.txt"));
        std::fs::write(&old, "{}").unwrap();
        std::fs::write(&other, "keep").unwrap();
        forget_stale(tmp.path(), SystemTime::now() + STALE / 2);
        assert!(old.exists(), "not stale yet");
        forget_stale(tmp.path(), SystemTime::now() + STALE * 2);
        assert!(!old.exists() && other.exists(), "only memo files are removed");
    }

    #[test]
    fn a_bad_or_foreign_file_is_an_empty_memo_and_disabled_keeps_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("memo.json");
        let a = Digest::of(b"a");
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(Memo::open(&path).recall(&a), None);
        std::fs::write(
            &path,
            serde_json::to_vec(&MemoFile { format: "other/v9".into(), clusters: BTreeMap::from([(a, outline("fleet/a"))]) }).unwrap(),
        )
        .unwrap();
        assert_eq!(Memo::open(&path).recall(&a), None);
        let off = Memo::disabled();
        off.keep(a, outline("fleet/a"));
        off.save();
        assert_eq!(off.recall(&a), None);
    }
}
