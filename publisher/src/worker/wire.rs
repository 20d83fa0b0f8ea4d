//! What crosses the channel between the signer and its render worker: the worker's calls,
//! the job the signer hands it, and signed bundles on their way to the store.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use airlock_bundle::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::statement::{Plaintext, ProfileEntry};
use airlock_bundle::{Bundle, ClusterId, Digest, Keyring, Limits, Part, SignedBundle, Statement, b64};
use airlock_store::{Fetched, PublishMeta};
use bytes::Bytes;
use jiff::SignedDuration;
use serde::{Deserialize, Serialize};

use crate::shard::Shard;
use crate::source_mirrors::Mirrors;
use crate::sources::Reference;

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
    /// Signatures by key `key` of each of `messages`, in order: a chunk's statements in one
    /// call.
    SignAll {
        key: usize,
        messages: Vec<Message>,
    },
    /// HMAC-SHA256 of `message` under one of the secrets derived from the first key.
    Mac {
        secret: SecretName,
        #[serde(with = "b64")]
        message: Vec<u8>,
    },
}

/// Bytes to sign.
#[derive(Debug, Serialize, Deserialize)]
pub struct Message(#[serde(with = "b64")] pub Vec<u8>);

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
    /// An OCI layout the worker writes itself: a store on disk holds no credentials, and
    /// what it holds is verified by every puller, so its bundles need not cross the
    /// channel. `None`: the signer's store, through the channel.
    pub layout: Option<PathBuf>,
    pub meta: PublishMeta,
    pub only: Vec<ClusterId>,
    /// The clusters of this replica when several share the fleet; `None`: all.
    #[serde(default)]
    pub shard: Option<Shard>,
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
    /// Where fetches go instead of the URLs profiles name.
    #[serde(default)]
    pub mirrors: Mirrors,
}

/// A signed bundle: its envelope and its parts, from which the signer builds it again.
/// A part many clusters share crosses once per batch: after its files, only its key.
#[derive(Debug, Serialize, Deserialize)]
pub struct WireBundle {
    #[serde(with = "b64")]
    envelope: Vec<u8>,
    #[serde(with = "b64::option")]
    keyring_chain: Option<Vec<u8>>,
    parts: Vec<(String, WirePart)>,
}

#[derive(Debug, Serialize, Deserialize)]
enum WirePart {
    /// The part's files, the first time the batch sees it, under its key.
    Files { key: Digest, files: Vec<WireFile> },
    /// A part whose files came before in the same batch.
    Sent(Digest),
}

#[derive(Debug, Serialize, Deserialize)]
struct WireFile {
    path: String,
    #[serde(with = "b64")]
    bytes: Vec<u8>,
    plaintext: Option<Plaintext>,
}

/// What identifies a part's content: its name, each file's path and digest, and what each
/// encrypted file decrypts to. The file digests are worked out once for a part and every
/// clone of it, so a part shared by many bundles is keyed once.
fn part_key(name: &str, part: &Part) -> Digest {
    let mut text = format!("{name}\n");
    for ((path, _), digest) in part.files().zip(part.file_digests()) {
        let plaintext = part.plaintext(path).map(|p| serde_json::to_string(p).expect("a plaintext serialises"));
        text.push_str(&format!("{path}\0{digest}\0{}\n", plaintext.unwrap_or_default()));
    }
    Digest::of(text.as_bytes())
}

impl WireBundle {
    /// `signed` on the wire, without the files of the parts in `sent` (the keys of parts
    /// this batch carried before), which it extends. Also the bytes of files it carries.
    pub fn of(signed: &SignedBundle, sent: &mut HashSet<Digest>) -> (WireBundle, usize) {
        let mut carried = 0;
        let parts = signed
            .bundle
            .parts()
            .map(|(name, part)| {
                let key = part_key(name, part);
                if !sent.insert(key) {
                    return (name.to_string(), WirePart::Sent(key));
                }
                let files: Vec<WireFile> = part
                    .files()
                    .map(|(path, bytes)| WireFile { path: path.into(), bytes: bytes.to_vec(), plaintext: part.plaintext(path).cloned() })
                    .collect();
                carried += files.iter().map(|f| f.bytes.len()).sum::<usize>();
                (name.to_string(), WirePart::Files { key, files })
            })
            .collect();
        (WireBundle { envelope: signed.envelope.clone(), keyring_chain: signed.keyring_chain.clone(), parts }, carried)
    }

    /// The bundle again, its statement read from the envelope, each within `limits`; an
    /// envelope `own` (the signer's keys) did not sign is refused. `known` holds the parts
    /// this batch carried before, by key, and gets the new ones.
    pub fn rebuild(self, own: &Keyring, limits: &Limits, known: &mut HashMap<Digest, Part>) -> Result<SignedBundle, String> {
        let decoded = envelope::decode(&self.envelope, IN_TOTO_PAYLOAD_TYPE, limits).map_err(|e| format!("envelope: {e}"))?;
        own.check(&decoded).map_err(|e| format!("refused to store an envelope the publisher's keys did not sign: {e}"))?;
        let statement: Statement = serde_json::from_slice(&decoded.payload).map_err(|e| format!("statement: {e}"))?;
        let mut parts = Vec::with_capacity(self.parts.len());
        for (name, part) in self.parts {
            let part = match part {
                WirePart::Files { key, files } => {
                    let files = files.into_iter().map(|f| (f.path, Bytes::from(f.bytes), f.plaintext));
                    let part = Part::sealed(&name, files, limits).map_err(|e| format!("part {name}: {e}"))?;
                    known.insert(key, part.clone());
                    part
                }
                WirePart::Sent(key) => known.get(&key).cloned().ok_or_else(|| format!("part {name}: refers to files never sent"))?,
            };
            parts.push((name, part));
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
