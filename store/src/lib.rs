//! Where bundles live between publisher and puller (spec section 9): one [`Store`] trait
//! over OCI registries, OCI image layouts, OCI archives and Git, and the [`mirror`] that
//! carries them across an air gap. Built on `airlock-bundle`, which it never bypasses.
//!
//! A store moves bytes and finds them; it does not decide whether they are trustworthy.
//! [`fetch_verified`] joins a store to `airlock_bundle::verify` in the order of spec
//! section 8: envelope first, content only when needed. Feature `testing` adds
//! [`vectors`], the format's test vectors computed.
#![forbid(unsafe_code)]

mod credentials;
mod git;
pub mod mirror;
pub mod oci;
pub(crate) mod oci_archive;
mod oci_layout;
mod oci_registry;
mod open;
mod reference;
#[cfg(feature = "testing")]
pub mod vectors;

use async_trait::async_trait;
use futures::StreamExt;

pub use credentials::RegistryCredentials;
pub use git::{GitCredentials, GitCredentialsError, GitStore};
pub use oci::{OciDescriptor, OciManifest};
pub use open::{open, open_oci};
pub use reference::StoreRef;

use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::envelope::EnvelopeError;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::{ProfileEntry, Statement};
use airlock_bundle::verify::{Expectation, Transport, VerifiedBundle, VerifyError, verify_envelope};

/// Why a store could not do what was asked. The three classes are kept apart because
/// callers act differently on them (see `docs/operations.md`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store holds nothing for this cluster (or this part).
    #[error("{store}: {what} not found")]
    NotFound { store: String, what: String },
    /// The store could not be reached or answered with a server error: retry later.
    #[error("{store}: unavailable: {message}")]
    Unavailable { store: String, message: String },
    /// The store answered, but what it holds is malformed or over a limit.
    #[error("{store}: {what}: {message}")]
    Malformed { store: String, what: String, message: String },
    /// The store holds an envelope over the cap of spec 8.1. Found from its size before
    /// reading it; [`fetch_verified`] turns it into the verification rejection it is.
    #[error("{store}: envelope of {cluster} is {size} bytes, over the limit of {limit}")]
    EnvelopeTooLarge { store: String, cluster: String, size: u64, limit: u64 },
    /// A store reference that cannot be parsed, or a store that cannot be opened or
    /// written (permissions, credentials).
    #[error("{store}: {message}")]
    Config { store: String, message: String },
}

/// The small, first fetch for a cluster: enough to verify before fetching content.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The envelope's exact bytes.
    pub envelope: Vec<u8>,
    /// The keyring chain stored beside it, if any (spec 7.3).
    pub keyring_chain: Option<Vec<u8>>,
    /// Where the parts are, in terms of the store that answered.
    pub(crate) locator: Locator,
}

#[derive(Debug, Clone)]
pub(crate) enum Locator {
    Oci(OciManifest),
    Git { commit: String },
}

/// A part as a store hands it over.
#[derive(Debug, Clone)]
pub enum PartCopy {
    Gzip(Vec<u8>),
    Tar(Vec<u8>),
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeDigests {
    pub envelope: Digest,
    pub chain: Option<Digest>,
}

/// Annotations a publish run records beside the bundles (spec 9.1).
#[derive(Debug, Clone, Default)]
pub struct PublishMeta {
    /// `org.opencontainers.image.source`: where the profiles came from.
    pub source: Option<String>,
    /// `org.opencontainers.image.revision`: the revision of that source.
    pub revision: Option<String>,
}

/// A place bundles are written to and read from.
#[async_trait]
pub trait Store: Send + Sync {
    /// The reference the store was opened with, for messages.
    fn describe(&self) -> String;

    /// The envelope and keyring chain of the newest version for `cluster`.
    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError>;

    /// The digests of what [`Store::fetch_envelope`] would return, when the store names its
    /// blobs by digest and can tell them without reading them (an OCI manifest names its
    /// layers so). `None` when it cannot: the caller reads the envelope. A publisher
    /// comparing 10,000 clusters with what it remembers reads 10,000 small manifests
    /// instead of as many envelopes.
    async fn envelope_digests(&self, _cluster: &ClusterId, _limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        Ok(None)
    }

