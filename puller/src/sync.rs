//! One sync run (issue 4, steps 1 and 6): Lease → state → fetch and verify → policy and
//! apply (the engine) → state, and the report of it all.
//!
//! The state is written only after the engine applied everything without a failure, so
//! a puller killed mid-apply (OOM, node drain, SIGKILL) has written nothing: the next run
//! finds the previous state, verifies the same bundle again as new, re-applies every
//! object (server-side apply is idempotent) and prunes by the previous inventory, which
//! converges. A run that loses its Lease or is asked to stop abandons the apply the same
//! way. This module does not parse manifests or talk to stores itself.

use airlock::bundle::{Floor, VerifiedEnvelope};
use airlock::cli::lease::{self, HeldLease, LeaseConfig};
use airlock::store::Fetch;
use jiff::Timestamp;
use tokio::sync::watch;

use crate::config::SyncSettings;
use crate::engine::{self, InventoryEntry, Outcome};
use crate::failure::Failure;
use crate::own_objects::{ANNOTATION_CLUSTER, MANAGER};
use crate::report::{self, Report, RunResult};
use crate::source;
use crate::state::{State, StateStore};

/// Prefixes of the puller's objects, followed by the cluster name.
pub const STATE_PREFIX: &str = "airlock-state-";
pub const LEASE_PREFIX: &str = "airlock-puller-";
pub const REPORT_PREFIX: &str = "airlock-report-";

/// Runs one sync and reports on it. `stop` turning true abandons the run. The report is
/// kept in the cluster by the Lease holder only: a puller turned away by the Lease did
/// nothing, and must not overwrite the holder's report.
pub async fn sync(settings: &SyncSettings, client: &kube::Client, stop: watch::Receiver<bool>) -> Report {
    let mut report = Report::start(&settings.cluster);
    report.kubernetes_version = client.apiserver_version().await.ok().map(|v| v.git_version);
    // Fail fast when another puller holds it: the next scheduled run tries again.
    let lease = match lease_config(settings).try_acquire(client).await {
        Ok(lease) => lease,
        Err(e) => {
            report.finish(Err(e.into()));
            return report;
        }
    };
    let result = apply(settings, client, &lease, stop, &mut report).await;
    report.finish(result);
    let name = settings.object_name(REPORT_PREFIX);
    // The in-cluster copy is a convenience; the report files are the proof that travels.
    if let Err(e) = report::write_to_cluster(&report, client, &settings.state_namespace, &name).await {
        tracing::warn!("report not kept in the cluster: {e:#}");
    }
    lease.release().await;
    report
}

/// The Lease `airlock-puller-<cluster name>` in the state namespace, which keeps two
/// pullers of one cluster from syncing at once.
fn lease_config(settings: &SyncSettings) -> LeaseConfig {
    LeaseConfig {
        namespace: settings.state_namespace.clone(),
        name: settings.object_name(LEASE_PREFIX),
        identity: lease::identity(),
        duration: settings.lease_duration,
        manager: MANAGER,
        annotations: [(ANNOTATION_CLUSTER.to_string(), settings.cluster.to_string())].into(),
    }
}

