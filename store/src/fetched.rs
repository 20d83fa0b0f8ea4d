//! What a store hands over for one cluster: the small first fetch (envelope, keyring
//! chain, and where the parts are), each part's copy, and the digests of the envelope when
//! the store can tell them without reading it. OCI stores read all of it through the
//! cluster's manifest, which is here too.

use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::Statement;
use airlock_bundle::verify::Transport;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::oci::{ENVELOPE_MEDIA_TYPE, KEYRINGS_MEDIA_TYPE, OciDescriptor, OciManifest, RawManifest};

/// The small, first fetch for a cluster: enough to verify before fetching content. It
/// crosses the publisher's channel to its render worker as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fetched {
    /// The envelope's exact bytes.
    #[serde(with = "airlock_bundle::b64")]
    pub envelope: Vec<u8>,
    /// The keyring chain stored beside it, if any (spec 7.3).
    #[serde(with = "airlock_bundle::b64::option")]
    pub keyring_chain: Option<Vec<u8>>,
    /// Where the parts are, in terms of the store that answered.
    pub(crate) locator: Locator,
}

impl Fetched {
    /// The digest of the OCI manifest the envelope was read through, which names the
    /// envelope and chain by digest: given back to [`Store::fetch_envelope_unless`], it
    /// lets the store answer "unchanged" without reading either. `None` for Git.
    ///
    /// [`Store::fetch_envelope_unless`]: crate::Store::fetch_envelope_unless
    pub fn manifest(&self) -> Option<Digest> {
        match &self.locator {
            Locator::Oci(raw) => Some(raw.digest),
            Locator::Git { .. } => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Locator {
    Oci(Box<RawManifest>),
    Git { commit: String },
}

/// A part as a store hands it over.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PartCopy {
    Gzip(#[serde(with = "airlock_bundle::b64")] Vec<u8>),
    Tar(#[serde(with = "airlock_bundle::b64")] Vec<u8>),
}

impl PartCopy {
    pub fn transport(&self) -> Transport<'_> {
        match self {
            PartCopy::Gzip(b) => Transport::Gzip(b),
            PartCopy::Tar(b) => Transport::Tar(b),
        }
    }
}

impl Fetched {
    /// The statement inside the envelope, parsed WITHOUT checking signatures: for the
    /// publisher reading back its own store (version numbering, unchanged content), never
    /// for deciding what to apply.
    pub fn unverified_statement(&self) -> Option<Statement> {
        let env: airlock_bundle::envelope::Envelope = serde_json::from_slice(&self.envelope).ok()?;
        use base64::Engine;
        let payload = base64::engine::general_purpose::STANDARD.decode(env.payload).ok()?;
        serde_json::from_slice(&payload).ok()
    }
}

/// The digests of a cluster's newest envelope and of the keyring chain beside it, as the
/// store names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeDigests {
    pub envelope: Digest,
    pub chain: Option<Digest>,
}

impl Fetched {
    /// The envelope and keyring chain an OCI manifest names, read through `read_blob`, each
    /// capped by its limit.
    pub(crate) async fn from_manifest<F, Fut>(
        store: &str,
        cluster: &ClusterId,
        raw: RawManifest,
        limits: &Limits,
        read_blob: F,
    ) -> Result<Fetched, StoreError>
    where
        F: Fn(OciDescriptor, u64) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<u8>, StoreError>>,
    {
        let manifest = &raw.manifest;
        let envelope_layer = envelope_layer(store, manifest)?.clone();
        if envelope_layer.size > limits.envelope_bytes {
            return Err(StoreError::EnvelopeTooLarge {
                store: store.to_string(),
                cluster: cluster.to_string(),
                size: envelope_layer.size,
                limit: limits.envelope_bytes,
            });
        }
        // The cluster's manifest names these blobs: one the store lacks is damage to the store,
        // not a cluster without a bundle (which a publisher would start again at version 1).
        let named = |e| match e {
            StoreError::NotFound { store, what } => {
                StoreError::Malformed { store, what, message: format!("named by the manifest of {cluster} but not in the store") }
            }
            e => e,
        };
        let envelope = read_blob(envelope_layer, limits.envelope_bytes).await.map_err(named)?;
        let keyring_chain = match manifest.layer(KEYRINGS_MEDIA_TYPE).cloned() {
            Some(d) if d.size > limits.keyring_chain_bytes => {
                let (store, cluster) = (store.to_string(), cluster.to_string());
                return Err(StoreError::KeyringChainTooLarge { store, cluster, size: d.size, limit: limits.keyring_chain_bytes });
            }
            Some(d) => Some(read_blob(d, limits.keyring_chain_bytes).await.map_err(named)?),
            None => None,
        };
        Ok(Fetched { envelope, keyring_chain, locator: Locator::Oci(Box::new(raw)) })
    }
}

impl EnvelopeDigests {
    /// The digests of the envelope and keyring chain layers `manifest` names.
    pub(crate) fn of_manifest(store: &str, manifest: &OciManifest) -> Result<EnvelopeDigests, StoreError> {
        let envelope = envelope_layer(store, manifest)?.digest;
        Ok(EnvelopeDigests { envelope, chain: manifest.layer(KEYRINGS_MEDIA_TYPE).map(|d| d.digest) })
    }
}

fn envelope_layer<'m>(store: &str, manifest: &'m OciManifest) -> Result<&'m OciDescriptor, StoreError> {
    manifest.layer(ENVELOPE_MEDIA_TYPE).ok_or_else(|| StoreError::Malformed {
        store: store.to_string(),
        what: "manifest".into(),
        message: "no envelope layer".into(),
    })
}