    /// The digest of the manifest naming `cluster`'s newest bundle, when the store can
    /// tell it without reading the manifest (a layout's index names it, and the manifest's
    /// blob is there at its size). `None` when it cannot. A publisher that remembers the
    /// manifest it wrote recognises an unchanged cluster from the index alone.
    async fn manifest_digest(&self, _cluster: &ClusterId, _limits: &Limits) -> Result<Option<Digest>, StoreError> {
        Ok(None)
    }

    /// One part's copy, read with the cap derived from its signed size.
    async fn fetch_part(
        &self,
        cluster: &ClusterId,
        fetched: &Fetched,
        part: &ProfileEntry,
        limits: &Limits,
    ) -> Result<PartCopy, StoreError>;

    /// Writes signed bundles as the newest version of their clusters, in one batch (one
    /// commit for Git). Writes only what the store does not already hold.
    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError>;

    /// A batch handed its bundles a few at a time, as a publisher signs them. By default it
    /// keeps them and publishes them all at [`Batch::commit`]; a store that can write
    /// bundles before naming them newest writes them as they come, so a publish of
    /// thousands of clusters never holds them all.
    fn batch<'s>(&'s self, meta: &PublishMeta) -> Box<dyn Batch + 's> {
        Box::new(Kept { store: self, meta: meta.clone(), bundles: Vec::new() })
    }

    /// Clusters the store holds bundles for.
    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError>;
}

/// One [`Store::publish`] fed a few bundles at a time.
#[async_trait]
pub trait Batch: Send {
    /// Takes more bundles. A registry, which has no index, pushes them as they come; a
    /// layout writes their blobs and names them in its index only at [`Batch::commit`], and
    /// Git writes them all in the commit. Returns, for each bundle in order, the digest of
    /// the manifest [`Store::manifest_digest`] will name it by, where the store tells one.
    async fn add(&mut self, bundles: Vec<SignedBundle>) -> Result<Vec<Option<Digest>>, StoreError>;
    /// Makes every bundle added the newest version of its cluster, as one
    /// [`Store::publish`] of them all would.
    async fn commit(self: Box<Self>) -> Result<(), StoreError>;
}

/// The batch of a store that writes everything at once.
struct Kept<'s, S: ?Sized> {
    store: &'s S,
    meta: PublishMeta,
    bundles: Vec<SignedBundle>,
}

#[async_trait]
impl<S: Store + ?Sized> Batch for Kept<'_, S> {
    async fn add(&mut self, bundles: Vec<SignedBundle>) -> Result<Vec<Option<Digest>>, StoreError> {
        let named = vec![None; bundles.len()];
        self.bundles.extend(bundles);
        Ok(named)
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        if self.bundles.is_empty() {
            return Ok(());
        }
        self.store.publish(&self.bundles, &self.meta).await
    }
}

/// Raw access to the OCI artifacts of an OCI store (registry, layout, archive), for
/// copying them between stores byte for byte (the mirror). Git has no such form.
#[async_trait]
pub trait OciStore: Store {
    /// The manifest tagged `tag` (`latest` or `v<version>`) in `cluster`'s repository.
    async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<oci::RawManifest, StoreError>;
    /// A blob of `cluster`'s repository, refused over `cap` and checked against `d`.
    async fn blob(&self, cluster: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError>;
    /// Whether `cluster`'s repository holds a blob.
    async fn has_blob(&self, cluster: &ClusterId, digest: &airlock_bundle::Digest) -> Result<bool, StoreError>;
    /// Writes an artifact as `v<version>` and `latest` of `cluster`. Returns the blob bytes
    /// actually written (blobs already present are not).
    async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &oci::Artifact) -> Result<u64, StoreError>;
}

/// Why [`fetch_verified`] produced no bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{store}: bundle for {cluster} rejected: {source}")]
    Rejected { store: String, cluster: String, source: VerifyError },
}

/// What [`fetch_verified`] found.
#[derive(Debug)]
pub enum Fetch {
    /// The same version and content as last applied: no content was fetched.
    AlreadyApplied(airlock_bundle::VerifiedEnvelope),
    /// A new bundle, verified in full.
    New(VerifiedBundle),
}

/// Fetches and verifies the newest bundle for `expect.cluster` (spec section 8): the
/// envelope first, then, unless it was applied already, every part.
pub async fn fetch_verified(store: &dyn Store, expect: &Expectation<'_>, limits: &Limits) -> Result<Fetch, FetchError> {
    let fetched = fetch_envelope(store, expect.cluster, limits).await?;
    verify_fetched(store, &fetched, expect, limits).await
}

