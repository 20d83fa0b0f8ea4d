//! Writing a layout directory, crash-safe under an exclusive lock: blobs first, each
//! created under its own name (one found there from a write that crashed counts only when
//! it holds exactly the bytes its name promises), flushed to disk with one `syncfs` rather
//! than an fsync per blob, then the index that names them, written to a temporary name and
//! renamed. Blobs are written on several threads; the index never names a blob before it is
//! on disk.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::num::NonZero;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::files::{DirFiles, INDEX_FILE, OCI_LAYOUT_CONTENT, OCI_LAYOUT_FILE, blob_name, io_error};
use super::index::{Manifest, updated_index};
use super::read::LayoutReader;
use crate::error::StoreError;
use crate::oci::Artifact;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;

/// The writing side of a layout directory.
pub(crate) struct LayoutWriter {
    dir: PathBuf,
    /// The layout as messages name it.
    store: String,
}

impl LayoutWriter {
    pub(super) fn new(dir: &Path, store: String) -> LayoutWriter {
        LayoutWriter { dir: dir.to_path_buf(), store }
    }

    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(super) fn store(&self) -> &str {
        &self.store
    }

    /// Writes `bytes` under `name` through a temporary name, unless a file of that size is
    /// there already: every write takes the lock, which writes the `oci-layout` marker,
    /// whose content never changes. Blobs of artifacts go through [`LayoutWriter::put_blob`];
    /// this one also copies an archive's files into an empty layout. Nothing is flushed to
    /// disk here; see [`LayoutWriter::sync`]. Returns whether it wrote.
    pub(crate) fn put(&self, name: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        if name != INDEX_FILE && fs::metadata(self.dir.join(name)).is_ok_and(|m| m.len() == bytes.len() as u64) {
            return Ok(false);
        }
        self.replace(name, bytes).map(|()| true)
    }

    /// Writes `bytes` under `name` through a temporary name, whatever is there.
    fn replace(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.dir.join(name);
        let err = |e| io_error(&self.store, name, e);
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
    /// once, where a temporary name and a rename took it twice: a publish of many blobs
    /// into one directory queued on that lock. A crash can leave a blob cut short, so one
    /// found there counts only when it holds exactly `bytes`, and is replaced through a
    /// temporary name when not. The index names no blob before [`LayoutWriter::sync`].
    pub(super) fn put_blob(&self, digest: &Digest, bytes: &[u8]) -> Result<bool, StoreError> {
        let name = blob_name(digest);
        let path = self.dir.join(&name);
        let err = |e| io_error(&self.store, &name, e);
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
        flush(&self.dir, &self.store.clone())
    }

    /// Writes artifacts (cluster, version, artifact) under an exclusive lock: every blob
    /// first (once, however many artifacts name it), durably, then the index that names
    /// them. Returns the blob bytes written.
    pub(super) fn put_artifacts(
        &self,
        reader: &LayoutReader<DirFiles>,
        artifacts: &[(ClusterId, u64, &Artifact)],
        limits: &Limits,
    ) -> Result<u64, StoreError> {
        let _lock = self.lock()?;
        let written = Written::default();
        let blobs: Vec<(Digest, &[u8])> = artifacts.iter().flat_map(|(_, _, a)| blobs_of(a)).collect();
        in_parallel(&blobs, cores() * 2, |(digest, bytes)| written.put(self, digest, bytes)).into_iter().collect::<Result<(), _>>()?;
        let manifests: Vec<_> = artifacts.iter().map(|(c, v, a)| (c.clone(), *v, Manifest::of(a))).collect();
        self.commit(reader, &manifests, written, limits)
    }

    /// Creates the layout and takes its write lock, held until the file is dropped: two
    /// writers on one layout would otherwise each rewrite index.json without the other's
    /// entries.
    pub(super) fn lock(&self) -> Result<fs::File, StoreError> {
        let store = &self.store;
        fs::create_dir_all(&self.dir).map_err(|e| io_error(store, "directory", e))?;
        let path = self.dir.join(".airlock.lock");
        // A puller writing its reports into a layout its publisher made may not write the
        // lock file; a lock taken on a file opened for reading locks all the same.
        let lock = match fs::File::create(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => fs::File::open(&path),
            opened => opened,
        }
        .map_err(|e| io_error(store, "lock", e))?;
        lock.lock().map_err(|e| io_error(store, "lock", e))?;
        self.put(OCI_LAYOUT_FILE, OCI_LAYOUT_CONTENT)?;
        Ok(lock)
    }

    /// Flushes the blobs written to disk, then writes the index naming the artifacts (by
    /// their manifests) and flushes it. Returns the blob bytes written.
    pub(super) fn commit(
        &self,
        reader: &LayoutReader<DirFiles>,
        artifacts: &[(ClusterId, u64, Manifest)],
        written: Written,
        limits: &Limits,
    ) -> Result<u64, StoreError> {
        let store = &self.store;
        let (blobs, bytes) = written.totals();
        tracing::debug!(store, blobs, written = bytes, "blobs written");
        self.sync()?;
        let tagged: Vec<_> = artifacts.iter().map(|(c, v, m)| (c.to_string(), *v, *m)).collect();
        let index = updated_index(store, reader.index(limits)?.index.clone(), &tagged)?;
        self.put(INDEX_FILE, &serde_json::to_vec(&index).expect("index serialises"))?;
        self.sync()?;
        Ok(bytes)
    }
}

/// An artifact's blobs and its manifest, each as (digest, bytes).
pub(super) fn blobs_of(artifact: &Artifact) -> impl Iterator<Item = (Digest, &[u8])> {
    let blobs = artifact.blobs.iter().map(|b| (b.digest, b.bytes.as_slice()));
    blobs.chain([(artifact.manifest_digest, artifact.manifest_bytes.as_slice())])
}

/// The blobs one write has put, so each is written once however many artifacts or
/// threads name it, and what that wrote.
#[derive(Default)]
pub(super) struct Written(Mutex<(HashSet<Digest>, u64)>);

impl Written {
    /// Writes a blob unless this write already claimed it (a thread claiming it writes it).
    pub(super) fn put(&self, store: &LayoutWriter, digest: &Digest, bytes: &[u8]) -> Result<(), StoreError> {
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
/// [`LayoutWriter::sync`]). Each call opens the directory anew: a writeback error is
/// reported once per open file, so a flush behind never hides one from the commit's.
pub(super) fn flush(dir: &Path, store: &str) -> Result<(), StoreError> {
    let handle = fs::File::open(dir).map_err(|e| io_error(store, "directory", e))?;
    rustix::fs::syncfs(&handle).map_err(|e| io_error(store, "syncfs", e.into()))
}

pub(super) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, NonZero::get)
}

/// `f` of every item on `threads` threads, results in the order of `items`. Each thread
/// takes the next item when it is done with one, so uneven items spread evenly.
pub(super) fn in_parallel<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
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
