//! What crosses the channel between the signer and its render worker: the worker's calls,
//! the job the signer hands it, and signed bundles on their way to the store.

use std::path::PathBuf;

use airlock_bundle::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::statement::{Plaintext, ProfileEntry};
use airlock_bundle::{Bundle, ClusterId, Digest, Keyring, Limits, Part, SignedBundle, Statement, b64};
use airlock_store::{Fetched, PublishMeta};
use bytes::Bytes;
use jiff::SignedDuration;
use serde::{Deserialize, Serialize};

use crate::sveltos::Reference;

/// What the worker asks of the signer.
#[derive(Debug, Serialize, Deserialize)]
pub enum Call {
    Store(StoreCall),
    /// Every object of a listed kind of the management cluster.
    List {
        plural: String,
    },
    /// Objects of the management cluster that rendering references.
    Get {
        wanted: Vec<Reference>,
    },
    /// A signature by key `key` (an index into the job's keys) of `message`, a DSSE
    /// pre-authentication encoding of a statement.
    Sign {
        key: usize,
        #[serde(with = "b64")]
        message: Vec<u8>,
    },
    /// HMAC-SHA256 of `message` under one of the secrets derived from the first key.
    Mac {
        secret: SecretName,
        #[serde(with = "b64")]
        message: Vec<u8>,
    },
}

/// The derived secrets the signer keeps.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub enum SecretName {
    Entropy,
    Seal,
}

/// A call of `airlock_store::Store` (and its batch) made on the signer's store. Answers
/// are `Result<T, StoreError>` of what the method returns.
#[derive(Debug, Serialize, Deserialize)]
pub enum StoreCall {
    FetchEnvelope {
        cluster: ClusterId,
    },
    FetchEnvelopeUnless {
        cluster: ClusterId,
        known: Digest,
    },
    EnvelopeDigests {
        cluster: ClusterId,
    },
    ManifestDigest {
        cluster: ClusterId,
    },
    FetchPart {
        cluster: ClusterId,
        fetched: Box<Fetched>,
        part: Box<ProfileEntry>,
    },
    Clusters,
    Publish {
        bundles: Vec<WireBundle>,
        meta: PublishMeta,
    },
    /// Starts a batch; answers its number.
    Batch {
        meta: PublishMeta,
    },
    Add {
        batch: u64,
        bundles: Vec<WireBundle>,
    },
    Commit {
        batch: u64,
    },
}

impl StoreCall {
    /// The method called, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            StoreCall::FetchEnvelope { .. } => "fetch_envelope",
            StoreCall::FetchEnvelopeUnless { .. } => "fetch_envelope_unless",
            StoreCall::EnvelopeDigests { .. } => "envelope_digests",
            StoreCall::ManifestDigest { .. } => "manifest_digest",
            StoreCall::FetchPart { .. } => "fetch_part",
            StoreCall::Clusters => "clusters",
            StoreCall::Publish { .. } => "publish",
            StoreCall::Batch { .. } => "batch",
            StoreCall::Add { .. } => "batch add",
            StoreCall::Commit { .. } => "batch commit",
        }
    }
}

/// One publish run, as the signer hands it to the worker: everything of the publisher's
/// settings but its secrets and credentials.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    /// The directory to read; `None` for the management cluster, read through the signer.
    pub from_dir: Option<PathBuf>,
    /// The store, as the signer describes it.
    pub store: String,
    pub meta: PublishMeta,
    pub only: Vec<ClusterId>,
    pub dry_run: bool,
    pub renew_before: SignedDuration,
    pub kubectl: Option<PathBuf>,
    pub helm: Option<PathBuf>,
    pub helm_cache: Option<PathBuf>,
    /// The memo's file; `None` remembers nothing.
    pub memo: Option<PathBuf>,
    pub age_recipients: Vec<String>,
    /// The signing keys' public halves (PEM), in the signer's order.
    pub keys: Vec<String>,
    pub keyring_version: u64,
    #[serde(with = "b64::option")]
    pub chain: Option<Vec<u8>>,
    pub expires_in: SignedDuration,
}

/// A signed bundle: its envelope and its files, from which the signer builds it again.
#[derive(Debug, Serialize, Deserialize)]
pub struct WireBundle {
    #[serde(with = "b64")]
    envelope: Vec<u8>,
    #[serde(with = "b64::option")]
    keyring_chain: Option<Vec<u8>>,
    parts: Vec<(String, Vec<WireFile>)>,
}

#[derive(Debug, Serialize, Deserialize)]
struct WireFile {
    path: String,
    #[serde(with = "b64")]
    bytes: Vec<u8>,
    plaintext: Option<Plaintext>,
}

impl WireBundle {
    pub fn of(signed: &SignedBundle) -> WireBundle {
        let parts = signed
            .bundle
            .parts()
            .map(|(name, part)| {
                let files = part
                    .files()
                    .map(|(path, bytes)| WireFile { path: path.into(), bytes: bytes.to_vec(), plaintext: part.plaintext(path).cloned() })
                    .collect();
                (name.to_string(), files)
            })
            .collect();
        WireBundle { envelope: signed.envelope.clone(), keyring_chain: signed.keyring_chain.clone(), parts }
    }

    /// The bundle again, its statement read from the envelope, each within `limits`; an
    /// envelope `own` (the signer's keys) did not sign is refused.
    pub fn rebuild(self, own: &Keyring, limits: &Limits) -> Result<SignedBundle, String> {
        let decoded = envelope::decode(&self.envelope, IN_TOTO_PAYLOAD_TYPE, limits).map_err(|e| format!("envelope: {e}"))?;
        own.check(&decoded).map_err(|e| format!("refused to store an envelope the publisher's keys did not sign: {e}"))?;
        let statement: Statement = serde_json::from_slice(&decoded.payload).map_err(|e| format!("statement: {e}"))?;
        let mut parts = Vec::with_capacity(self.parts.len());
        for (name, files) in self.parts {
            let files = files.into_iter().map(|f| (f.path, Bytes::from(f.bytes), f.plaintext));
            parts.push((name.clone(), Part::sealed(&name, files, limits).map_err(|e| format!("part {name}: {e}"))?));
        }
        let bundle = Bundle::from_parts(parts, limits).map_err(|e| format!("bundle: {e}"))?;
        Ok(SignedBundle { bundle, statement, envelope: self.envelope, keyring_chain: self.keyring_chain })
    }
}

/// The largest frame either side sends or accepts: a bundle at its limits (base64 and the
/// JSON around it make a third more), with room for a run's summary.
pub fn max_frame(limits: &Limits) -> usize {
    let bundle = limits.total_bytes + limits.envelope_bytes + limits.keyring_chain_bytes;
    usize::try_from(bundle * 2 + (64 << 20)).unwrap_or(usize::MAX).min(u32::MAX as usize)
}
