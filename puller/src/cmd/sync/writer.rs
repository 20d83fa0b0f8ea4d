//! Who may write in a run of `sync`: the Lease it takes before it writes, the state read
//! again under it ([`Writer::take`]), and what abandons the work once it started
//! ([`Stopped`]: asked to stop, or the Lease lost). Entry point: [`Writer`].

use airlock_bundle::Digest;
use airlock_bundle::vocabulary::CLUSTER_ANNOTATION;
use airlock_cli::lease::{self, HeldLease, LeaseConfig, LeaseError};
use tokio::sync::watch;

use super::state::names;
use crate::config::SyncSettings;
use crate::kept::meta::MANAGER;
use crate::kept::state::State;
use crate::kept::state_store::StateStore;
use crate::reports::failure::Failure;

/// The Lease `airlock-puller-<cluster name>` in the state namespace, which keeps two
/// pullers of one cluster from writing at once.
pub(super) fn lease_config(settings: &SyncSettings) -> LeaseConfig {
    LeaseConfig {
        namespace: settings.state_namespace.clone(),
        name: names(settings).lease,
        identity: lease::identity(),
        duration: settings.lease_duration,
        manager: MANAGER,
        labels: Default::default(),
        annotations: [(CLUSTER_ANNOTATION.to_string(), settings.cluster.to_string())].into(),
    }
}

/// Whether this run holds the Lease, or was turned away by another holder.
pub(super) struct Writer {
    pub(super) held: Option<HeldLease>,
    pub(super) turned_away: bool,
}

/// What a run that took the Lease finds in the state Secret.
pub(super) enum Taken {
    /// The applied version the run first read; the state as read again, which the
    /// state's write then compares with.
    Unchanged(Box<Option<State>>),
    /// Another writer recorded this applied version and digest in between.
    Changed(Option<(u64, Digest)>),
}

impl Writer {
    /// Takes the Lease (failing at once when another puller holds it: the next scheduled
    /// run tries again), then reads the state again and compares it with `read`, the
    /// state this run decided on: only an unchanged one may be acted on.
    pub(super) async fn take(
        &mut self,
        settings: &SyncSettings,
        client: &kube::Client,
        state_store: &mut StateStore,
        read: Option<&State>,
    ) -> Result<Taken, Failure> {
        match lease_config(settings).try_acquire(client).await {
            Ok(held) => self.held = Some(held),
            Err(e) => {
                self.turned_away = matches!(e, LeaseError::Held { .. });
                return Err(e.into());
            }
        }
        let fresh = state_store.read().await?;
        Ok(match applied(fresh.as_ref()) {
            same if same == applied(read) => Taken::Unchanged(Box::new(fresh)),
            other => Taken::Changed(other),
        })
    }

    /// What abandons the work from now on: `stop`, and losing the Lease if one is held.
    pub(super) fn stopped(&self, stop: &watch::Receiver<bool>) -> Stopped {
        // Without a Lease there is none to lose: a receiver whose sender is gone never fires.
        let lost = self.held.as_ref().map_or_else(|| watch::channel(false).1, HeldLease::lost);
        Stopped { stop: stop.clone(), lost }
    }
}

/// The applied version and digest a state records.
pub(super) fn applied(state: Option<&State>) -> Option<(u64, Digest)> {
    state.map(|s| (s.version, s.digest))
}

/// The two reasons to abandon a run: asked to stop, or the Lease was lost.
pub(super) struct Stopped {
    stop: watch::Receiver<bool>,
    lost: watch::Receiver<bool>,
}

impl Stopped {
    /// Runs `work` unless a reason to stop comes first. Dropping the engine's future
    /// mid-apply is safe for the same reason a crash is: no state gets written.
    pub(super) async fn guard<T>(&self, work: impl Future<Output = T>) -> Result<T, Failure> {
        let (mut stop, mut lost) = (self.stop.clone(), self.lost.clone());
        tokio::select! {
            out = work => Ok(out),
            _ = became_true(&mut stop) => Err(Failure::Stopped),
            _ = became_true(&mut lost) => Err(Failure::LeaseLost),
        }
    }
}

/// Resolves once the flag is true; never, if its sender went away without setting it.
async fn became_true(flag: &mut watch::Receiver<bool>) {
    if flag.wait_for(|v| *v).await.is_err() {
        std::future::pending::<()>().await;
    }
}