async fn apply(
    settings: &SyncSettings,
    client: &kube::Client,
    lease: &HeldLease,
    stop: watch::Receiver<bool>,
    report: &mut Report,
) -> Result<RunResult, Failure> {
    let secret = settings.object_name(STATE_PREFIX);
    let (mut state_store, state) =
        StateStore::load(client, &settings.state_namespace, &secret, &settings.cluster).await?;
    if state.is_none() {
        tracing::warn!(
            secret = %format!("{}/{secret}", settings.state_namespace),
            "no state Secret (a first run, or it was deleted): starting from an empty floor; objects an earlier \
             run applied are not in the inventory and will not be pruned"
        );
    }
    report.applied_version = state.as_ref().map(|s| s.version);
    report.applied_digest = state.as_ref().map(|s| s.digest);
    let keyring = source::trusted_keyring(&settings.keyring, state.as_ref())?;
    let floor = state.as_ref().map(State::floor).unwrap_or_default();
    let previous = state.as_ref().map_or(&[][..], |s| &s.inventory[..]);
    let store = source::open(&settings.source).await?;
    let stopped = Stopped { stop, lost: lease.lost() };

    match source::fetch(&*store, &settings.cluster, &keyring, &floor).await? {
        Fetch::AlreadyApplied(envelope) => {
            report.saw(&envelope);
            if !source::wants_drift_detection(&envelope) {
                return Ok(RunResult::UpToDate);
            }
            let bundle = source::fetch_again(&*store, &settings.cluster, &keyring, &floor, &envelope).await?;
            let engine_settings = settings.engine(bundle.predicate().watch_namespaces.as_deref());
            let desired = engine::desired(&bundle, &engine_settings)?;
            let outcome = stopped.guard(engine::correct_drift(client, desired, previous, &engine_settings)).await??;
            report.record(&outcome, true);
            check(&outcome)?;
            // The state stays as it is: drift correction re-applies the manifests of the
            // version already recorded, so the inventory it would record is the same.
            Ok(if settings.dry_run { RunResult::DryRun } else { RunResult::UpToDate })
        }
        Fetch::New(bundle) => {
            report.saw(bundle.envelope());
            let engine_settings = settings.engine(bundle.predicate().watch_namespaces.as_deref());
            let desired = engine::desired(&bundle, &engine_settings)?;
            let outcome = stopped.guard(engine::sync(client, desired, previous, &engine_settings)).await??;
            report.record(&outcome, false);
            check(&outcome)?;
            if settings.dry_run {
                return Ok(RunResult::DryRun);
            }
            if !lease.held() {
                return Err(Failure::Error("lost the lease during the apply; nothing was recorded".into()));
            }
            let new_state = applied_state(settings, bundle.envelope(), &floor, outcome.inventory);
            state_store.save(&new_state).await?;
            report.applied_version = Some(new_state.version);
            report.applied_digest = Some(new_state.digest);
            Ok(RunResult::Applied)
        }
    }
}

/// What the state says once `envelope`'s bundle is fully applied.
fn applied_state(
    settings: &SyncSettings,
    envelope: &VerifiedEnvelope,
    floor: &Floor,
    inventory: Vec<InventoryEntry>,
) -> State {
    let p = envelope.predicate();
    // Only a keyring that rotation moved past the local file is worth keeping.
    let keyring = (envelope.keyring().version() > settings.keyring.version()).then(|| {
        let json = String::from_utf8(envelope.keyring().to_json()).expect("keyring JSON is UTF-8");
        serde_json::value::RawValue::from_string(json).expect("keyring JSON is JSON")
    });
    State {
        cluster: settings.cluster.to_string(),
        version: p.version,
        digest: envelope.digest(),
        highest_issued_at: floor.highest_issued_at.map_or(p.issued_at, |h| h.max(p.issued_at)),
        keyring,
        inventory,
        applied_at: Timestamp::now(),
    }
}

/// A run whose objects did not all apply is an error, and records nothing.
fn check(outcome: &Outcome) -> Result<(), Failure> {
    if !outcome.failed() {
        return Ok(());
    }
    let failed: Vec<String> =
        outcome.results.iter().filter(|r| r.action == engine::Action::Failed).map(|r| r.id.to_string()).collect();
    Err(Failure::Error(format!("{} object(s) failed to apply: {}", failed.len(), failed.join(", "))))
}

/// The two reasons to abandon a run: asked to stop, or the Lease was lost.
struct Stopped {
    stop: watch::Receiver<bool>,
    lost: watch::Receiver<bool>,
}

impl Stopped {
    /// Runs `work` unless a reason to stop comes first. Dropping the engine's future
    /// mid-apply is safe for the same reason a crash is: no state gets written.
    async fn guard<T>(&self, work: impl Future<Output = T>) -> Result<T, Failure> {
        let (mut stop, mut lost) = (self.stop.clone(), self.lost.clone());
        tokio::select! {
            out = work => Ok(out),
            _ = became_true(&mut stop) => Err(Failure::Error("stopped by a signal during the apply; nothing was recorded".into())),
            _ = became_true(&mut lost) => Err(Failure::Error("lost the lease during the apply; nothing was recorded".into())),
        }
    }
}

/// Resolves once the flag is true; never, if its sender went away without setting it.
async fn became_true(flag: &mut watch::Receiver<bool>) {
    if flag.wait_for(|v| *v).await.is_err() {
        std::future::pending::<()>().await;
    }
}
