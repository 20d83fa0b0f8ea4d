//! The OCI image layout store (`oci-layout:PATH`, spec 9.3), and the reading half every
//! layout-shaped store shares: resolving a cluster through `index.json` and reading blobs
//! with caps and digest checks. The archive store reuses it over a tar file.
//!
//! Writes are crash-safe, under an exclusive lock: blobs first, then the index that names
//! them, written to a temporary name and renamed. A blob is created under its own name,
//! and one found there from a write that crashed counts only when it holds exactly the
//! bytes its name promises; the index never names a blob before it is on disk. A publish of
//! thousands of clusters writes its blobs on several threads and flushes them to disk with
//! one `syncfs` (an fsync per blob took a millisecond each), then writes the index.
//! Readers parse `index.json` once and keep it while the file is unchanged.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io::{Read, Write};
use std::num::NonZero;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;

use super::oci::{self, Artifact, GzipCache, OciDescriptor, OciIndex, REF_NAME, RawManifest};
use super::{Batch, EnvelopeDigests, Fetched, Locator, OciStore, PartCopy, PublishMeta, Store, StoreError};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;

pub(crate) const OCI_LAYOUT_FILE: &str = "oci-layout";
pub(crate) const OCI_LAYOUT_CONTENT: &[u8] = br#"{"imageLayoutVersion":"1.0.0"}"#;
pub(crate) const INDEX_FILE: &str = "index.json";

/// Named files of a layout, wherever they are kept (a directory or a tar).
pub(crate) trait LayoutFiles: Send + Sync {
    /// Reads `name` (e.g. `blobs/sha256/<hex>`), refusing more than `cap` bytes.
    /// `Ok(None)` when there is no such file.
    fn read(&self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, StoreError>;
    fn describe(&self) -> String;
    /// What tells, without reading it, that `name` still holds what was read before;
    /// `None` when these files cannot tell (nothing is then kept between reads).
    fn stamp(&self, _name: &str) -> Option<Stamp> {
        None
    }
}

/// A file's size, modification time and inode. Writers replace files by renaming a new
/// one over them, which changes the inode, so an equal stamp means the same content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    len: u64,
    modified: SystemTime,
    inode: u64,
}

pub(crate) fn blob_name(digest: &Digest) -> String {
    format!("blobs/sha256/{}", digest.hex())
}

/// A parsed `index.json`, its entries found by reference name.
pub(crate) struct IndexView {
    pub(crate) index: OciIndex,
    by_ref: HashMap<String, usize>,
}

impl IndexView {
    fn new(index: OciIndex) -> IndexView {
        let by_ref = index.manifests.iter().enumerate().filter_map(|(i, d)| Some((d.annotations.get(REF_NAME)?.clone(), i))).collect();
        IndexView { index, by_ref }
    }

    fn get(&self, ref_name: &str) -> Option<&OciDescriptor> {
        self.by_ref.get(ref_name).map(|&i| &self.index.manifests[i])
    }
}

/// The reading side of a layout: `index.json` → manifest → blobs.
pub(crate) struct LayoutReader<F: LayoutFiles> {
    pub(crate) files: F,
    /// The index last parsed, with the stamp its file had: a publisher reads 10,000
    /// clusters' manifests in one run, and parsing a 5 MB index for each dominated it.
    memo: Mutex<Option<(Stamp, Arc<IndexView>)>>,
}

impl<F: LayoutFiles> LayoutReader<F> {
    pub(crate) fn new(files: F) -> LayoutReader<F> {
        LayoutReader { files, memo: Mutex::new(None) }
    }

    fn malformed(&self, what: &str, message: impl Into<String>) -> StoreError {
        StoreError::Malformed { store: self.files.describe(), what: what.to_string(), message: message.into() }
    }

