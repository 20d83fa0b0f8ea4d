//! What a few tests must have to themselves while the rest of the test process runs in
//! parallel with them. Everything else a test touches carries names of its own, so only
//! state that cannot be named per test is guarded here, and only within one test process:
//! two runs on one set of services at once can still clash.
//!
//! The CRDs of the management apiserver are such state: most tests that use it apply
//! Airlock's own Sveltos CRDs of `hack/crds/` and create profiles under them, while the
//! documentation examples replace them with the real, larger Sveltos CRDs, apply profiles
//! whose selectors match other tests' clusters, and put the small CRDs back afterwards.
//! Applying `hack/crds/` meanwhile prunes the fields only the real CRDs know from the
//! examples' profiles. Entry points: [`airlock_crds`] and [`real_sveltos_crds`].

use std::sync::{Condvar, Mutex, MutexGuard};

/// Who holds the management apiserver's CRDs.
struct Holders {
    /// Tests holding [`AirlockCrds`].
    shared: usize,
    /// Whether a test holds [`RealSveltosCrds`].
    exclusive: bool,
}

static HOLDERS: Mutex<Holders> = Mutex::new(Holders { shared: 0, exclusive: false });
static RELEASED: Condvar = Condvar::new();

fn holders() -> MutexGuard<'static, Holders> {
    // The counts stay right when a test panicked: the guards release in their Drop.
    HOLDERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Held by a test that relies on `hack/crds/` on the management apiserver, for as long as
/// it uses that apiserver.
#[must_use = "the CRDs are guarded only while the guard lives"]
pub struct AirlockCrds(());

/// Waits while the real Sveltos CRDs are in place; many tests hold this at once. A test may
/// take it more than once: it never waits for a test that waits for it.
pub fn airlock_crds() -> AirlockCrds {
    let mut holders = RELEASED.wait_while(holders(), |h| h.exclusive).unwrap_or_else(|poisoned| poisoned.into_inner());
    holders.shared += 1;
    AirlockCrds(())
}

impl Drop for AirlockCrds {
    fn drop(&mut self) {
        holders().shared -= 1;
        RELEASED.notify_all();
    }
}

/// Held by the test that replaces `hack/crds/` with the real Sveltos CRDs, until it has put
/// them back.
#[must_use = "the CRDs are guarded only while the guard lives"]
pub struct RealSveltosCrds(());

/// Waits until no test holds [`AirlockCrds`]. Tests that ask for theirs meanwhile go first,
/// so this may wait until the last of them is done.
pub fn real_sveltos_crds() -> RealSveltosCrds {
    let mut holders = RELEASED.wait_while(holders(), |h| h.exclusive || h.shared > 0).unwrap_or_else(|poisoned| poisoned.into_inner());
    holders.exclusive = true;
    RealSveltosCrds(())
}

impl Drop for RealSveltosCrds {
    fn drop(&mut self) {
        holders().exclusive = false;
        RELEASED.notify_all();
    }
}

/// Held by a test whose management objects every cluster evaluates on the one managed
/// apiserver all sites share (a Classifier, an EventSource): what it deploys when its
/// objects match would reach another such test's cluster too, which the puller then
/// refuses to take over.
/// An async lock, as the tests that hold it await while they do.
pub async fn shared_evaluations() -> tokio::sync::MutexGuard<'static, ()> {
    static EVALUATIONS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    EVALUATIONS.lock().await
}
