//! [`fetch_verified`]: a store joined to `airlock_bundle::verify` in the order of spec
//! section 8, the envelope first and content only when it is needed, parts fetched a few at
//! a time and verified in order. The store moves bytes; verification judges them.

use futures::StreamExt;

use crate::error::StoreError;
use crate::fetched::Fetched;
use crate::store::Store;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::envelope::EnvelopeError;
use airlock_bundle::keyring::TrustError;
use airlock_bundle::limits::Limits;
use airlock_bundle::verify::{Expectation, VerifiedBundle, VerifyError, verify_envelope};

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
    // spec 8.1 and 8.3: an oversized envelope or chain is refused, like any other bad one.
    store.fetch_envelope(cluster, limits).await.map_err(|e| oversized(store, cluster, e))
}

/// A store error, or the rejection an envelope or keyring chain over its cap is.
fn oversized(store: &dyn Store, cluster: &ClusterId, error: StoreError) -> FetchError {
    let source = match error {
        StoreError::EnvelopeTooLarge { limit, .. } => VerifyError::Envelope(EnvelopeError::TooLarge { limit }),
        StoreError::KeyringChainTooLarge { limit, .. } => VerifyError::KeyringChain(TrustError::Chain(format!("over {limit} bytes"))),
        other => return other.into(),
    };
    FetchError::Rejected { store: store.describe(), cluster: cluster.to_string(), source }
}

/// [`fetch_envelope`], unless the store says the manifest `known` still names the newest
/// bundle (`Ok(None)`, spec 8, its last paragraph).
pub async fn fetch_envelope_unless(
    store: &dyn Store,
    cluster: &ClusterId,
    known: &airlock_bundle::Digest,
    limits: &Limits,
) -> Result<Option<Fetched>, FetchError> {
    store.fetch_envelope_unless(cluster, known, limits).await.map_err(|e| oversized(store, cluster, e))
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

    use async_trait::async_trait;

    use super::*;
    use crate::fetched::PartCopy;
    use crate::meta::PublishMeta;
    use crate::oci_layout::LayoutStore;
    use airlock_bundle::SignedBundle;
    use airlock_bundle::statement::ProfileEntry;
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