    /// `index.json`, or an empty index when the layout does not exist yet.
    ///
    /// Read and parsed under the memo's lock: a publisher asks for 16 clusters at once,
    /// and each parsed the whole index before the first had kept it (a fifth of an
    /// unchanged re-publish of 10,000 clusters).
    pub(crate) fn index(&self, limits: &Limits) -> Result<Arc<IndexView>, StoreError> {
        let mut memo = self.memo.lock().expect("not poisoned");
        // Taken before reading: should the file change in between, the next stamp
        // differs from this one and the index is read again.
        let stamp = self.files.stamp(INDEX_FILE);
        if let (Some(now), Some((then, view))) = (stamp, &*memo)
            && now == *then
        {
            return Ok(view.clone());
        }
        let index = match self.files.read(INDEX_FILE, limits.oci_index_bytes)? {
            None => OciIndex::new(Vec::new()),
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| self.malformed(INDEX_FILE, e.to_string()))?,
        };
        let view = Arc::new(IndexView::new(index));
        if let Some(now) = stamp {
            *memo = Some((now, view.clone()));
        }
        Ok(view)
    }

    /// A blob, read with `cap` and checked against its descriptor.
    pub(crate) fn blob(&self, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
        let what = format!("blob {}", d.digest);
        if d.size > cap {
            return Err(self.malformed(&what, format!("descriptor says {} bytes, over the cap of {cap}", d.size)));
        }
        let bytes = self
            .files
            .read(&blob_name(&d.digest), cap)?
            .ok_or_else(|| StoreError::NotFound { store: self.files.describe(), what: what.clone() })?;
        if bytes.len() as u64 != d.size || Digest::of(&bytes) != d.digest {
            return Err(self.malformed(&what, "content does not match its digest and size"));
        }
        Ok(bytes)
    }

    /// The manifest tagged `<cluster>:<tag>`.
    pub(crate) fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
        let name = oci::ref_name(&cluster.to_string(), tag);
        let index = self.index(limits)?;
        let entry =
            index.get(&name).ok_or_else(|| StoreError::NotFound { store: self.files.describe(), what: format!("bundle for {cluster}") })?;
        let bytes = self.blob(entry, limits.oci_manifest_bytes)?;
        RawManifest::parse(&self.files.describe(), &format!("manifest {name}"), bytes)
    }

    pub(crate) async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        let manifest = self.manifest(cluster, "latest", limits)?.manifest;
        oci::fetched_from_manifest(&self.files.describe(), cluster, manifest, limits, |d, cap| async move { self.blob(&d, cap) }).await
    }

    /// The digest of `cluster`'s newest manifest as the index names it, when its blob is
    /// there at the size the index gives; `None` when these files cannot tell that without
    /// reading it (an archive).
    pub(crate) fn latest_manifest(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<Digest>, StoreError> {
        let name = oci::ref_name(&cluster.to_string(), "latest");
        let index = self.index(limits)?;
        let entry =
            index.get(&name).ok_or_else(|| StoreError::NotFound { store: self.files.describe(), what: format!("bundle for {cluster}") })?;
        Ok(self.files.stamp(&blob_name(&entry.digest)).filter(|s| s.len == entry.size).map(|_| entry.digest))
    }

    pub(crate) fn envelope_digests(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        let manifest = self.manifest(cluster, "latest", limits)?.manifest;
        oci::envelope_digests(&self.files.describe(), &manifest).map(Some)
    }

    pub(crate) fn fetch_part(&self, fetched: &Fetched, part: &ProfileEntry) -> Result<PartCopy, StoreError> {
        let Locator::Oci(manifest) = &fetched.locator else {
            return Err(self.malformed("fetch", "envelope was not fetched from this store"));
        };
        let layer = manifest.part_layer(&part.digest).ok_or_else(|| StoreError::Malformed {
            store: self.files.describe(),
            what: format!("manifest of {}", part.name),
            message: format!("no layer holds part {} ({})", part.name, part.digest),
        })?;
        self.blob(layer, Limits::transport_cap(part.size)).map(PartCopy::Gzip)
    }

    pub(crate) fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        let mut out: Vec<ClusterId> = self
            .index(limits)?
            .index
            .manifests
            .iter()
            .filter_map(|d| d.annotations.get(REF_NAME)?.strip_suffix(":latest")?.parse().ok())
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// Index entries after publishing `artifacts`: each cluster gets `:v<version>` and its
/// `:latest` moves. Re-tagging an existing version with other content is refused.
pub(crate) fn updated_index(store: &str, mut index: OciIndex, artifacts: &[(String, u64, &Artifact)]) -> Result<OciIndex, StoreError> {
    let mut by_ref: BTreeMap<String, OciDescriptor> =
        index.manifests.drain(..).map(|d| (d.annotations.get(REF_NAME).cloned().unwrap_or_default(), d)).collect();
    for (cluster, version, artifact) in artifacts {
        let descriptor = |tag: &str| OciDescriptor {
            media_type: oci::MANIFEST_MEDIA_TYPE.to_string(),
            digest: artifact.manifest_digest,
            size: artifact.manifest_bytes.len() as u64,
            artifact_type: Some(oci::ARTIFACT_TYPE.to_string()),
            annotations: BTreeMap::from([(REF_NAME.to_string(), oci::ref_name(cluster, tag))]),
        };
        let versioned = oci::ref_name(cluster, &format!("v{version}"));
        if let Some(existing) = by_ref.get(&versioned)
            && existing.digest != artifact.manifest_digest
        {
            return Err(StoreError::Config {
                store: store.to_string(),
                message: format!("{versioned} already exists with other content; versions are never reused"),
            });
        }
        by_ref.insert(versioned, descriptor(&format!("v{version}")));
        by_ref.insert(oci::ref_name(cluster, "latest"), descriptor("latest"));
    }
    index.manifests = by_ref.into_values().collect();
    Ok(index)
}

/// A layout directory on disk.
pub struct LayoutStore {
    dir: PathBuf,
    reader: LayoutReader<DirFiles>,
    cache: GzipCache,
}

pub(crate) struct DirFiles(PathBuf);

impl LayoutFiles for DirFiles {
    fn read(&self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.0.join(name);
        let file = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&self.describe(), name, e)),
        };
        let mut bytes = Vec::new();
        file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| io_error(&self.describe(), name, e))?;
        if bytes.len() as u64 > cap {
            return Err(StoreError::Malformed {
                store: self.describe(),
                what: name.to_string(),
                message: format!("larger than its cap of {cap} bytes"),
            });
        }
        Ok(Some(bytes))
    }

    fn describe(&self) -> String {
        format!("oci-layout:{}", self.0.display())
    }

    fn stamp(&self, name: &str) -> Option<Stamp> {
        let m = fs::metadata(self.0.join(name)).ok()?;
        Some(Stamp { len: m.len(), modified: m.modified().ok()?, inode: m.ino() })
    }
}

