//! The [`Store`] trait every kind of store implements, the [`Batch`] a publish feeds a few
//! bundles at a time, and [`OciStore`], raw artifact access for the OCI kinds; the reports a
//! store keeps beside its bundles are `reports`' trait. What each store does is its own
//! module's; this one only says what they all answer.

use async_trait::async_trait;

use crate::error::StoreError;
use crate::fetched::{EnvelopeDigests, Fetched, PartCopy};
use crate::meta::PublishMeta;
use crate::oci::{self, OciDescriptor};
use crate::reports::ReportStore;
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;

/// A place bundles are written to and read from.
#[async_trait]
pub trait Store: Send + Sync {
    /// The reference the store was opened with, for messages.
    fn describe(&self) -> String;

    /// The envelope and keyring chain of the newest version for `cluster`.
    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError>;

    /// [`Store::fetch_envelope`], unless the newest version is still named by the manifest
    /// `known` (what [`Fetched::manifest`] gave before): `Ok(None)` then, read without
    /// reading the envelope (spec 8, its last paragraph). A store that cannot tell reads
    /// the envelope.
    async fn fetch_envelope_unless(&self, cluster: &ClusterId, _known: &Digest, limits: &Limits) -> Result<Option<Fetched>, StoreError> {
        self.fetch_envelope(cluster, limits).await.map(Some)
    }

    /// The digests of what [`Store::fetch_envelope`] would return, when the store names its
    /// blobs by digest and can tell them without reading them (an OCI manifest names its
    /// layers so). `None` when it cannot: the caller reads the envelope. A publisher
    /// comparing a fleet with what it remembers then reads each cluster's small manifest
    /// instead of its envelope.
    async fn envelope_digests(&self, _cluster: &ClusterId, _limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        Ok(None)
    }

    /// The digest of the manifest naming `cluster`'s newest bundle, when the store can
    /// tell it without reading the manifest (a layout's index names it, and the manifest's
    /// blob is there at its size). `None` when it cannot. A publisher that remembers the
    /// manifest it wrote recognises an unchanged cluster from the index alone.
    async fn manifest_digest(&self, _cluster: &ClusterId, _limits: &Limits) -> Result<Option<Digest>, StoreError> {
        Ok(None)
    }

    /// One part's copy, read with the cap derived from its signed size.
    async fn fetch_part(
        &self,
        cluster: &ClusterId,
        fetched: &Fetched,
        part: &ProfileEntry,
        limits: &Limits,
    ) -> Result<PartCopy, StoreError>;

    /// Writes signed bundles as the newest version of their clusters, in one batch (one
    /// commit for Git). Writes only what the store does not already hold.
    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError>;

    /// A batch handed its bundles a few at a time, as a publisher signs them. By default it
    /// keeps them and publishes them all at [`Batch::commit`]; a store that can write
    /// bundles before naming them newest writes them as they come, so a publish of
    /// thousands of clusters never holds them all.
    fn batch<'s>(&'s self, meta: &PublishMeta) -> Box<dyn Batch + 's> {
        Box::new(Kept { store: self, meta: meta.clone(), bundles: Vec::new() })
    }

    /// Clusters the store holds bundles for.
    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError>;

    /// The clusters' signed reports in this store (spec 14.7), for the kinds that keep
    /// them: registries, layouts and Git. An archive is carried media and keeps none.
    fn reports(&self) -> Option<&dyn ReportStore> {
        None
    }
}

/// One [`Store::publish`] fed a few bundles at a time.
#[async_trait]
pub trait Batch: Send {
    /// Takes more bundles. A registry, which has no index, pushes them as they come; a
    /// layout writes their blobs and names them in its index only at [`Batch::commit`], and
    /// Git writes them all in the commit. Returns, for each bundle in order, the digest of
    /// the manifest [`Store::manifest_digest`] will name it by, where the store tells one.
    async fn add(&mut self, bundles: Vec<SignedBundle>) -> Result<Vec<Option<Digest>>, StoreError>;
    /// Makes every bundle added the newest version of its cluster, as one
    /// [`Store::publish`] of them all would.
    async fn commit(self: Box<Self>) -> Result<(), StoreError>;
}

/// The batch of a store that writes everything at once.
struct Kept<'s, S: ?Sized> {
    store: &'s S,
    meta: PublishMeta,
    bundles: Vec<SignedBundle>,
}

#[async_trait]
impl<S: Store + ?Sized> Batch for Kept<'_, S> {
    async fn add(&mut self, bundles: Vec<SignedBundle>) -> Result<Vec<Option<Digest>>, StoreError> {
        let named = vec![None; bundles.len()];
        self.bundles.extend(bundles);
        Ok(named)
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        if self.bundles.is_empty() {
            return Ok(());
        }
        self.store.publish(&self.bundles, &self.meta).await
    }
}

/// Raw access to the OCI artifacts of an OCI store (registry, layout, archive), for
/// copying them between stores byte for byte (the mirror). Git has no such form.
#[async_trait]
pub trait OciStore: Store {
    /// The manifest tagged `tag` (`latest` or `v<version>`) in `cluster`'s repository.
    async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<oci::RawManifest, StoreError>;
    /// A blob of `cluster`'s repository, refused over `cap` and checked against `d`.
    async fn blob(&self, cluster: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError>;
    /// Whether `cluster`'s repository holds a blob.
    async fn has_blob(&self, cluster: &ClusterId, digest: &airlock_bundle::Digest) -> Result<bool, StoreError>;
    /// Writes an artifact as `v<version>` and `latest` of `cluster`. Returns the blob bytes
    /// actually written (blobs already present are not).
    async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &oci::Artifact) -> Result<u64, StoreError>;
}
