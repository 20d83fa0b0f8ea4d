//! Writing a run's signed bundles behind its rendering: a thread of its own keeps the
//! store's batch and writes each chunk while the next one renders and is signed, so
//! compressing and creating blobs, which wait on the filesystem, fill the cores rendering
//! leaves idle instead of following it.
//!
//! The thread is the batch's only user: it opens it, adds every chunk in the order they
//! come and commits it at the end, as the chunk loop did. At most one chunk waits while
//! another is written, so a run holds no more bundles than two chunks.

use std::sync::Arc;

use airlock_bundle::{Digest, SignedBundle};
use airlock_store::{PublishMeta, Store, StoreError};
use tokio::sync::{mpsc, oneshot};

/// The manifest each written bundle is named by, by the fingerprint of its inputs.
pub(crate) type Named = Vec<(Digest, Digest)>;

/// A chunk's signed bundles, each with the fingerprint of its inputs.
type Chunk = Vec<(SignedBundle, Digest)>;

/// The batch of one run, written on its own thread.
pub(crate) struct Writer {
    chunks: mpsc::Sender<Chunk>,
    done: oneshot::Receiver<Result<Named, StoreError>>,
}

impl Writer {
    /// Opens a batch of `store` on a thread of its own. Must be called from within the
    /// runtime: the batch's calls run on it.
    pub(crate) fn start(store: Arc<dyn Store>, meta: PublishMeta) -> Writer {
        let (chunks, mut incoming) = mpsc::channel::<Chunk>(1);
        let (finished, done) = oneshot::channel();
        let runtime = tokio::runtime::Handle::current();
        std::thread::Builder::new()
            .name("airlock-write".into())
            .spawn(move || {
                let written = runtime.block_on(async move {
                    let mut batch = store.batch(&meta);
                    let mut named = Vec::new();
                    while let Some(chunk) = incoming.recv().await {
                        let (bundles, inputs): (Vec<SignedBundle>, Vec<Digest>) = chunk.into_iter().unzip();
                        let manifests = batch.add(bundles).await?;
                        named.extend(inputs.into_iter().zip(manifests).filter_map(|(i, m)| Some((i, m?))));
                    }
                    batch.commit().await?;
                    Ok(named)
                });
                // The run stopped waiting only when it failed already.
                let _ = finished.send(written);
            })
            .expect("the writing thread starts");
        Writer { chunks, done }
    }

    /// Hands a chunk to the thread; waits only while another chunk waits. A batch that
    /// failed takes nothing more: its error comes from [`Writer::finish`].
    pub(crate) async fn write(&mut self, chunk: Chunk) -> Result<(), StoreError> {
        if chunk.is_empty() {
            return Ok(());
        }
        if self.chunks.send(chunk).await.is_err() {
            return Err(self.failed().await);
        }
        Ok(())
    }

    /// Commits the batch once every chunk is written; returns the manifests named.
    pub(crate) async fn finish(self) -> Result<Named, StoreError> {
        let Writer { chunks, done } = self;
        drop(chunks);
        done.await.expect("the writing thread answers before it ends")
    }

    /// The error that stopped the thread.
    async fn failed(&mut self) -> StoreError {
        match (&mut self.done).await.expect("the writing thread answers before it ends") {
            Err(e) => e,
            Ok(_) => unreachable!("the thread stops taking chunks only when it failed"),
        }
    }
}