pub(crate) fn io_error(store: &str, what: &str, e: std::io::Error) -> StoreError {
    StoreError::Config { store: store.to_string(), message: format!("{what}: {e}") }
}

impl LayoutStore {
    /// Opens a layout directory; it is created on the first publish.
    pub fn open(dir: &Path) -> Result<LayoutStore, StoreError> {
        let store =
            LayoutStore { dir: dir.to_path_buf(), reader: LayoutReader::new(DirFiles(dir.to_path_buf())), cache: GzipCache::default() };
        if dir.exists() && !dir.join(OCI_LAYOUT_FILE).exists() && fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(StoreError::Config {
                store: store.describe(),
                message: "directory exists, is not empty and is not an OCI layout".into(),
            });
        }
        Ok(store)
    }

    /// Writes `bytes` under `name` through a temporary name, unless a file of that size is
    /// there already: every write takes the lock, which writes the `oci-layout` marker,
    /// whose content never changes. Blobs of artifacts go through [`LayoutStore::put_blob`];
    /// this one also copies an archive's files into an empty layout. Nothing is flushed to
    /// disk here; see [`LayoutStore::sync`]. Returns whether it wrote.
    pub(crate) fn put(&self, name: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        if name != INDEX_FILE && fs::metadata(self.dir.join(name)).is_ok_and(|m| m.len() == bytes.len() as u64) {
            return Ok(false);
        }
        self.replace(name, bytes).map(|()| true)
    }

    /// Writes `bytes` under `name` through a temporary name, whatever is there.
    fn replace(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.dir.join(name);
        let err = |e| io_error(&self.describe(), name, e);
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        let write = || fs::File::create(&tmp).and_then(|mut f| f.write_all(bytes));
        match write() {
            // The first blob of a new layout; checking the directory for every blob cost a
            // syscall or two each.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir_all(path.parent().expect("names have a parent")).and_then(|_| write()).map_err(err)?
            }
            written => written.map_err(err)?,
        }
        fs::rename(&tmp, &path).map_err(err)
    }

    /// Writes blob `digest` unless the layout holds it already; returns whether it wrote.
    ///
    /// A new blob is created in place under its name, which takes the directory's lock
    /// once, where a temporary name and a rename took it twice: a publish of 50,000 blobs
    /// into one directory queued on that lock. A crash can leave a blob cut short, so one
    /// found there counts only when it holds exactly `bytes`, and is replaced through a
    /// temporary name when not. The index names no blob before [`LayoutStore::sync`].
    fn put_blob(&self, digest: &Digest, bytes: &[u8]) -> Result<bool, StoreError> {
        let name = blob_name(digest);
        let path = self.dir.join(&name);
        let err = |e| io_error(&self.describe(), &name, e);
        let create = || fs::OpenOptions::new().write(true).create_new(true).open(&path);
        let created = match create() {
            // The first blob of a new layout.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir_all(path.parent().expect("names have a parent")).and_then(|_| create())
            }
            created => created,
        };
        match created {
            Ok(mut file) => match file.write_all(bytes) {
                Ok(()) => Ok(true),
                Err(e) => {
                    // Best effort: a blob left cut short is replaced by the next write anyway.
                    let _ = fs::remove_file(&path);
                    Err(err(e))
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let held = fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64) && fs::read(&path).is_ok_and(|b| b == bytes);
                if held { Ok(false) } else { self.replace(&name, bytes).map(|()| true) }
            }
            Err(e) => Err(err(e)),
        }
    }

    /// Flushes everything written so far to disk. One `syncfs` for a whole batch costs
    /// about what a single fsync does; it also flushes other writers on the same
    /// filesystem, which is the price of not paying a journal commit per blob.
    fn sync(&self) -> Result<(), StoreError> {
        flush(&self.dir, &self.describe())
    }

    /// Writes artifacts (cluster, version, artifact) under an exclusive lock: every blob
    /// first (once, however many artifacts name it), durably, then the index that names
    /// them. Returns the blob bytes written.
    pub(crate) fn put_artifacts(&self, artifacts: &[(ClusterId, u64, &Artifact)], limits: &Limits) -> Result<u64, StoreError> {
        let _lock = self.lock()?;
        let written = Written::default();
        let blobs: Vec<(Digest, &[u8])> = artifacts.iter().flat_map(|(_, _, a)| blobs_of(a)).collect();
        in_parallel(&blobs, cores() * 2, |(digest, bytes)| written.put(self, digest, bytes)).into_iter().collect::<Result<(), _>>()?;
        self.commit(artifacts, written, limits)
    }

    /// Creates the layout and takes its write lock, held until the file is dropped: two
    /// writers on one layout would otherwise each rewrite index.json without the other's
    /// entries.
    fn lock(&self) -> Result<fs::File, StoreError> {
        let store = self.describe();
        fs::create_dir_all(&self.dir).map_err(|e| io_error(&store, "directory", e))?;
        let lock = fs::File::create(self.dir.join(".airlock.lock")).map_err(|e| io_error(&store, "lock", e))?;
        lock.lock().map_err(|e| io_error(&store, "lock", e))?;
        self.put(OCI_LAYOUT_FILE, OCI_LAYOUT_CONTENT)?;
        Ok(lock)
    }

    /// Flushes the blobs written to disk, then writes the index naming the artifacts and
    /// flushes it. Returns the blob bytes written.
    fn commit(&self, artifacts: &[(ClusterId, u64, &Artifact)], written: Written, limits: &Limits) -> Result<u64, StoreError> {
        let store = self.describe();
        let (blobs, bytes) = written.totals();
        tracing::debug!(store, blobs, written = bytes, "blobs written");
        self.sync()?;
        let tagged: Vec<_> = artifacts.iter().map(|(c, v, a)| (c.to_string(), *v, *a)).collect();
        let index = updated_index(&store, self.reader.index(limits)?.index.clone(), &tagged)?;
        self.put(INDEX_FILE, &serde_json::to_vec(&index).expect("index serialises"))?;
        self.sync()?;
        Ok(bytes)
    }

    pub(crate) fn put_artifact_sync(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
        self.put_artifacts(&[(cluster.clone(), version, artifact)], &Limits::SPEC)
    }

    /// Publishes signed bundles. Returns the blob bytes written.
    pub(crate) fn publish_bundles(&self, bundles: &[SignedBundle], meta: &PublishMeta, limits: &Limits) -> Result<u64, StoreError> {
        let mut batch = LayoutBatch::new(self, meta);
        batch.write(bundles)?;
        batch.finish(limits)
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

/// An artifact's blobs and its manifest, each as (digest, bytes).
fn blobs_of(artifact: &Artifact) -> impl Iterator<Item = (Digest, &[u8])> {
    let blobs = artifact.blobs.iter().map(|b| (b.digest, b.bytes.as_slice()));
    blobs.chain([(artifact.manifest_digest, artifact.manifest_bytes.as_slice())])
}

/// Bundles written into a layout as they come, and named in its index at the end.
struct LayoutBatch<'s> {
    store: &'s LayoutStore,
    meta: PublishMeta,
    /// The layout's write lock, taken by the first write.
    lock: Option<fs::File>,
    written: Written,
    /// What the index will name: the artifacts written, their blobs dropped.
    artifacts: Vec<(ClusterId, u64, Artifact)>,
    /// A flush of the blobs written so far, running while the next ones are made.
    flushing: Option<std::thread::JoinHandle<Result<(), StoreError>>>,
}

