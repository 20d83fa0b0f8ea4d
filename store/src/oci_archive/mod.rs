//! The OCI archive store (`oci-archive:PATH`, spec 9.4): a tar of an OCI image layout, as
//! carried across an air gap and as `skopeo copy oci-archive:` reads it.
//!
//! Reading never unpacks: `scan` walks the tar's headers once to find where each layout
//! file sits, and the layout store's reader then reads them by offset with caps. Writing
//! goes through a temporary layout directory, and `write` replaces the archive with the
//! new one atomically.

mod scan;
#[cfg(test)]
mod tests;
mod write;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::error::StoreError;
use crate::fetched::{EnvelopeDigests, Fetched, PartCopy};
use crate::meta::PublishMeta;
use crate::oci::{Artifact, OciDescriptor, RawManifest};
use crate::oci_layout::{INDEX_FILE, LayoutFiles, LayoutReader, LayoutStore, OCI_LAYOUT_FILE, blob_name, io_error};
use crate::store::{OciStore, Store};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;
use scan::{ArchiveFiles, is_layout_name};
use write::write_archive;
pub use write::{write_new, write_tar};

/// An OCI archive file.
pub struct ArchiveStore {
    path: PathBuf,
    /// The last scan of the archive, with the file's size, time and inode then: an import
    /// reads every cluster's manifest and blobs, and scanning each time made it quadratic.
    scanned: Mutex<Option<(FileStamp, Arc<LayoutReader<ArchiveFiles>>)>>,
}

type FileStamp = (u64, Option<std::time::SystemTime>, u64);

fn file_stamp(path: &Path) -> Option<FileStamp> {
    let m = fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok(), std::os::unix::fs::MetadataExt::ino(&m)))
}

impl ArchiveStore {
    pub fn open(path: &Path) -> Result<ArchiveStore, StoreError> {
        Ok(ArchiveStore { path: path.to_path_buf(), scanned: Mutex::new(None) })
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

    fn reader(&self, limits: &Limits) -> Result<Arc<LayoutReader<ArchiveFiles>>, StoreError> {
        // Taken before scanning: should the archive be replaced meanwhile, the next stamp
        // differs and it is scanned again.
        let stamp = file_stamp(&self.path);
        if let (Some(now), Some((then, reader))) = (stamp, &*self.scanned.lock().expect("not poisoned"))
            && now == *then
        {
            return Ok(reader.clone());
        }
        let reader = Arc::new(LayoutReader::new(ArchiveFiles::scan(&self.path, limits)?));
        if let Some(now) = stamp {
            *self.scanned.lock().expect("not poisoned") = Some((now, reader.clone()));
        }
        Ok(reader)
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

    async fn envelope_digests(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        self.reader(limits)?.envelope_digests(cluster, limits)
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
