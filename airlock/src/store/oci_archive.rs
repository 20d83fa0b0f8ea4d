//! The OCI archive store (`oci-archive:PATH`, spec 9.4): a tar of an OCI image layout, as
//! carried across an air gap and as `skopeo copy oci-archive:` reads it.
//!
//! Reading never unpacks: the tar's headers are walked once to find where each layout file
//! sits, then files are read by offset with caps. Anything in the tar that is not a layout
//! file (links, devices, other names) makes the archive malformed. Writing goes through a
//! temporary layout directory and replaces the archive atomically.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::oci::{Artifact, OciDescriptor, RawManifest};
use super::oci_layout::{INDEX_FILE, LayoutFiles, LayoutReader, LayoutStore, OCI_LAYOUT_FILE, blob_name, io_error};
use super::{Fetched, OciStore, PartCopy, PublishMeta, Store, StoreError};
use crate::bundle::SignedBundle;
use crate::bundle::statement::ProfileEntry;
use crate::cluster::ClusterId;
use crate::digest::Digest;
use crate::limits::Limits;

/// An OCI archive file.
pub struct ArchiveStore {
    path: PathBuf,
}

/// Where each layout file sits inside an archive: name → (offset, size).
pub(crate) struct ArchiveFiles {
    path: PathBuf,
    entries: HashMap<String, (u64, u64)>,
}

fn is_layout_name(name: &str) -> bool {
    name == OCI_LAYOUT_FILE
        || name == INDEX_FILE
        || name.strip_prefix("blobs/sha256/").is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl ArchiveFiles {
    /// Walks the archive's headers. A missing file is an empty archive.
    pub(crate) fn scan(path: &Path, limits: &Limits) -> Result<ArchiveFiles, StoreError> {
        let store = format!("oci-archive:{}", path.display());
        let malformed = |message: String| StoreError::Malformed { store: store.clone(), what: "archive".into(), message };
        let mut entries = HashMap::new();
        let file = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ArchiveFiles { path: path.into(), entries }),
            Err(e) => return Err(io_error(&store, "archive", e)),
        };
        let len = file.metadata().map_err(|e| io_error(&store, "archive", e))?.len();
        let mut archive = tar::Archive::new(file);
        for (count, entry) in archive.entries().map_err(|e| malformed(e.to_string()))?.enumerate() {
            if count >= limits.archive_entries {
                return Err(malformed(format!("more than {} entries", limits.archive_entries)));
            }
            let entry = entry.map_err(|e| malformed(format!("truncated or corrupt: {e}")))?;
            let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let name = raw.trim_start_matches("./").to_string();
            let kind = entry.header().entry_type();
            if kind.is_dir() && matches!(name.as_str(), "" | "blobs/" | "blobs/sha256/" | "blobs" | "blobs/sha256") {
                continue;
            }
            if !kind.is_file() || !is_layout_name(&name) {
                return Err(malformed(format!("entry {raw:?} is not a file of an OCI layout")));
            }
            let size = entry.header().size().map_err(|e| malformed(e.to_string()))?;
            let offset = entry.raw_file_position();
            if offset + size > len {
                return Err(malformed(format!("entry {name:?} is truncated")));
            }
            if entries.insert(name.clone(), (offset, size)).is_some() {
                return Err(malformed(format!("entry {name:?} appears twice")));
            }
        }
        Ok(ArchiveFiles { path: path.into(), entries })
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }
}

impl LayoutFiles for ArchiveFiles {
    fn read(&self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(&(offset, size)) = self.entries.get(name) else { return Ok(None) };
        if size > cap {
            return Err(StoreError::Malformed {
                store: self.describe(),
                what: name.to_string(),
                message: format!("{size} bytes, over its cap of {cap}"),
            });
        }
        let err = |e| io_error(&self.describe(), name, e);
        let mut f = fs::File::open(&self.path).map_err(err)?;
        f.seek(SeekFrom::Start(offset)).map_err(err)?;
        let mut bytes = Vec::with_capacity(size as usize);
        f.take(size).read_to_end(&mut bytes).map_err(err)?;
        Ok(Some(bytes))
    }

    fn describe(&self) -> String {
        format!("oci-archive:{}", self.path.display())
    }
}

/// Writes the layout directory `dir` as a tar at `out`, entries in a fixed order with
/// zeroed times and owners, so the same layout makes the same archive.
pub(crate) fn write_archive(dir: &Path, names: &[String], out: &Path) -> Result<(), StoreError> {
    let store = format!("oci-archive:{}", out.display());
    let err = |e| io_error(&store, "archive", e);
    let tmp = out.with_extension(format!("tmp-{}", std::process::id()));
    let mut builder = tar::Builder::new(std::io::BufWriter::new(fs::File::create(&tmp).map_err(err)?));
    let header = |size: u64, dir: bool| {
        let mut h = tar::Header::new_ustar();
        h.set_size(size);
        h.set_mode(if dir { 0o755 } else { 0o644 });
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(if dir { tar::EntryType::Directory } else { tar::EntryType::Regular });
        h
    };
    for d in ["blobs/", "blobs/sha256/"] {
        builder.append_data(&mut header(0, true), d, std::io::empty()).map_err(err)?;
    }
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort();
    for name in sorted {
        let f = fs::File::open(dir.join(name)).map_err(err)?;
        let size = f.metadata().map_err(err)?.len();
        builder.append_data(&mut header(size, false), name, f).map_err(err)?;
    }
    let mut w = builder.into_inner().map_err(err)?;
    std::io::Write::flush(&mut w).map_err(err)?;
    w.get_ref().sync_data().map_err(err)?;
    fs::rename(&tmp, out).map_err(err)
}