impl<'s> LayoutBatch<'s> {
    fn new(store: &'s LayoutStore, meta: &PublishMeta) -> LayoutBatch<'s> {
        LayoutBatch { store, meta: meta.clone(), lock: None, written: Written::default(), artifacts: Vec::new(), flushing: None }
    }

    /// Writes the blobs of `bundles`; returns the digests of their manifests, in order.
    ///
    /// Each thread builds an artifact (compressing its new parts, most of a large
    /// publish's work) and writes its blobs at once: creating files waits on the
    /// filesystem, which other threads' compressing fills, and only manifests are kept
    /// until the index is written, not every envelope twice.
    fn write(&mut self, bundles: &[SignedBundle]) -> Result<Vec<Digest>, StoreError> {
        if bundles.is_empty() {
            return Ok(Vec::new());
        }
        let store = self.store;
        let mut clusters = Vec::with_capacity(bundles.len());
        for signed in bundles {
            let cluster: ClusterId = signed.cluster().parse().map_err(|e: airlock_bundle::cluster::BadClusterId| StoreError::Config {
                store: store.describe(),
                message: e.to_string(),
            })?;
            clusters.push(cluster);
        }
        if self.lock.is_none() {
            self.lock = Some(store.lock()?);
        }
        let written = &self.written;
        let built = in_parallel(bundles, cores() * 2, |signed| {
            let mut artifact = oci::artifact(signed, &self.meta, &store.cache);
            for (digest, bytes) in blobs_of(&artifact) {
                written.put(store, &digest, bytes)?;
            }
            artifact.blobs.clear();
            Ok(artifact)
        });
        let built = built.into_iter().collect::<Result<Vec<_>, StoreError>>()?;
        let manifests = built.iter().map(|a| a.manifest_digest).collect();
        self.artifacts.extend(clusters.into_iter().zip(bundles).zip(built).map(|((c, s), a)| (c, s.version(), a)));
        self.flush_behind()?;
        Ok(manifests)
    }

    /// Starts flushing the blobs written so far to disk on a thread of its own, unless the
    /// last such flush is still running: the disk writes while the publisher renders the
    /// next clusters, and the commit's flush finds little left. A publish of 10,000
    /// clusters waited 0.4 s for its one flush at the end.
    fn flush_behind(&mut self) -> Result<(), StoreError> {
        if self.flushing.as_ref().is_some_and(|f| !f.is_finished()) {
            return Ok(());
        }
        self.flushed()?;
        let (dir, store) = (self.store.dir.clone(), self.store.describe());
        self.flushing = Some(std::thread::spawn(move || flush(&dir, &store)));
        Ok(())
    }

    /// Waits for the flush running behind, and returns what it found.
    fn flushed(&mut self) -> Result<(), StoreError> {
        self.flushing.take().map_or(Ok(()), |f| f.join().expect("a flush thread panicked"))
    }

    /// Names the artifacts written in the index. Returns the blob bytes written.
    fn finish(mut self, limits: &Limits) -> Result<u64, StoreError> {
        if self.lock.is_none() {
            return Ok(0);
        }
        self.flushed()?;
        let artifacts: Vec<_> = self.artifacts.iter().map(|(c, v, a)| (c.clone(), *v, a)).collect();
        self.store.commit(&artifacts, self.written, limits)
    }
}

#[async_trait]
impl Batch for LayoutBatch<'_> {
    async fn add(&mut self, bundles: Vec<SignedBundle>) -> Result<Vec<Option<Digest>>, StoreError> {
        Ok(self.write(&bundles)?.into_iter().map(Some).collect())
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        self.finish(&Limits::SPEC).map(|_| ())
    }
}

