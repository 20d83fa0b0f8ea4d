//! Carrying bundles across an air gap: export from an OCI store to an OCI
//! archive, optionally as a delta against what the far side already received, and import
//! an archive into the far side's store.
//!
//! Both directions verify every bundle in full (spec section 8) before writing anything,
//! and copy manifests and blobs byte for byte, so digests survive the trip and `skopeo`
//! reads the archive. The export's sidecar [`ExportIndex`] (`<archive>.index.json`)
//! records what the far side holds once the archive is imported; the next export starts
//! from it and leaves out every blob already carried.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use futures::StreamExt;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::meta::PublishMeta;
use crate::oci;
use crate::reference::StoreRef;
use crate::store::{OciStore, Store};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::rfc3339;

mod error;
mod read;

pub use error::MirrorError;
pub use read::Trust;
use read::{BlobCache, Keep, in_order, read_verified};

pub const INDEX_FORMAT: &str = "airlock.dev/export/v1";

/// What an archive holds and what the far side holds once it is imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportIndex {
    pub format: String,
    pub created: String,
    /// Clusters in this archive.
    pub clusters: Vec<ExportedCluster>,
    /// Every cluster the far side holds after the import, this archive's and earlier ones.
    pub carried: Vec<ExportedCluster>,
    /// Every blob the far side holds after the import.
    pub blobs: BTreeSet<Digest>,
    /// Bytes of all blobs the archive's clusters use.
    pub total_bytes: u64,
    /// Bytes of the blobs this archive carries (what really changed).
    pub new_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportedCluster {
    pub cluster: String,
    pub version: u64,
    pub manifest: Digest,
    pub bundle: Digest,
}

impl ExportIndex {
    /// The sidecar path of an archive.
    pub fn path_for(archive: &Path) -> PathBuf {
        let mut name = archive.as_os_str().to_owned();
        name.push(".index.json");
        PathBuf::from(name)
    }

    /// Reads an index, given itself or the archive it describes.
    pub fn read(path: &Path) -> Result<ExportIndex, MirrorError> {
        let path = if path.extension().is_some_and(|e| e == "json") { path.to_path_buf() } else { Self::path_for(path) };
        let err = |message: String| MirrorError::Index { path: path.clone(), message };
        let bytes = std::fs::read(&path).map_err(|e| err(e.to_string()))?;
        let index: ExportIndex = serde_json::from_slice(&bytes).map_err(|e| err(e.to_string()))?;
        if index.format != INDEX_FORMAT {
            return Err(err(format!("format {:?}, expected {INDEX_FORMAT:?}", index.format)));
        }
        Ok(index)
    }
}

/// Progress of a long transfer, for a progress bar or log lines.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub cluster: &'a ClusterId,
    pub done: usize,
    pub total: usize,
    pub bytes: u64,
}

/// Exports the latest bundle of each cluster from `from` into the archive `to` (replacing
/// it), leaving out blobs listed in `since`. Writes `<to>.index.json` beside it. Clusters
/// are read a few at a time, in order, so the same store makes the same archive.
pub async fn export(
    from: &dyn OciStore,
    clusters: &[ClusterId],
    since: Option<&ExportIndex>,
    to: &Path,
    trust: &Trust<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ExportIndex, MirrorError> {
    let (now, limits) = (trust.now, trust.limits);
    let already: BTreeSet<Digest> = since.map(|s| s.blobs.clone()).unwrap_or_default();
    let mut carried: BTreeMap<String, ExportedCluster> =
        since.map(|s| s.carried.iter().map(|c| (c.cluster.clone(), c.clone())).collect()).unwrap_or_default();
    let mut bundles = Vec::with_capacity(clusters.len());
    let (mut total_bytes, mut new_bytes) = (0u64, 0u64);
    let mut blobs = already.clone();
    let cache = &BlobCache::default();
    let held = &carried;
    let mut reads = in_order(clusters, |cluster| async move {
        let manifest = from.manifest(cluster, "latest", limits).await?;
        // The far side holds this very manifest already: nothing to read or carry.
        if held.get(&cluster.to_string()).is_some_and(|c| c.manifest == manifest.digest) {
            return Ok(None);
        }
        read_verified(&[from], cluster, manifest, trust, cache, Keep::Artifact).await.map(Some)
    });
    while let Some((done, cluster, read)) = reads.next().await {
        match read? {
            None => {}
            Some(Err(missing)) => {
                let missing = missing.into_iter().map(|d| (d, cluster.clone())).collect();
                return Err(MirrorError::MissingBlobs { store: from.describe(), missing });
            }
            Some(Ok(bundle)) => {
                for b in &bundle.blobs {
                    total_bytes += b.bytes.len() as u64;
                    if blobs.insert(b.digest) {
                        new_bytes += b.bytes.len() as u64;
                    }
                }
                bundles.push(bundle);
            }
        }
        progress(Progress { cluster, done, total: clusters.len(), bytes: new_bytes });
    }
    drop(reads);
    let exported: Vec<ExportedCluster> = bundles
        .iter()
        .map(|b| ExportedCluster {
            cluster: b.cluster.to_string(),
            version: b.version,
            manifest: b.manifest.digest,
            bundle: b.bundle_digest,
        })
        .collect();
    let mut written = BTreeSet::new();
    let artifacts: Vec<(ClusterId, u64, oci::Artifact)> = bundles
        .into_iter()
        .map(|b| {
            // A blob goes into the archive once, and only if the far side lacks it.
            let fresh = b.blobs.into_iter().filter(|x| !already.contains(&x.digest) && written.insert(x.digest)).collect();
            (b.cluster, b.version, b.manifest.into_artifact(fresh))
        })
        .collect();
    crate::oci_archive::write_new(to, &artifacts)?;
    for c in &exported {
        carried.insert(c.cluster.clone(), c.clone());
    }
    let index = ExportIndex {
        format: INDEX_FORMAT.to_string(),
        created: rfc3339::format(&Timestamp::from_second(now.as_second()).expect("valid time")),
        clusters: exported,
        carried: carried.into_values().collect(),
        blobs,
        total_bytes,
        new_bytes,
    };
    let index_path = ExportIndex::path_for(to);
    std::fs::write(&index_path, serde_json::to_vec_pretty(&index).expect("index serialises"))
        .map_err(|e| MirrorError::Index { path: index_path, message: e.to_string() })?;
    Ok(index)
}

/// What an import did per cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    Written { cluster: ClusterId, version: u64, bytes: u64 },
    AlreadyPresent { cluster: ClusterId, version: u64 },
}

