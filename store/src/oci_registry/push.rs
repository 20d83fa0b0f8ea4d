//! Writing artifacts into a registry: each bundle's missing blobs, mounted from another
//! repository of the same publish when one holds them already, then its manifest's exact
//! bytes under `v<version>` and `latest`, the digest the registry stored checked against
//! them. Several bundles are pushed at once; nothing is ever deleted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt, future, stream};
use oci_client::Reference;
use reqwest::header::HeaderValue;

use super::client::Registry;
use super::failure::Class;
use crate::error::StoreError;
use crate::meta::PublishMeta;
use crate::oci::{self, Artifact, Blob, GzipCache, MANIFEST_MEDIA_TYPE};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;

/// Bundles pushed at once: enough to hide round trips, few enough not to swamp a registry.
const IN_FLIGHT: usize = 8;

/// Pushes bundles, several at a time; `placed` knows the blobs pushed before.
pub(super) async fn push(
    registry: &Registry,
    cache: &GzipCache,
    bundles: &[SignedBundle],
    meta: &PublishMeta,
    placed: &Placed,
) -> Result<(), StoreError> {
    // Collected first: a closure mapping inside the stream trips the compiler's check
    // that the boxed future is Send for every lifetime.
    let pushes: Vec<_> = bundles.iter().map(|signed| publish_one(registry, cache, signed, meta, placed)).collect();
    stream::iter(pushes).buffer_unordered(IN_FLIGHT).try_for_each(|_| future::ok(())).await
}

async fn publish_one(
    registry: &Registry,
    cache: &GzipCache,
    signed: &SignedBundle,
    meta: &PublishMeta,
    placed: &Placed,
) -> Result<u64, StoreError> {
    let cluster: ClusterId = signed.cluster().parse().map_err(|e: airlock_bundle::cluster::BadClusterId| {
        registry.error(format!("bundle for {}", signed.cluster()), Class::Config, e.to_string())
    })?;
    let artifact = oci::artifact(signed, meta, cache);
    put_artifact(registry, &cluster, signed.version(), &artifact, placed).await
}

/// Pushes an artifact's missing blobs, then its manifest's exact bytes under
/// `v<version>` and `latest`. Returns the blob bytes uploaded.
pub(super) async fn put_artifact(
    registry: &Registry,
    cluster: &ClusterId,
    version: u64,
    artifact: &Artifact,
    placed: &Placed,
) -> Result<u64, StoreError> {
    let uploaded =
        put_tagged(registry, cluster, &registry.repository(cluster), &[&format!("v{version}"), "latest"], artifact, placed).await?;
    let manifest = artifact.manifest_digest;
    tracing::info!(store = %registry.describe, %cluster, version, %manifest, uploaded, "published");
    Ok(uploaded)
}

/// Pushes an artifact of `cluster` into `repository`: its missing blobs, then its
/// manifest's exact bytes under each of `tags` in turn, checking the digest the registry
/// stored against them. Returns the blob bytes uploaded.
pub(super) async fn put_tagged(
    registry: &Registry,
    cluster: &ClusterId,
    repository: &str,
    tags: &[&str],
    artifact: &Artifact,
    placed: &Placed,
) -> Result<u64, StoreError> {
    let target = registry.reference_in(repository.to_string(), tags[0]).await;
    let mut uploaded = 0;
    for blob in &artifact.blobs {
        if put_blob(registry, cluster, &target, blob, placed).await? {
            uploaded += blob.bytes.len() as u64;
        }
    }
    for tag in tags {
        let reference = registry.reference_in(repository.to_string(), tag).await;
        let what = || format!("manifest {tag} for {cluster}");
        let content_type = HeaderValue::from_static(MANIFEST_MEDIA_TYPE);
        let location = (registry.client.push_manifest_raw(&reference, artifact.manifest_bytes.clone(), content_type).await)
            .map_err(|e| registry.oci_error(what(), e))?;
        // Distribution names the stored digest in the Location; other registries may
        // give the tag URL, and then a HEAD tells.
        let stored = match location.split('?').next().and_then(|l| l.rsplit('/').next()).and_then(|d| d.parse::<Digest>().ok()) {
            Some(d) => d,
            None => {
                let d =
                    (registry.client.fetch_manifest_digest(&reference, &registry.auth).await).map_err(|e| registry.oci_error(what(), e))?;
                d.parse().map_err(|_| registry.error(what(), Class::Malformed, format!("registry reports digest {d:?}")))?
            }
        };
        if stored != artifact.manifest_digest {
            let message = format!("registry stored {stored}, not {} (spec 9.1: exact bytes)", artifact.manifest_digest);
            return Err(registry.error(what(), Class::Malformed, message));
        }
    }
    Ok(uploaded)
}

/// Makes `blob` present in `target`'s repository; true when its bytes were uploaded.
async fn put_blob(registry: &Registry, cluster: &ClusterId, target: &Reference, blob: &Blob, placed: &Placed) -> Result<bool, StoreError> {
    let digest = blob.digest.to_string();
    let slot = placed.slot(blob.digest);
    // Held while uploading, so another repository of this publish waits and mounts.
    let mut source = slot.lock().await;
    // A failed mount (Distribution answers 202 and opens an upload) falls back to the
    // checks below; the abandoned upload session expires on the registry.
    let how = if let Some(from) = source.as_ref()
        && registry.client.mount_blob(target, from, &digest).await.is_ok()
    {
        "mounted"
    } else if (registry.client.blob_exists(target, &digest).await)
        .map_err(|e| registry.oci_error(format!("blob {digest} for {cluster}"), e))?
    {
        "present"
    } else {
        (registry.client.push_blob(target, blob.bytes.to_vec(), &digest).await)
            .map_err(|e| registry.oci_error(format!("blob {digest} for {cluster}"), e))?;
        "uploaded"
    };
    *source = Some(target.clone());
    tracing::debug!(store = %registry.describe, %cluster, blob = %digest, how = %how, "blob");
    Ok(how == "uploaded")
}

/// Where blobs of one publish already are: a part shared by many clusters is uploaded
/// once and mounted into the other repositories.
#[derive(Default)]
pub(super) struct Placed(Mutex<HashMap<Digest, Arc<tokio::sync::Mutex<Option<Reference>>>>>);

impl Placed {
    fn slot(&self, digest: Digest) -> Arc<tokio::sync::Mutex<Option<Reference>>> {
        self.0.lock().expect("not poisoned").entry(digest).or_default().clone()
    }
}
