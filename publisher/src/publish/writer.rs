//! Writing a run's signed bundles behind its rendering: a thread of its own keeps the
//! store's batch and writes each chunk while the next one renders and is signed, so
//! compressing and creating blobs, which wait on the filesystem, fill the cores rendering
//! leaves idle instead of following it.
//!
//! The thread is the batch's only user: it opens it, adds every chunk in the order they
//! come and commits it when the run says so, as the chunk loop did. A run that stops
//! before (an error, a panic, a cancelled future) drops the writer, and the batch is
//! dropped uncommitted, as before. At most one chunk waits while another is written, so a
//! run holds no more bundles than two chunks.

use std::sync::Arc;

use airlock_bundle::{Digest, SignedBundle};
use airlock_store::{PublishMeta, Store, StoreError};
use tokio::sync::{mpsc, oneshot};

/// The manifest each written bundle is named by, by the fingerprint of its inputs.
pub(crate) type Named = Vec<(Digest, Digest)>;

/// A chunk's signed bundles, each with the fingerprint of its inputs.
type Chunk = Vec<(SignedBundle, Digest)>;

/// What the run asks of the thread.
enum Step {
    Write(Chunk),
    Commit,
}

/// The batch of one run, written on its own thread.
pub(crate) struct Writer {
    chunks: mpsc::Sender<Step>,
    /// What the thread wrote: `None` when the run stopped without committing.
    done: oneshot::Receiver<Result<Option<Named>, StoreError>>,
}

impl Writer {
    /// Opens a batch of `store` on a thread of its own. Must be called from within the
    /// runtime: the batch's calls run on it.
    pub(crate) fn start(store: Arc<dyn Store>, meta: PublishMeta) -> Writer {
        let (chunks, mut incoming) = mpsc::channel::<Step>(1);
        let (finished, done) = oneshot::channel();
        let runtime = tokio::runtime::Handle::current();
        std::thread::Builder::new()
            .name("airlock-write".into())
            .spawn(move || {
                let written = runtime.block_on(async move {
                    let mut batch = store.batch(&meta);
                    let mut named = Vec::new();
                    loop {
                        match incoming.recv().await {
                            Some(Step::Write(chunk)) => {
                                let (bundles, inputs): (Vec<SignedBundle>, Vec<Digest>) = chunk.into_iter().unzip();
                                let manifests = batch.add(bundles).await?;
                                named.extend(inputs.into_iter().zip(manifests).filter_map(|(i, m)| Some((i, m?))));
                            }
                            Some(Step::Commit) => break,
                            // The run stopped without committing: so does the batch.
                            None => return Ok(None),
                        }
                    }
                    batch.commit().await?;
                    Ok(Some(named))
                });
                // Nobody waits for it when the run stopped first.
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
        if self.chunks.send(Step::Write(chunk)).await.is_err() {
            return Err(self.failed().await);
        }
        Ok(())
    }

    /// Commits the batch once every chunk is written; returns the manifests named.
    pub(crate) async fn finish(mut self) -> Result<Named, StoreError> {
        if self.chunks.send(Step::Commit).await.is_err() {
            return Err(self.failed().await);
        }
        Ok(self.done.await.expect("the writing thread answers before it ends")?.expect("asked to commit, the thread commits"))
    }

    /// The error that stopped the thread.
    async fn failed(&mut self) -> StoreError {
        match (&mut self.done).await.expect("the writing thread answers before it ends") {
            Err(e) => e,
            Ok(_) => unreachable!("the thread stops taking steps before the commit only when it failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use airlock_bundle::testkit::Fixture;
    use airlock_store::{StoreRef, open};

    use super::*;

    async fn layout(path: std::path::PathBuf) -> Arc<dyn Store> {
        open(&StoreRef::OciLayout(path), &Default::default()).await.unwrap().into()
    }

    /// The fixture cluster's bundle at `version`, with inputs told apart by the version.
    fn chunk(version: u64) -> Chunk {
        vec![(Fixture::new(1).signed(version, Fixture::files()), Digest::of(&version.to_be_bytes()))]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_every_chunk_in_order_and_names_each_manifest_by_its_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let store = layout(dir.path().join("layout")).await;
        let mut writer = Writer::start(Arc::clone(&store), PublishMeta::default());
        writer.write(chunk(1)).await.unwrap();
        writer.write(Vec::new()).await.unwrap();
        writer.write(chunk(2)).await.unwrap();
        let named = writer.finish().await.unwrap();
        let inputs: Vec<Digest> = named.iter().map(|(i, _)| *i).collect();
        assert_eq!(inputs, [Digest::of(&1u64.to_be_bytes()), Digest::of(&2u64.to_be_bytes())]);
        let limits = airlock_bundle::Limits::SPEC;
        let latest = store.manifest_digest(&Fixture::new(1).cluster, &limits).await.unwrap();
        assert_eq!(latest, Some(named[1].1), "committed, the last chunk's bundle the newest");
        assert_ne!(named[0].1, named[1].1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_that_stops_before_its_commit_names_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = layout(dir.path().join("layout")).await;
        let mut writer = Writer::start(Arc::clone(&store), PublishMeta::default());
        writer.write(chunk(1)).await.unwrap();
        let done = std::mem::replace(&mut writer.done, oneshot::channel().1);
        drop(writer);
        assert!(matches!(done.await, Ok(Ok(None))), "the thread ends without committing");
        let named = store.manifest_digest(&Fixture::new(1).cluster, &airlock_bundle::Limits::SPEC).await;
        assert!(matches!(named, Err(StoreError::NotFound { .. }) | Ok(None)), "no index names it: {named:?}");
    }

    #[tokio::test]
    async fn a_batch_that_cannot_write_fails_the_writing_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        // A layout whose blobs directory is a file: no blob can be written.
        let root = dir.path().join("layout");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        std::fs::write(root.join("blobs"), b"not a directory").unwrap();
        let mut writer = Writer::start(layout(root).await, PublishMeta::default());
        let mut failed = None;
        for version in 1..=3 {
            if let Err(e) = writer.write(chunk(version)).await {
                failed = Some(e);
                break;
            }
        }
        let error = match failed {
            Some(e) => e,
            None => writer.finish().await.expect_err("the batch could write nothing"),
        };
        assert!(error.to_string().contains("blobs"), "{error}");
    }
}