/// The blobs one write has put, so each is written once however many artifacts or
/// threads name it, and what that wrote.
#[derive(Default)]
struct Written(Mutex<(HashSet<Digest>, u64)>);

impl Written {
    /// Writes a blob unless this write already claimed it (a thread claiming it writes it).
    fn put(&self, store: &LayoutStore, digest: &Digest, bytes: &[u8]) -> Result<(), StoreError> {
        if !self.0.lock().expect("not poisoned").0.insert(*digest) {
            return Ok(());
        }
        if store.put_blob(digest, bytes)? {
            self.0.lock().expect("not poisoned").1 += bytes.len() as u64;
        }
        Ok(())
    }

    /// Blobs claimed, and bytes written.
    fn totals(self) -> (usize, u64) {
        let (claimed, bytes) = self.0.into_inner().expect("not poisoned");
        (claimed.len(), bytes)
    }
}

/// Flushes everything written to the filesystem holding `dir` to disk (see
/// [`LayoutStore::sync`]). Each call opens the directory anew: a writeback error is
/// reported once per open file, so a flush behind never hides one from the commit's.
fn flush(dir: &Path, store: &str) -> Result<(), StoreError> {
    let handle = fs::File::open(dir).map_err(|e| io_error(store, "directory", e))?;
    rustix::fs::syncfs(&handle).map_err(|e| io_error(store, "syncfs", e.into()))
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, NonZero::get)
}

