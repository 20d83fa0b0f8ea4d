//! Why an export or import stopped, in the classes callers act on: the store failed
//! (retry), a bundle or version was refused (never retried), a delta lacks its base, or the
//! sidecar index is unreadable.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::StoreError;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::verify::VerifyError;

/// Why an export or import stopped. Nothing is written when any of these is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("bundle for {cluster} rejected: {source}")]
    Rejected { cluster: ClusterId, source: Box<VerifyError> },
    #[error("{store} holds {cluster} v{held}, newer than the archive's v{offered}; refusing to go back")]
    Older { store: String, cluster: ClusterId, held: u64, offered: u64 },
    #[error(
        "the archive is a delta and {store} lacks {} blob(s) it builds on (import the earlier archives first): {}",
        missing.len(),
        list_missing(missing)
    )]
    MissingBlobs { store: String, missing: BTreeMap<Digest, ClusterId> },
    #[error("{path}: {message}")]
    Index { path: PathBuf, message: String },
}

/// The first few missing blobs, each with one cluster that needs it: a delta missing its
/// base lacks the same blobs for every cluster, and the list would run to hundreds.
fn list_missing(missing: &BTreeMap<Digest, ClusterId>) -> String {
    const SHOWN: usize = 5;
    let mut text: Vec<String> = missing.iter().take(SHOWN).map(|(d, c)| format!("{d} ({c})")).collect();
    if missing.len() > SHOWN {
        text.push(format!("and {} more", missing.len() - SHOWN));
    }
    text.join(", ")
}

impl MirrorError {
    /// Whether retrying the same input cannot help (exit code 3 in the tools).
    pub fn is_rejection(&self) -> bool {
        matches!(self, MirrorError::Rejected { .. } | MirrorError::Older { .. })
    }
}