/// Writes a new archive at `out` (replacing any) holding `artifacts`. Blobs an artifact
/// lacks are left out: that is how a delta archive is made. Returns the blob bytes written.
pub fn write_new(out: &Path, artifacts: &[(ClusterId, u64, Artifact)]) -> Result<u64, StoreError> {
    let store = format!("oci-archive:{}", out.display());
    let work = tempfile_dir(out).map_err(|e| io_error(&store, "temporary directory", e))?;
    let layout = LayoutStore::open(work.path())?;
    let refs: Vec<_> = artifacts.iter().map(|(c, v, a)| (c.clone(), *v, a)).collect();
    let written = layout.put_artifacts(&refs, &Limits::SPEC)?;
    let names = walk_layout(layout.dir()).map_err(|e| io_error(&store, "layout", e))?;
    write_archive(layout.dir(), &names, out)?;
    Ok(written)
}

impl ArchiveStore {
    pub fn open(path: &Path) -> Result<ArchiveStore, StoreError> {
        Ok(ArchiveStore { path: path.to_path_buf() })
    }

    /// Changes the archive through a temporary layout holding its current content, then
    /// replaces the archive whole, so a failure leaves the old archive as it was.
    fn rewrite(&self, change: impl FnOnce(&LayoutStore) -> Result<u64, StoreError>) -> Result<u64, StoreError> {
        let limits = Limits::SPEC;
        let existing = ArchiveFiles::scan(&self.path, &limits)?;
        let work = tempfile_dir(&self.path).map_err(|e| io_error(&self.describe(), "temporary directory", e))?;
        let layout = LayoutStore::open(work.path())?;
        for name in existing.names() {
            let bytes = existing.read(name, u64::MAX)?.expect("listed");
            layout.put(name, &bytes)?;
        }
        let written = change(&layout)?;
        let names: Vec<String> = walk_layout(layout.dir()).map_err(|e| io_error(&self.describe(), "layout", e))?;
        write_archive(layout.dir(), &names, &self.path)?;
        Ok(written)
    }

    fn reader(&self, limits: &Limits) -> Result<LayoutReader<ArchiveFiles>, StoreError> {
        ArchiveFiles::scan(&self.path, limits).map(LayoutReader::new)
    }
}

#[async_trait]
impl Store for ArchiveStore {
    fn describe(&self) -> String {
        format!("oci-archive:{}", self.path.display())
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        self.reader(limits)?.fetch_envelope(cluster, limits).await
    }

    async fn fetch_part(&self, _: &ClusterId, fetched: &Fetched, part: &ProfileEntry, limits: &Limits) -> Result<PartCopy, StoreError> {
        self.reader(limits)?.fetch_part(fetched, part)
    }

    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        self.rewrite(|layout| layout.publish_bundles(bundles, meta, &Limits::SPEC)).map(|_| ())
    }

    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        self.reader(limits)?.clusters(limits)
    }
}

/// A temporary directory beside `path`, so the final rename stays on one filesystem.
fn tempfile_dir(path: &Path) -> std::io::Result<tempfile::TempDir> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    tempfile::Builder::new().prefix(".airlock-archive-").tempdir_in(parent)
}

/// The layout files of a layout directory, as archive entry names.
fn walk_layout(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for name in [OCI_LAYOUT_FILE, INDEX_FILE] {
        if dir.join(name).exists() {
            names.push(name.to_string());
        }
    }
    let blobs = dir.join("blobs/sha256");
    if !blobs.exists() {
        return Ok(names);
    }
    for entry in fs::read_dir(blobs)? {
        let name = format!("blobs/sha256/{}", entry?.file_name().to_string_lossy());
        if is_layout_name(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

#[async_trait]
impl OciStore for ArchiveStore {
    async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
        self.reader(limits)?.manifest(cluster, tag, limits)
    }

    async fn blob(&self, _: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
        self.reader(&Limits::SPEC)?.blob(d, cap)
    }

    async fn has_blob(&self, _: &ClusterId, digest: &Digest) -> Result<bool, StoreError> {
        Ok(self.reader(&Limits::SPEC)?.files.names().any(|n| n == blob_name(digest)))
    }

    async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
        self.rewrite(|layout| layout.put_artifact_sync(cluster, version, artifact))
    }
}