/// `f` of every item on `threads` threads, results in the order of `items`. Each thread
/// takes the next item when it is done with one, so uneven items spread evenly.
fn in_parallel<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.clamp(1, items.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, f(item)));
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("a layout worker panicked")).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[async_trait]
impl Store for LayoutStore {
    fn describe(&self) -> String {
        self.reader.files.describe()
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        self.reader.fetch_envelope(cluster, limits).await
    }

    async fn envelope_digests(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        self.reader.envelope_digests(cluster, limits)
    }

    async fn manifest_digest(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<Digest>, StoreError> {
        self.reader.latest_manifest(cluster, limits)
    }

    async fn fetch_part(&self, _: &ClusterId, fetched: &Fetched, part: &ProfileEntry, _: &Limits) -> Result<PartCopy, StoreError> {
        self.reader.fetch_part(fetched, part)
    }

    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        self.publish_bundles(bundles, meta, &Limits::SPEC).map(|_| ())
    }

    fn batch<'s>(&'s self, meta: &PublishMeta) -> Box<dyn Batch + 's> {
        Box::new(LayoutBatch::new(self, meta))
    }

    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        self.reader.clusters(limits)
    }
}

#[async_trait]
impl OciStore for LayoutStore {
    async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
        self.reader.manifest(cluster, tag, limits)
    }

    async fn blob(&self, _: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
        self.reader.blob(d, cap)
    }

    async fn has_blob(&self, _: &ClusterId, digest: &Digest) -> Result<bool, StoreError> {
        Ok(self.dir.join(blob_name(digest)).is_file())
    }

    async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
        self.put_artifact_sync(cluster, version, artifact)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// An index that counts how often it is read, and never changes.
    struct Counted(AtomicUsize);

    impl LayoutFiles for Counted {
        fn read(&self, _: &str, _: u64) -> Result<Option<Vec<u8>>, StoreError> {
            self.0.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_millis(20));
            Ok(Some(serde_json::to_vec(&OciIndex::new(Vec::new())).expect("index serialises")))
        }
        fn describe(&self) -> String {
            "counted".into()
        }
        fn stamp(&self, _: &str) -> Option<Stamp> {
            Some(Stamp { len: 1, modified: SystemTime::UNIX_EPOCH, inode: 1 })
        }
    }

    #[test]
    fn readers_asking_at_once_read_the_index_once() {
        let reader = LayoutReader::new(Counted(AtomicUsize::new(0)));
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| reader.index(&Limits::SPEC).expect("index"));
            }
        });
        assert_eq!(reader.files.0.load(Ordering::Relaxed), 1);
    }
}
