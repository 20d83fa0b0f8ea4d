//! Reading bundles out of OCI stores for the mirror: each cluster's manifest names its
//! blobs, which are fetched once per run however many clusters share them, then the
//! bundle is verified in full (spec section 8) before anything is carried. Writing is the
//! caller's (`mirror::export`, `mirror::import`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt, stream};
use jiff::Timestamp;
use tokio::sync::OnceCell;

use super::error::MirrorError;
use crate::error::StoreError;
use crate::oci::{self, Blob, OciDescriptor, RawManifest};
use crate::store::OciStore;
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::keyring::Keyring;
use airlock_bundle::limits::Limits;
use airlock_bundle::verify::{Expectation, Floor, Transport, VerifyError, verify_envelope};

/// What bundles are checked against: the keyring, the time, the limits.
#[derive(Debug, Clone, Copy)]
pub struct Trust<'a> {
    pub keyring: &'a Keyring,
    /// Bundles are verified as of this time, so an expired one is not carried.
    pub now: Timestamp,
    pub limits: &'a Limits,
}

/// Clusters read at once. Each is a few requests in a row (manifest, envelope, the parts
/// no other cluster shares), so this many keeps a registry busy without swamping it.
const IN_FLIGHT: usize = 16;

/// A bundle read from an OCI store and verified in full, with its exact blobs.
pub(super) struct Carried {
    pub(super) cluster: ClusterId,
    pub(super) version: u64,
    pub(super) bundle_digest: Digest,
    pub(super) manifest: RawManifest,
    pub(super) blobs: Vec<Blob>,
    /// The verified bundle, when asked for: it holds every file inflated, which an
    /// export of a thousand clusters does not need to keep.
    pub(super) signed: Option<SignedBundle>,
}

/// What a read keeps besides the artifact: the bundle too, for a store that is written
/// bundles rather than artifacts (Git).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    Artifact,
    ArtifactAndBundle,
}