/// Where an import writes: an OCI store receives the exact artifacts; any other store
/// (Git) receives the verified bundles.
pub enum ImportTarget {
    Oci(Box<dyn OciStore>),
    Other(Box<dyn Store>),
}

impl ImportTarget {
    fn store(&self) -> &dyn Store {
        match self {
            ImportTarget::Oci(s) => s.as_ref(),
            ImportTarget::Other(s) => s.as_ref(),
        }
    }
}

/// Imports every cluster of `archive` into `target`, after verifying all of them and
/// checking that the target holds every blob a delta archive builds on.
pub async fn import(
    archive: &Path,
    target: &ImportTarget,
    trust: &Trust<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Imported>, MirrorError> {
    let limits = trust.limits;
    let source = crate::open::open_oci(&StoreRef::OciArchive(archive.to_path_buf()), &Default::default()).await?;
    let clusters = source.clusters(limits).await?;
    let mut sources: Vec<&dyn OciStore> = vec![source.as_ref()];
    if let ImportTarget::Oci(t) = target {
        sources.push(t.as_ref());
    }
    let (mut ready, mut missing, mut results) = (Vec::new(), BTreeMap::new(), Vec::new());
    let cache = &BlobCache::default();
    let sources = &sources;
    let keep = match target {
        ImportTarget::Oci(_) => Keep::Artifact,
        ImportTarget::Other(_) => Keep::ArtifactAndBundle,
    };
    let mut reads = in_order(&clusters, |cluster| async move {
        let manifest = sources[0].manifest(cluster, "latest", limits).await?;
        let read = read_verified(sources, cluster, manifest, trust, cache, keep).await?;
        let held = if read.is_ok() { held(target.store(), cluster, limits).await? } else { None };
        Ok::<_, MirrorError>((read, held))
    });
    while let Some((done, cluster, read)) = reads.next().await {
        match read? {
            (Err(m), _) => {
                for d in m {
                    missing.entry(d).or_insert_with(|| cluster.clone());
                }
            }
            (Ok(bundle), held) => match held {
                Some((v, d)) if v > bundle.version || (v == bundle.version && d != bundle.bundle_digest) => {
                    return Err(MirrorError::Older {
                        store: target.store().describe(),
                        cluster: cluster.clone(),
                        held: v,
                        offered: bundle.version,
                    });
                }
                Some((v, _)) if v == bundle.version => {
                    results.push(Imported::AlreadyPresent { cluster: cluster.clone(), version: v });
                }
                _ => ready.push(bundle),
            },
        }
        progress(Progress { cluster, done, total: clusters.len(), bytes: 0 });
    }
    drop(reads);
    if !missing.is_empty() {
        return Err(MirrorError::MissingBlobs { store: target.store().describe(), missing });
    }
    match target {
        ImportTarget::Oci(t) => {
            for b in ready {
                let (cluster, version) = (b.cluster.clone(), b.version);
                let bytes = t.put_artifact(&cluster, version, &b.manifest.into_artifact(b.blobs)).await?;
                results.push(Imported::Written { cluster, version, bytes });
            }
        }
        ImportTarget::Other(t) => {
            let mut signed: Vec<SignedBundle> = Vec::with_capacity(ready.len());
            for b in ready {
                results.push(Imported::Written { cluster: b.cluster, version: b.version, bytes: 0 });
                signed.extend(b.signed);
            }
            t.publish(&signed, &PublishMeta::default()).await?;
        }
    }
    Ok(results)
}

/// The version and bundle digest `store` holds for `cluster`, read without verification:
/// it is the importer's own store, and only used to refuse going backwards.
async fn held(store: &dyn Store, cluster: &ClusterId, limits: &Limits) -> Result<Option<(u64, Digest)>, MirrorError> {
    match store.fetch_envelope(cluster, limits).await {
        Ok(fetched) => Ok(fetched.unverified_statement().and_then(|s| {
            let digest = Digest::from_hex(&s.subject.first()?.digest.sha256).ok()?;
            Some((s.predicate.version, digest))
        })),
        Err(StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
