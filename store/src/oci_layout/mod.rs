//! The OCI image layout store (`oci-layout:PATH`, spec 9.3): a directory holding one
//! `index.json` that tags each cluster's manifests `<cluster>:v<version>` and
//! `<cluster>:latest`, and the blobs they name.
//!
//! `files` names the layout's files and reads them with caps, `index` parses and updates
//! `index.json`, `read` resolves a cluster to its manifest and blobs (the archive store
//! reuses it over a tar), `write` writes blobs and then the index crash-safe under a lock,
//! `batch` feeds a publish a few bundles at a time, and `reports` keeps the pullers'
//! reports beside the bundles (spec 14.7). This module joins them into a [`Store`]; it
//! never deletes a blob a layout holds.

mod batch;
mod files;
mod index;
mod read;
mod reports;
mod write;

use std::fs;
use std::path::Path;

use async_trait::async_trait;

pub(crate) use files::{INDEX_FILE, LayoutFiles, OCI_LAYOUT_CONTENT, OCI_LAYOUT_FILE, blob_name, io_error};
pub(crate) use index::{Manifest, updated_index};
pub(crate) use read::LayoutReader;

use crate::error::StoreError;
use crate::fetched::{EnvelopeDigests, Fetched, PartCopy};
use crate::meta::PublishMeta;
use crate::oci::{Artifact, GzipCache, OciDescriptor, RawManifest};
use crate::reports::ReportStore;
use crate::store::{Batch, OciStore, Store};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;
use batch::LayoutBatch;
use files::DirFiles;
use write::LayoutWriter;

/// A layout directory on disk.
pub struct LayoutStore {
    reader: LayoutReader<DirFiles>,
    writer: LayoutWriter,
    cache: GzipCache,
}

impl LayoutStore {
    /// Opens a layout directory; it is created on the first publish.
    pub fn open(dir: &Path) -> Result<LayoutStore, StoreError> {
        let files = DirFiles(dir.to_path_buf());
        let writer = LayoutWriter::new(dir, files.describe());
        let store = LayoutStore { reader: LayoutReader::new(files), writer, cache: GzipCache::default() };
        if dir.exists() && !dir.join(OCI_LAYOUT_FILE).exists() && fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(StoreError::Config {
                store: store.describe(),
                message: "directory exists, is not empty and is not an OCI layout".into(),
            });
        }
        Ok(store)
    }

    /// Writes a layout file by name (see [`LayoutWriter::put`]): the archive store copies
    /// an archive's files into an empty layout with it.
    pub(crate) fn put(&self, name: &str, bytes: &[u8]) -> Result<bool, StoreError> {
        self.writer.put(name, bytes)
    }

    /// Writes artifacts (cluster, version, artifact) and the index naming them. Returns
    /// the blob bytes written.
    pub(crate) fn put_artifacts(&self, artifacts: &[(ClusterId, u64, &Artifact)], limits: &Limits) -> Result<u64, StoreError> {
        self.writer.put_artifacts(&self.reader, artifacts, limits)
    }

    pub(crate) fn put_artifact_sync(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
        self.put_artifacts(&[(cluster.clone(), version, artifact)], &Limits::SPEC)
    }

    /// Publishes signed bundles. Returns the blob bytes written.
    pub(crate) fn publish_bundles(&self, bundles: &[SignedBundle], meta: &PublishMeta, limits: &Limits) -> Result<u64, StoreError> {
        let mut batch = self.batch_of(meta);
        batch.write(bundles)?;
        batch.finish(limits)
    }

    fn batch_of(&self, meta: &PublishMeta) -> LayoutBatch<'_> {
        LayoutBatch::new(&self.writer, &self.reader, &self.cache, meta)
    }

    pub(crate) fn dir(&self) -> &Path {
        self.writer.dir()
    }
}

#[async_trait]
impl Store for LayoutStore {
    fn describe(&self) -> String {
        self.reader.files.describe()
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        self.reader.fetch_envelope(cluster, limits).await
    }

    async fn fetch_envelope_unless(&self, cluster: &ClusterId, known: &Digest, limits: &Limits) -> Result<Option<Fetched>, StoreError> {
        if self.reader.latest_manifest(cluster, limits)? == Some(*known) {
            return Ok(None);
        }
        self.reader.fetch_envelope(cluster, limits).await.map(Some)
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
        Box::new(self.batch_of(meta))
    }

    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        self.reader.clusters(limits)
    }

    fn reports(&self) -> Option<&dyn ReportStore> {
        Some(self)
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
        Ok(self.dir().join(blob_name(digest)).is_file())
    }

    async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
        self.put_artifact_sync(cluster, version, artifact)
    }
}
