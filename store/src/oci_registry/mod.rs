//! The OCI registry store (spec 9.2): one repository `<prefix>/<namespace>/<name>` per
//! cluster, holding the artifact of spec 9.1 under the tags `v<version>` and `latest`.
//!
//! Writes and blob reads go through `oci-client`, which follows the distribution token
//! exchange. Manifests and catalog pages do not: oci-client buffers those bodies whole
//! before anyone can look at their size, so they are read with a plain `reqwest` client,
//! the same credentials and a cap (spec 10).
//!
//! `client` makes the requests, `failure` classes their errors, `push` writes artifacts,
//! `catalog` lists the clusters and `reports` keeps the pullers' reports in a repository
//! `<prefix>/<namespace>/<name>/reports` of each cluster (spec 14.7); this module joins
//! them into a [`Store`]. It moves and finds
//! bytes; it does not judge them (`bundle::verify` does). It never deletes: older versions
//! stay until the registry's own garbage collection. Of Docker's `config.json` it reads only
//! `auths.<host>.auth`, not credential helpers.

mod catalog;
mod client;
mod failure;
mod push;
mod reports;

use async_trait::async_trait;

use crate::credentials::RegistryCredentials;
use crate::error::StoreError;
use crate::fetched::{EnvelopeDigests, Fetched, Locator, PartCopy};
use crate::meta::PublishMeta;
use crate::oci::{Artifact, GzipCache, OciDescriptor, RawManifest};
use crate::reports::ReportStore;
use crate::store::{Batch, OciStore, Store};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;
use client::Registry;
use failure::Class;
use push::Placed;

/// A registry holding one repository per cluster under a prefix.
pub struct RegistryStore {
    registry: Registry,
    cache: GzipCache,
}

impl RegistryStore {
    /// Opens `host` (with port) under `prefix` (may be empty). Needs a process-wide rustls
    /// crypto provider, which the binaries install at start; reqwest panics without one.
    pub fn new(host: &str, prefix: &str, plain_http: bool, credentials: &RegistryCredentials) -> Result<Self, StoreError> {
        Ok(RegistryStore { registry: Registry::new(host, prefix, plain_http, credentials)?, cache: GzipCache::default() })
    }
}

#[async_trait]
impl Store for RegistryStore {
    fn describe(&self) -> String {
        self.registry.describe.clone()
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        let raw = self.registry.manifest(cluster, "latest", limits).await?;
        self.envelope_of(cluster, raw, limits).await
    }

    /// One conditional GET of the manifest when it is unchanged (`304`).
    async fn fetch_envelope_unless(&self, cluster: &ClusterId, known: &Digest, limits: &Limits) -> Result<Option<Fetched>, StoreError> {
        match self.registry.manifest_unless(cluster, "latest", Some(known), limits).await? {
            Some(raw) => self.envelope_of(cluster, raw, limits).await.map(Some),
            None => Ok(None),
        }
    }

    async fn envelope_digests(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        let manifest = self.registry.manifest(cluster, "latest", limits).await?.manifest;
        EnvelopeDigests::of_manifest(&self.registry.describe, &manifest).map(Some)
    }

    async fn fetch_part(&self, cluster: &ClusterId, fetched: &Fetched, part: &ProfileEntry, _: &Limits) -> Result<PartCopy, StoreError> {
        let Locator::Oci(raw) = &fetched.locator else {
            let message = "envelope was fetched from another kind of store".into();
            return Err(self.registry.error(format!("part {} for {cluster}", part.name), Class::Config, message));
        };
        let Some(layer) = raw.manifest.part_layer(&part.digest) else {
            let message = format!("the manifest has no layer for this part ({})", part.digest);
            return Err(self.registry.error(format!("part {} for {cluster}", part.name), Class::Malformed, message));
        };
        let reference = self.registry.reference(cluster, "latest").await;
        let gzip = self.registry.read_blob(cluster, &reference, layer.clone(), Limits::transport_cap(part.size)).await?;
        Ok(PartCopy::Gzip(gzip))
    }

    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        push::push(&self.registry, &self.cache, bundles, meta, &Placed::default()).await
    }

    /// A registry has no index to write last: each bundle is pushed as it comes.
    fn batch<'s>(&'s self, meta: &PublishMeta) -> Box<dyn Batch + 's> {
        Box::new(RegistryBatch { store: self, meta: meta.clone(), placed: Placed::default() })
    }

    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        catalog::clusters(&self.registry, limits).await
    }

    fn reports(&self) -> Option<&dyn ReportStore> {
        Some(self)
    }
}

impl RegistryStore {
    /// The envelope and keyring chain the manifest `raw` of `cluster` names.
    async fn envelope_of(&self, cluster: &ClusterId, raw: RawManifest, limits: &Limits) -> Result<Fetched, StoreError> {
        let registry = &self.registry;
        let reference = registry.reference(cluster, "latest").await;
        Fetched::from_manifest(&registry.describe, cluster, raw, limits, |d, cap| registry.read_blob(cluster, &reference, d, cap)).await
    }
}

#[async_trait]
impl OciStore for RegistryStore {
    async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
        self.registry.manifest(cluster, tag, limits).await
    }

    async fn blob(&self, cluster: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
        let reference = self.registry.reference(cluster, "latest").await;
        self.registry.read_blob(cluster, &reference, d.clone(), cap).await
    }

    async fn has_blob(&self, cluster: &ClusterId, digest: &Digest) -> Result<bool, StoreError> {
        let reference = self.registry.reference(cluster, "latest").await;
        (self.registry.client.blob_exists(&reference, &digest.to_string()).await)
            .map_err(|e| self.registry.oci_error(format!("blob {digest} for {cluster}"), e))
    }

    async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
        push::put_artifact(&self.registry, cluster, version, artifact, &Placed::default()).await
    }
}

/// Bundles pushed as they come, blobs placed once for the whole batch.
struct RegistryBatch<'s> {
    store: &'s RegistryStore,
    meta: PublishMeta,
    placed: Placed,
}

#[async_trait]
impl Batch for RegistryBatch<'_> {
    async fn add(&mut self, bundles: Vec<SignedBundle>) -> Result<Vec<Option<Digest>>, StoreError> {
        push::push(&self.store.registry, &self.store.cache, &bundles, &self.meta, &self.placed).await?;
        Ok(vec![None; bundles.len()])
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
    }
}
