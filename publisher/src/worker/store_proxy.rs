//! The worker's store: every call made on the signer's, which holds the credentials.

use std::collections::HashSet;
use std::sync::Arc;

use airlock_bundle::statement::ProfileEntry;
use airlock_bundle::{ClusterId, Digest, Limits, SignedBundle};
use airlock_store::{Batch, EnvelopeDigests, Fetched, PartCopy, PublishMeta, Store, StoreError};
use async_trait::async_trait;
use serde::de::DeserializeOwned;

use super::rpc::Peer;
use super::wire::{Call, StoreCall, WireBundle};

/// A store whose calls the signer serves.
pub struct StoreProxy {
    peer: Arc<Peer>,
    /// The signer's description of its store.
    name: String,
}

impl StoreProxy {
    pub fn new(peer: Arc<Peer>, name: String) -> StoreProxy {
        StoreProxy { peer, name }
    }

    async fn call<T: DeserializeOwned>(&self, call: StoreCall) -> Result<T, StoreError> {
        let what = call.name();
        let answer: Result<Result<T, StoreError>, _> = self.peer.call(what, &Call::Store(call)).await;
        answer.map_err(|e| StoreError::Unavailable { store: self.name.clone(), message: e.to_string() })?
    }
}

#[async_trait]
impl Store for StoreProxy {
    fn describe(&self) -> String {
        self.name.clone()
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, _limits: &Limits) -> Result<Fetched, StoreError> {
        self.call(StoreCall::FetchEnvelope { cluster: cluster.clone() }).await
    }

    async fn fetch_envelope_unless(&self, cluster: &ClusterId, known: &Digest, _limits: &Limits) -> Result<Option<Fetched>, StoreError> {
        self.call(StoreCall::FetchEnvelopeUnless { cluster: cluster.clone(), known: *known }).await
    }

    async fn envelope_digests(&self, cluster: &ClusterId, _limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        self.call(StoreCall::EnvelopeDigests { cluster: cluster.clone() }).await
    }

    async fn manifest_digest(&self, cluster: &ClusterId, _limits: &Limits) -> Result<Option<Digest>, StoreError> {
        self.call(StoreCall::ManifestDigest { cluster: cluster.clone() }).await
    }

    async fn fetch_part(
        &self,
        cluster: &ClusterId,
        fetched: &Fetched,
        part: &ProfileEntry,
        _limits: &Limits,
    ) -> Result<PartCopy, StoreError> {
        let call = StoreCall::FetchPart { cluster: cluster.clone(), fetched: Box::new(fetched.clone()), part: Box::new(part.clone()) };
        self.call(call).await
    }

    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        let mut sent = HashSet::new();
        let bundles = bundles.iter().map(|b| WireBundle::of(b, &mut sent).0).collect();
        self.call(StoreCall::Publish { bundles, meta: meta.clone() }).await
    }

    fn batch<'s>(&'s self, meta: &PublishMeta) -> Box<dyn Batch + 's> {
        Box::new(BatchProxy { store: self, meta: meta.clone(), number: None, sent: HashSet::new() })
    }

    async fn clusters(&self, _limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        self.call(StoreCall::Clusters).await
    }
}

/// A batch the signer keeps open on its store, started with the first bundles: a run
/// that publishes nothing starts none.
struct BatchProxy<'s> {
    store: &'s StoreProxy,
    meta: PublishMeta,
    number: Option<u64>,
    /// The keys of the parts whose files this batch carried.
    sent: HashSet<Digest>,
}

/// The file bytes one call carries at most, beside bundles whose parts all came before: a
/// frame stays far below its limit, and a chunk of bundles takes few calls.
const CALL_BYTES: usize = 16 << 20;

#[async_trait]
impl Batch for BatchProxy<'_> {
    async fn add(&mut self, bundles: Vec<SignedBundle>) -> Result<Vec<Option<Digest>>, StoreError> {
        let batch = match self.number {
            Some(n) => n,
            None => *self.number.insert(self.store.call(StoreCall::Batch { meta: self.meta.clone() }).await?),
        };
        // As many bundles a call as fit CALL_BYTES of new files, and at least one: a bundle
        // at its limits still fits a frame alone.
        let mut named = Vec::with_capacity(bundles.len());
        let (mut call, mut bytes) = (Vec::new(), 0);
        for bundle in &bundles {
            let (wire, carried) = WireBundle::of(bundle, &mut self.sent);
            if !call.is_empty() && bytes + carried > CALL_BYTES {
                let batched: Vec<Option<Digest>> = self.store.call(StoreCall::Add { batch, bundles: std::mem::take(&mut call) }).await?;
                named.extend(batched);
                bytes = 0;
            }
            call.push(wire);
            bytes += carried;
        }
        if !call.is_empty() {
            let batched: Vec<Option<Digest>> = self.store.call(StoreCall::Add { batch, bundles: call }).await?;
            named.extend(batched);
        }
        Ok(named)
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        match self.number {
            Some(batch) => self.store.call(StoreCall::Commit { batch }).await,
            None => Ok(()),
        }
    }
}