/// Runs `read` for each cluster, [`IN_FLIGHT`] at a time, and yields the results in the
/// order of `clusters`, each with its cluster and how many clusters are done by then.
pub(super) fn in_order<'a, T, Fut>(
    clusters: &'a [ClusterId],
    read: impl FnMut(&'a ClusterId) -> Fut + 'a,
) -> impl Stream<Item = (usize, &'a ClusterId, T)> + 'a
where
    Fut: Future<Output = T> + 'a,
{
    let results = stream::iter(clusters).map(read).buffered(IN_FLIGHT);
    results.zip(stream::iter(clusters)).enumerate().map(|(i, (result, cluster))| (i + 1, cluster, result))
}

/// Blobs read so far by one export or import, by digest: a part shared by many clusters
/// is fetched once, and readers of a blob already on its way wait for it.
#[derive(Default)]
pub(super) struct BlobCache(Mutex<HashMap<Digest, Arc<OnceCell<Found>>>>);

/// A blob's bytes, or `None` when no source holds it.
type Found = Option<Arc<Vec<u8>>>;

impl BlobCache {
    /// The blob `d` from the first of `sources` that holds it; `None` when none does.
    async fn get(&self, sources: &[&dyn OciStore], cluster: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Found, StoreError> {
        let cell = self.0.lock().expect("not poisoned").entry(d.digest).or_default().clone();
        let found = cell
            .get_or_try_init(|| async {
                for source in sources {
                    match source.blob(cluster, d, cap).await {
                        Ok(bytes) => return Ok(Some(Arc::new(bytes))),
                        Err(StoreError::NotFound { .. }) => continue,
                        Err(e) => return Err(e),
                    }
                }
                Ok(None)
            })
            .await?;
        // The store checked the size the first manifest gave; another may name the same
        // digest with another size.
        match found {
            Some(bytes) if bytes.len() as u64 != d.size => Err(StoreError::Malformed {
                store: sources[0].describe(),
                what: format!("blob {} of {cluster}", d.digest),
                message: format!("descriptor says {} bytes, the blob has {}", d.size, bytes.len()),
            }),
            found => Ok(found.clone()),
        }
    }
}

/// Reads the blobs of `cluster`'s `manifest` from `sources` (first that has each blob)
/// and verifies the bundle: envelope against the keyring, then every part. The inner
/// error lists the blobs no source holds.
pub(super) async fn read_verified(
    sources: &[&dyn OciStore],
    cluster: &ClusterId,
    manifest: RawManifest,
    trust: &Trust<'_>,
    cache: &BlobCache,
    keep: Keep,
) -> Result<Result<Carried, Vec<Digest>>, MirrorError> {
    let Trust { keyring, now, limits } = *trust;
    let mut blobs: BTreeMap<Digest, Blob> = BTreeMap::new();
    let mut missing = Vec::new();
    for d in manifest.descriptors() {
        match cache.get(sources, cluster, d, d.size.min(limits.total_bytes)).await? {
            Some(bytes) => {
                blobs.insert(d.digest, Blob { digest: d.digest, bytes });
            }
            None => missing.push(d.digest),
        }
    }
    if !missing.is_empty() {
        return Ok(Err(missing));
    }
    let rejected = |source| MirrorError::Rejected { cluster: cluster.clone(), source: Box::new(source) };
    let layer_bytes = |media_type: &str| manifest.manifest.layer(media_type).map(|d| blobs[&d.digest].bytes.as_slice().to_vec());
    let envelope = layer_bytes(oci::ENVELOPE_MEDIA_TYPE).ok_or_else(|| StoreError::Malformed {
        store: sources[0].describe(),
        what: format!("manifest of {cluster}"),
        message: "no envelope layer".into(),
    })?;
    let chain = layer_bytes(oci::KEYRINGS_MEDIA_TYPE);
    let floor = Floor::default();
    let expect = Expectation { cluster, keyring, floor: &floor, now };
    let verified = verify_envelope(&envelope, chain.as_deref(), &expect, limits).map_err(rejected)?;
    let mut parts = Vec::new();
    for profile in &verified.predicate().profiles {
        let layer = manifest
            .manifest
            .part_layer(&profile.digest)
            .ok_or_else(|| rejected(VerifyError::MissingPart { part: profile.name.clone() }))?;
        let gz = &blobs[&layer.digest].bytes;
        parts.push(verified.verify_part(&profile.name, Transport::Gzip(gz), limits).map_err(rejected)?);
    }
    let (version, bundle_digest) = (verified.predicate().version, verified.digest());
    let statement = verified.statement().clone();
    let bundle = verified.finish(parts, limits).map_err(rejected)?;
    let signed = (keep == Keep::ArtifactAndBundle).then(|| SignedBundle {
        bundle: bundle.bundle().clone(),
        statement,
        envelope,
        keyring_chain: chain,
    });
    Ok(Ok(Carried { cluster: cluster.clone(), version, bundle_digest, manifest, blobs: blobs.into_values().collect(), signed }))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;

    use super::*;
    use crate::fetched::{Fetched, PartCopy};
    use crate::meta::PublishMeta;
    use crate::oci::Artifact;
    use crate::open::open_oci;
    use crate::reference::StoreRef;
    use crate::store::Store;
    use airlock_bundle::limits::Limits;
    use airlock_bundle::statement::ProfileEntry;
    use airlock_bundle::testkit::Fixture;

    /// A layout that counts the blobs read from it.
    struct Counting {
        inner: Box<dyn OciStore>,
        reads: AtomicUsize,
    }

    #[async_trait]
    impl Store for Counting {
        fn describe(&self) -> String {
            self.inner.describe()
        }
        async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
            self.inner.fetch_envelope(cluster, limits).await
        }
        async fn fetch_part(&self, c: &ClusterId, f: &Fetched, p: &ProfileEntry, l: &Limits) -> Result<PartCopy, StoreError> {
            self.inner.fetch_part(c, f, p, l).await
        }
        async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
            self.inner.publish(bundles, meta).await
        }
        async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
            self.inner.clusters(limits).await
        }
    }

    #[async_trait]
    impl OciStore for Counting {
        async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
            self.inner.manifest(cluster, tag, limits).await
        }
        async fn blob(&self, cluster: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.inner.blob(cluster, d, cap).await
        }
        async fn has_blob(&self, cluster: &ClusterId, digest: &Digest) -> Result<bool, StoreError> {
            self.inner.has_blob(cluster, digest).await
        }
        async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
            self.inner.put_artifact(cluster, version, artifact).await
        }
    }

    #[tokio::test]
    async fn reads_each_blob_once_however_many_clusters_share_it() {
        let tmp = tempfile::tempdir().unwrap();
        let inner = open_oci(&StoreRef::OciLayout(tmp.path().to_path_buf()), &Default::default()).await.unwrap();
        let clusters: Vec<ClusterId> = ["fleet/a", "fleet/b", "fleet/c"].map(|c| c.parse().unwrap()).to_vec();
        let bundles: Vec<SignedBundle> =
            clusters.iter().map(|c| Fixture { cluster: c.clone(), ..Fixture::new(1) }.signed(1, Fixture::files())).collect();
        inner.publish(&bundles, &PublishMeta::default()).await.unwrap();
        let store = Counting { inner, reads: AtomicUsize::new(0) };
        let sources: [&dyn OciStore; 1] = [&store];
        let (cache, trust) = (BlobCache::default(), Fixture::new(1));
        let trust = Trust { keyring: &trust.keyring, now: Fixture::now(), limits: &Limits::SPEC };
        let mut distinct = BTreeSet::new();
        for cluster in &clusters {
            let manifest = store.manifest(cluster, "latest", &Limits::SPEC).await.unwrap();
            distinct.extend(manifest.descriptors().iter().map(|d| d.digest));
            let carried = read_verified(&sources, cluster, manifest, &trust, &cache, Keep::Artifact).await.unwrap().unwrap();
            assert!(carried.signed.is_none(), "an artifact read keeps no bundle");
        }
        // The config and both parts are shared: three of the distinct blobs, read once.
        assert_eq!(store.reads.load(Ordering::Relaxed), distinct.len());
        assert_eq!(distinct.len(), 3 + clusters.len());

        // A manifest naming a cached digest with another size is refused.
        let mut manifest = store.manifest(&clusters[0], "latest", &Limits::SPEC).await.unwrap();
        manifest.manifest.config.size += 1;
        let lying = manifest.manifest.config.clone();
        let err = cache.get(&sources, &clusters[0], &lying, u64::MAX).await.unwrap_err();
        assert!(matches!(err, StoreError::Malformed { .. }), "{err}");
    }
}
