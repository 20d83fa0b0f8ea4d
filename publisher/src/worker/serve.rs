//! The signer's side of the channel: it answers the worker's calls with what only it
//! holds, the store and its credentials, the management cluster's client, the keys and
//! the secrets derived from them, and hands out nothing of them but answers. What it
//! agrees to sign is [`Guard`]'s; when replicas share the fleet, it signs and writes only
//! what this replica's [`Fence`] admits, holding it across each write.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use airlock_bundle::mac::Mac;
use airlock_bundle::{Digest, Limits, Part, SignedBundle};
use airlock_store::{PublishMeta, Store, StoreError};
use jiff::Timestamp;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::guard::Guard;
use super::rpc::{Incoming, Peer};
use super::wire::{Call, SecretName, StoreCall, WireBundle};
use crate::publish::Signer;

use crate::shard::fence::{Admitted, Fence};
use crate::sources::live::ClusterReader;

/// What the signer answers with.
pub struct Served {
    pub signer: Signer,
    pub store: Arc<dyn Store>,
    /// The management cluster; `None` when the source is a directory.
    pub reader: Option<Arc<dyn ClusterReader>>,
    pub guard: Guard,
    pub limits: Limits,
    /// This replica's clusters when several share the fleet; `None`: all.
    pub fence: Option<Arc<Fence>>,
    batches: Mutex<HashMap<u64, mpsc::UnboundedSender<Step>>>,
    /// The parts each open batch carried, by key.
    carried: Mutex<HashMap<u64, HashMap<Digest, Part>>>,
    next_batch: AtomicU64,
}

/// One step of a batch, and where its outcome goes.
enum Step {
    Add(Vec<SignedBundle>, oneshot::Sender<Result<Vec<Option<Digest>>, StoreError>>),
    Commit(oneshot::Sender<Result<(), StoreError>>),
}

impl Served {
    pub fn new(signer: Signer, store: Arc<dyn Store>, reader: Option<Arc<dyn ClusterReader>>, guard: Guard, limits: Limits) -> Served {
        Served {
            signer,
            store,
            reader,
            guard,
            limits,
            fence: None,
            batches: Mutex::default(),
            carried: Mutex::default(),
            next_batch: AtomicU64::new(0),
        }
    }

    /// Answers the worker's calls until the channel closes, each as a task of its own;
    /// returns why it stopped: a call that is not one is a worker to stop trusting.
    pub async fn serve(self: Arc<Self>, peer: Arc<Peer>, mut incoming: mpsc::UnboundedReceiver<Incoming>) -> String {
        while let Some(Incoming { id, body }) = incoming.recv().await {
            let call: Call = match serde_json::from_value(body) {
                Ok(call) => call,
                Err(e) => return format!("the render worker made a call that is not one: {e}"),
            };
            let (served, peer) = (Arc::clone(&self), Arc::clone(&peer));
            tokio::spawn(async move { peer.reply(id, served.answer(call).await) });
        }
        peer.closed().unwrap_or_else(|| "the channel closed".into())
    }

    async fn answer(self: Arc<Self>, call: Call) -> Result<Value, String> {
        match call {
            Call::Store(call) => self.store_call(call).await,
            Call::List { plural } => json(self.reader()?.list(&plural).await),
            Call::Get { wanted } => json(self.reader()?.get(&wanted).await),
            Call::Sign { key, message } => {
                let cluster = self.guard.check(&message, Timestamp::now())?;
                drop(self.admit([cluster.as_str()]).await?);
                // A token may take its time; the runtime's threads go on answering.
                let signature = tokio::task::spawn_blocking(move || {
                    let signer = self.signer.keys.get(key).ok_or_else(|| format!("no key number {key}"))?;
                    signer.sign(&message).map_err(|e| e.to_string())
                })
                .await
                .map_err(|e| format!("signing panicked: {e}"))??;
                json(signature.to_vec())
            }
            Call::SignAll { key, messages } => {
                let now = Timestamp::now();
                // Each check parses a statement: a chunk's take every core.
                let clusters = messages.par_iter().map(|m| self.guard.check(&m.0, now)).collect::<Result<Vec<_>, _>>()?;
                drop(self.admit(clusters.iter().map(String::as_str)).await?);
                let signatures = tokio::task::spawn_blocking(move || {
                    let signer = self.signer.keys.get(key).ok_or_else(|| format!("no key number {key}"))?;
                    let messages: Vec<&[u8]> = messages.iter().map(|m| m.0.as_slice()).collect();
                    signer.sign_all(&messages).map_err(|e| e.to_string())
                })
                .await
                .map_err(|e| format!("signing panicked: {e}"))??;
                json(signatures.iter().map(|s| s.to_vec()).collect::<Vec<_>>())
            }
            Call::Mac { secret, message } => {
                let secrets = &self.signer.secrets;
                let mac: &dyn Mac = match secret {
                    SecretName::Entropy => &*secrets.entropy,
                    SecretName::Seal => &*secrets.seal,
                };
                json(mac.mac(&message))
            }
        }
    }

