//! A publish into a layout fed a few bundles at a time, as a publisher signs them: each
//! bundle's blobs are written as it comes (artifacts built and written on several threads),
//! flushed to disk behind the next ones, and the index names them all at the end.

use std::fs;

use async_trait::async_trait;

use super::files::DirFiles;
use super::index::Manifest;
use super::read::LayoutReader;
use super::write::{LayoutWriter, Written, blobs_of, cores, flush, in_parallel};
use crate::error::StoreError;
use crate::meta::PublishMeta;
use crate::oci::{self, GzipCache};
use crate::store::Batch;
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;

/// Bundles written into a layout as they come, and named in its index at the end.
pub(super) struct LayoutBatch<'s> {
    writer: &'s LayoutWriter,
    reader: &'s LayoutReader<DirFiles>,
    cache: &'s GzipCache,
    meta: PublishMeta,
    /// The layout's write lock, taken by the first write.
    lock: Option<fs::File>,
    written: Written,
    /// What the index will name: the manifests of the artifacts written.
    artifacts: Vec<(ClusterId, u64, Manifest)>,
    /// A flush of the blobs written so far, running while the next ones are made.
    flushing: Option<std::thread::JoinHandle<Result<(), StoreError>>>,
}

impl<'s> LayoutBatch<'s> {
    pub(super) fn new(
        writer: &'s LayoutWriter,
        reader: &'s LayoutReader<DirFiles>,
        cache: &'s GzipCache,
        meta: &PublishMeta,
    ) -> LayoutBatch<'s> {
        let (lock, written, artifacts, flushing) = (None, Written::default(), Vec::new(), None);
        LayoutBatch { writer, reader, cache, meta: meta.clone(), lock, written, artifacts, flushing }
    }

    /// Writes the blobs of `bundles`; returns the digests of their manifests, in order.
    ///
    /// Each thread builds an artifact (compressing its new parts, the bulk of a large
    /// publish's work) and writes its blobs at once: creating files waits on the
    /// filesystem, which other threads' compressing fills, and only each manifest's digest
    /// and size are kept until the index is written, not the artifacts. One thread per
    /// core: a publisher writes a batch while it renders the next bundles, which fill the
    /// cores too, and threads creating files in one directory beyond that only spin on
    /// its lock.
    pub(super) fn write(&mut self, bundles: &[SignedBundle]) -> Result<Vec<Digest>, StoreError> {
        if bundles.is_empty() {
            return Ok(Vec::new());
        }
        let writer = self.writer;
        let mut clusters = Vec::with_capacity(bundles.len());
        for signed in bundles {
            let cluster: ClusterId = signed.cluster().parse().map_err(|e: airlock_bundle::cluster::BadClusterId| StoreError::Config {
                store: writer.store().to_string(),
                message: e.to_string(),
            })?;
            clusters.push(cluster);
        }
        if self.lock.is_none() {
            self.lock = Some(writer.lock()?);
        }
        let written = &self.written;
        let built = in_parallel(bundles, cores(), |signed| {
            let artifact = oci::artifact(signed, &self.meta, self.cache);
            for (digest, bytes) in blobs_of(&artifact) {
                written.put(writer, &digest, bytes)?;
            }
            Ok(Manifest::of(&artifact))
        });
        let built = built.into_iter().collect::<Result<Vec<_>, StoreError>>()?;
        let manifests = built.iter().map(|m| m.digest).collect();
        self.artifacts.extend(clusters.into_iter().zip(bundles).zip(built).map(|((c, s), m)| (c, s.version(), m)));
        self.flush_behind()?;
        Ok(manifests)
    }

    /// Starts flushing the blobs written so far to disk on a thread of its own, unless the
    /// last such flush is still running: the disk writes while the publisher renders the
    /// next clusters, and the commit's flush finds little left.
    fn flush_behind(&mut self) -> Result<(), StoreError> {
        if self.flushing.as_ref().is_some_and(|f| !f.is_finished()) {
            return Ok(());
        }
        self.flushed()?;
        let (dir, store) = (self.writer.dir().to_path_buf(), self.writer.store().to_string());
        self.flushing = Some(std::thread::spawn(move || flush(&dir, &store)));
        Ok(())
    }

    /// Waits for the flush running behind, and returns what it found.
    fn flushed(&mut self) -> Result<(), StoreError> {
        self.flushing.take().map_or(Ok(()), |f| f.join().expect("a flush thread panicked"))
    }

    /// Names the artifacts written in the index. Returns the blob bytes written.
    pub(super) fn finish(mut self, limits: &Limits) -> Result<u64, StoreError> {
        if self.lock.is_none() {
            return Ok(0);
        }
        self.flushed()?;
        self.writer.commit(self.reader, &self.artifacts, self.written, limits)
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