/// The newest envelope for `cluster`, not yet verified.
pub async fn fetch_envelope(store: &dyn Store, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, FetchError> {
    match store.fetch_envelope(cluster, limits).await {
        // spec 8.1: an oversized envelope is refused, like any other bad envelope.
        Err(StoreError::EnvelopeTooLarge { limit, .. }) => Err(FetchError::Rejected {
            store: store.describe(),
            cluster: cluster.to_string(),
            source: VerifyError::Envelope(EnvelopeError::TooLarge { limit }),
        }),
        other => Ok(other?),
    }
}

/// [`fetch_verified`] from steps 2 on, for an envelope [`fetch_envelope`] returned.
pub async fn verify_fetched(store: &dyn Store, fetched: &Fetched, expect: &Expectation<'_>, limits: &Limits) -> Result<Fetch, FetchError> {
    let rejected = |source| FetchError::Rejected { store: store.describe(), cluster: expect.cluster.to_string(), source };
    let envelope = verify_envelope(&fetched.envelope, fetched.keyring_chain.as_deref(), expect, limits).map_err(rejected)?;
    if envelope.already_applied() {
        return Ok(Fetch::AlreadyApplied(envelope));
    }
    let profiles = &envelope.predicate().profiles;
    // Parts are fetched a few at a time, so a store across a slow link costs a round trip
    // per few parts rather than per part, and verified in order as they arrive.
    let mut copies = futures::stream::iter(profiles.iter().map(|profile| store.fetch_part(expect.cluster, fetched, profile, limits)))
        .buffered(PARTS_IN_FLIGHT);
    let mut parts = Vec::with_capacity(profiles.len());
    for profile in profiles {
        let copy = copies.next().await.expect("a copy for every profile")?;
        parts.push(envelope.verify_part(&profile.name, copy.transport(), limits).map_err(rejected)?);
    }
    drop(copies);
    envelope.finish(parts, limits).map(Fetch::New).map_err(rejected)
}

/// Part fetches one bundle keeps in flight: each holds at most a part's transport cap
/// (spec 10) in memory until its turn to be verified.
const PARTS_IN_FLIGHT: usize = 4;

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::oci_layout::LayoutStore;
    use airlock_bundle::testkit::Fixture;
    use airlock_bundle::verify::Floor;

    /// A layout whose part fetches take a while, counting how many run at once.
    struct Slow {
        inner: LayoutStore,
        now: AtomicUsize,
        most: AtomicUsize,
    }

    #[async_trait]
    impl Store for Slow {
        fn describe(&self) -> String {
            self.inner.describe()
        }
        async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
            self.inner.fetch_envelope(cluster, limits).await
        }
        async fn fetch_part(&self, c: &ClusterId, f: &Fetched, p: &ProfileEntry, l: &Limits) -> Result<PartCopy, StoreError> {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            self.inner.fetch_part(c, f, p, l).await
        }
        async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
            self.inner.publish(bundles, meta).await
        }
        async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
            self.inner.clusters(limits).await
        }
    }

    #[tokio::test]
    async fn fetches_a_few_parts_at_once_and_verifies_every_one() {
        let tmp = tempfile::tempdir().unwrap();
        let fixture = Fixture::new(1);
        let files = (0..9)
            .map(|i| {
                (format!("ClusterProfile.p{i}/Namespace.n{i}.yaml"), format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n{i}\n"))
            })
            .map(|(path, text)| (path, text.into_bytes()));
        let inner = LayoutStore::open(tmp.path()).unwrap();
        inner.publish(&[fixture.signed(1, files.collect())], &PublishMeta::default()).await.unwrap();
        let store = Slow { inner, now: AtomicUsize::new(0), most: AtomicUsize::new(0) };
        let Fetch::New(bundle) = fetch_verified(&store, &fixture.expect(&Floor::default()), &Limits::SPEC).await.unwrap() else {
            panic!("a first fetch finds a new bundle")
        };
        assert_eq!(bundle.bundle().files().count(), 9);
        assert_eq!(store.most.load(Ordering::SeqCst), PARTS_IN_FLIGHT);
    }
}
