//! The store's current bundle of a cluster, read back for what a publish keeps of it: the
//! last good part of a profile that failed or cannot be read, a paused profile's part,
//! and the time a clock-reading template rendered with. Entry point: [`read`].
//!
//! Unlike the version read of `compare`, what is kept is signed again, so the envelope is
//! verified first, with the publisher's own keys as the keyring: a store cannot slip
//! content into the next bundle. A bundle those keys did not sign (keys rotated since) or
//! that no longer verifies counts as nothing stored, logged: the profiles it held count as
//! never rendered. A store that cannot be read is an error, never "nothing stored": the
//! parts kept from it would otherwise be published empty, and pruned from the cluster.
//! Only the parts named are fetched, each checked against its signed digest.
//!
//! An encrypted file (spec 2.7) is kept byte for byte with the plaintext size and digest
//! its entry signs; the publisher holds no identity, so the objects in it stay unknown.

use airlock_bundle::statement::{ProfileEntry, Statement};
use airlock_bundle::{ClusterId, Expectation, Floor, Keyring, Limits, Part, VerifiedEnvelope, verify};
use airlock_store::{Fetched, PartCopy, Store, StoreError};
use jiff::Timestamp;

use crate::render::KeptContent;
use crate::sources::ObjectKey;
use crate::yaml::parse_documents;

/// A cluster's bundle in the store, its envelope verified.
pub struct Stored {
    envelope: VerifiedEnvelope,
    fetched: Fetched,
}

/// The verified bundle `store` holds for `cluster`; `None` when it holds none this
/// publisher's keys verify. Any other failure to read it is the store's error.
pub async fn read(
    store: &dyn Store,
    cluster: &ClusterId,
    keyring: &Keyring,
    now: Timestamp,
    limits: &Limits,
) -> Result<Option<Stored>, StoreError> {
    let fetched = match store.fetch_envelope(cluster, limits).await {
        Ok(fetched) => fetched,
        Err(StoreError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let floor = Floor::default();
    let expect = Expectation { cluster, keyring, floor: &floor, now };
    match verify::verify_envelope(&fetched.envelope, None, &expect, limits) {
        Ok(envelope) => Ok(Some(Stored { envelope, fetched })),
        Err(e) => {
            tracing::warn!(%cluster, "the stored bundle does not verify with the signing keys, so nothing of it is kept: {e}");
            Ok(None)
        }
    }
}

/// Why a stored part cannot be kept.
#[derive(Debug)]
pub enum PartError {
    /// The store did not answer: the caller cannot tell what the part holds.
    Store(StoreError),
    /// The store answered with bytes that are missing, do not match the signed digest, or
    /// do not parse: there is nothing to keep.
    Unusable(String),
}

impl Stored {
    pub fn statement(&self) -> &Statement {
        self.envelope.statement()
    }

    /// The content of the part `entry` names, with the objects its files hold.
    pub async fn part(
        &self,
        store: &dyn Store,
        cluster: &ClusterId,
        entry: &ProfileEntry,
        limits: &Limits,
    ) -> Result<KeptContent, PartError> {
        let copy = match store.fetch_part(cluster, &self.fetched, entry, limits).await {
            Ok(copy) => copy,
            Err(e @ StoreError::NotFound { .. }) => return Err(PartError::Unusable(e.to_string())),
            Err(e) => return Err(PartError::Store(e)),
        };
        self.keep(entry, &copy, limits).map_err(PartError::Unusable)
    }

    fn keep(&self, entry: &ProfileEntry, copy: &PartCopy, limits: &Limits) -> Result<KeptContent, String> {
        let verified = self.envelope.verify_part(&entry.name, copy.transport(), limits).map_err(|e| e.to_string())?;
        let signed = &self.statement().predicate.files;
        let mut keys = Vec::new();
        let mut files = Vec::new();
        for (path, bytes) in verified.files() {
            let plaintext = signed.binary_search_by(|f| f.path.as_str().cmp(path)).ok().and_then(|i| signed[i].plaintext.clone());
            if plaintext.is_none() {
                let text = std::str::from_utf8(bytes).map_err(|_| format!("{path}: not UTF-8"))?;
                for doc in parse_documents(text).map_err(|e| format!("{path}: {e}"))? {
                    keys.extend(ObjectKey::of(&doc));
                }
            }
            files.push((path.to_string(), bytes.clone(), plaintext));
        }
        let sealed = files.iter().any(|(_, _, plaintext)| plaintext.is_some());
        let part = Part::sealed(&entry.name, files, limits).map_err(|e| e.to_string())?;
        let kept_from = entry.failure.as_ref().and_then(|f| f.kept_from).unwrap_or(self.statement().predicate.version);
        let recipients = self.statement().predicate.settings.recipients.clone().filter(|_| sealed);
        Ok(KeptContent { part, keys, kept_from, recipients })
    }
}
