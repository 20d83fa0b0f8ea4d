//! The store's current bundle of a cluster, read back for what a publish keeps of it: the
//! last good part of a profile that failed or cannot be read, a paused profile's part,
//! and the time a clock-reading template rendered with. Entry point: [`read`].
//!
//! Unlike the version read of `compare`, what is kept is signed again, so the envelope is
//! verified first, with the publisher's own keys as the keyring: a store cannot slip
//! content into the next bundle. A bundle those keys did not sign (keys rotated since) or
//! that no longer verifies counts as nothing stored, logged: the profiles it held count as
//! never rendered. Only the parts named are fetched, each checked against its signed digest.

use airlock_bundle::statement::{ProfileEntry, Statement};
use airlock_bundle::{ClusterId, Expectation, Floor, Keyring, Limits, Part, VerifiedEnvelope, verify};
use airlock_store::{Fetched, Store, StoreError};
use jiff::Timestamp;

use crate::render::KeptContent;
use crate::sveltos::ObjectKey;
use crate::yaml::parse_documents;

/// A cluster's bundle in the store, its envelope verified.
pub struct Stored {
    envelope: VerifiedEnvelope,
    fetched: Fetched,
}

/// The verified bundle `store` holds for `cluster`; `None` when it holds none this
/// publisher's keys verify.
pub async fn read(store: &dyn Store, cluster: &ClusterId, keyring: &Keyring, now: Timestamp, limits: &Limits) -> Option<Stored> {
    let fetched = match store.fetch_envelope(cluster, limits).await {
        Ok(fetched) => fetched,
        Err(StoreError::NotFound { .. }) => return None,
        Err(e) => {
            tracing::warn!(%cluster, "cannot read the stored bundle to keep parts of it: {e}");
            return None;
        }
    };
    let floor = Floor::default();
    let expect = Expectation { cluster, keyring, floor: &floor, now };
    match verify::verify_envelope(&fetched.envelope, None, &expect, limits) {
        Ok(envelope) => Some(Stored { envelope, fetched }),
        Err(e) => {
            tracing::warn!(%cluster, "the stored bundle does not verify with the signing keys, so nothing of it is kept: {e}");
            None
        }
    }
}

impl Stored {
    pub fn statement(&self) -> &Statement {
        self.envelope.statement()
    }

    /// The content of the part `entry` names, with the objects its files hold.
    pub async fn part(&self, store: &dyn Store, cluster: &ClusterId, entry: &ProfileEntry, limits: &Limits) -> Result<KeptContent, String> {
        let copy = store.fetch_part(cluster, &self.fetched, entry, limits).await.map_err(|e| e.to_string())?;
        let verified = self.envelope.verify_part(&entry.name, copy.transport(), limits).map_err(|e| e.to_string())?;
        let mut keys = Vec::new();
        let mut files = Vec::new();
        for (path, bytes) in verified.files() {
            let text = std::str::from_utf8(bytes).map_err(|_| format!("{path}: not UTF-8"))?;
            for doc in parse_documents(text).map_err(|e| format!("{path}: {e}"))? {
                keys.extend(ObjectKey::of(&doc));
            }
            files.push((path.to_string(), bytes.clone()));
        }
        let part = Part::new(&entry.name, files, limits).map_err(|e| e.to_string())?;
        let kept_from = entry.failure.as_ref().and_then(|f| f.kept_from).unwrap_or(self.statement().predicate.version);
        Ok(KeptContent { part, keys, kept_from })
    }
}
