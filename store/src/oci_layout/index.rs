//! `index.json`, the only file of a layout that changes: the parsed index with its entries
//! found by reference name, and the index a publish leaves (each cluster's `v<version>` and
//! `latest`, an existing version never re-tagged with other content).

use std::collections::{BTreeMap, HashMap};

use airlock_bundle::digest::Digest;

use crate::error::StoreError;
use crate::oci::{self, Artifact, OciDescriptor, OciIndex, REF_NAME};

/// A parsed `index.json`, its entries found by reference name.
pub(crate) struct IndexView {
    pub(crate) index: OciIndex,
    by_ref: HashMap<String, usize>,
}

impl IndexView {
    pub(super) fn new(index: OciIndex) -> IndexView {
        let by_ref = index.manifests.iter().enumerate().filter_map(|(i, d)| Some((d.annotations.get(REF_NAME)?.clone(), i))).collect();
        IndexView { index, by_ref }
    }

    pub(super) fn get(&self, ref_name: &str) -> Option<&OciDescriptor> {
        self.by_ref.get(ref_name).map(|&i| &self.index.manifests[i])
    }
}

/// What the index names an artifact by: its manifest's digest and size. All a write keeps
/// of each artifact until its index is written, rather than the manifest twice over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Manifest {
    pub(crate) digest: Digest,
    pub(crate) size: u64,
}

impl Manifest {
    pub(crate) fn of(artifact: &Artifact) -> Manifest {
        Manifest { digest: artifact.manifest_digest, size: artifact.manifest_bytes.len() as u64 }
    }
}

/// Index entries after publishing the artifacts whose manifests are `artifacts`: each
/// cluster gets `:v<version>` and its `:latest` moves. Re-tagging an existing version with
/// other content is refused.
pub(crate) fn updated_index(store: &str, mut index: OciIndex, artifacts: &[(String, u64, Manifest)]) -> Result<OciIndex, StoreError> {
    let mut by_ref: BTreeMap<String, OciDescriptor> =
        index.manifests.drain(..).map(|d| (d.annotations.get(REF_NAME).cloned().unwrap_or_default(), d)).collect();
    for (cluster, version, artifact) in artifacts {
        let descriptor = |tag: &str| OciDescriptor {
            media_type: oci::MANIFEST_MEDIA_TYPE.to_string(),
            digest: artifact.digest,
            size: artifact.size,
            artifact_type: Some(oci::ARTIFACT_TYPE.to_string()),
            annotations: BTreeMap::from([(REF_NAME.to_string(), oci::ref_name(cluster, tag))]),
        };
        let versioned = oci::ref_name(cluster, &format!("v{version}"));
        if let Some(existing) = by_ref.get(&versioned)
            && existing.digest != artifact.digest
        {
            return Err(StoreError::Config {
                store: store.to_string(),
                message: format!("{versioned} already exists with other content; versions are never reused"),
            });
        }
        by_ref.insert(versioned, descriptor(&format!("v{version}")));
        by_ref.insert(oci::ref_name(cluster, "latest"), descriptor("latest"));
    }
    index.manifests = by_ref.into_values().collect();
    Ok(index)
}