    /// Admits `clusters` to be signed or written, the guard held until dropped; anything
    /// without a fence.
    async fn admit<'c>(&self, clusters: impl IntoIterator<Item = &'c str>) -> Result<Option<Admitted<'_>>, String> {
        match &self.fence {
            Some(fence) => fence.admit(clusters).await.map(Some).map_err(|e| e.to_string()),
            None => Ok(None),
        }
    }

    fn reader(&self) -> Result<&Arc<dyn ClusterReader>, String> {
        self.reader.as_ref().ok_or_else(|| "this run reads a directory, not the management cluster".into())
    }

    async fn store_call(&self, call: StoreCall) -> Result<Value, String> {
        let (store, limits) = (&*self.store, &self.limits);
        match call {
            StoreCall::FetchEnvelope { cluster } => json(store.fetch_envelope(&cluster, limits).await),
            StoreCall::FetchEnvelopeUnless { cluster, known } => json(store.fetch_envelope_unless(&cluster, &known, limits).await),
            StoreCall::EnvelopeDigests { cluster } => json(store.envelope_digests(&cluster, limits).await),
            StoreCall::ManifestDigest { cluster } => json(store.manifest_digest(&cluster, limits).await),
            StoreCall::FetchPart { cluster, fetched, part } => json(store.fetch_part(&cluster, &fetched, &part, limits).await),
            StoreCall::Clusters => json(store.clusters(limits).await),
            StoreCall::Publish { bundles, meta } => {
                let bundles = self.rebuilt(bundles, &mut HashMap::new())?;
                let _admitted = self.admit(bundles.iter().map(|b| b.cluster())).await?;
                json(store.publish(&bundles, &meta).await)
            }
            StoreCall::Batch { meta } => json(Ok::<_, StoreError>(self.start_batch(meta))),
            StoreCall::Add { batch, bundles } => {
                let (tx, rx) = oneshot::channel();
                let bundles = {
                    let mut carried = self.carried.lock().expect("no panic holds the lock");
                    self.rebuilt(bundles, carried.entry(batch).or_default())?
                };
                let _admitted = self.admit(bundles.iter().map(|b| b.cluster())).await?;
                self.step(batch, Step::Add(bundles, tx))?;
                json(rx.await.map_err(|_| "the batch ended".to_string())?)
            }
            StoreCall::Commit { batch } => {
                let (tx, rx) = oneshot::channel();
                self.step(batch, Step::Commit(tx))?;
                self.batches.lock().expect("no panic holds the lock").remove(&batch);
                self.carried.lock().expect("no panic holds the lock").remove(&batch);
                json(rx.await.map_err(|_| "the batch ended".to_string())?)
            }
        }
    }

    /// The bundles the worker hands to the store, each signed by this signer's keys.
    fn rebuilt(&self, bundles: Vec<WireBundle>, known: &mut HashMap<Digest, Part>) -> Result<Vec<SignedBundle>, String> {
        let own = self.signer.own_keyring(&self.limits).ok_or("the publisher's keys make no keyring")?;
        bundles.into_iter().map(|b| b.rebuild(&own, &self.limits, known)).collect()
    }

    /// A batch of the store, kept by a task of its own: it borrows the store, and its
    /// steps come one call at a time.
    fn start_batch(&self, meta: PublishMeta) -> u64 {
        let number = self.next_batch.fetch_add(1, Ordering::Relaxed);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let store = Arc::clone(&self.store);
        tokio::spawn(async move {
            let mut batch = store.batch(&meta);
            while let Some(step) = rx.recv().await {
                match step {
                    Step::Add(bundles, done) => drop(done.send(batch.add(bundles).await)),
                    Step::Commit(done) => return drop(done.send(batch.commit().await)),
                }
            }
        });
        self.batches.lock().expect("no panic holds the lock").insert(number, tx);
        number
    }

    fn step(&self, batch: u64, step: Step) -> Result<(), String> {
        let batches = self.batches.lock().expect("no panic holds the lock");
        let sender = batches.get(&batch).ok_or_else(|| format!("no batch number {batch}"))?;
        sender.send(step).map_err(|_| format!("batch {batch} ended"))
    }
}

fn json(value: impl Serialize) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| e.to_string())
}
