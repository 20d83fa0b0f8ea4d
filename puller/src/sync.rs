//! One sync run (issue 4, steps 1 and 6): state → fetch and verify → Lease → policy and
//! apply (the engine) → state, and the report of it all.
//!
//! The Lease is taken only by a run that will write: one with a new bundle to apply or
//! drift to correct (not under `--dry-run`). A run that finds its bundle applied and
//! nothing drifted reads the state Secret and, to compare, the kept report: two requests,
//! and no write (`kept_report`). A run that takes the Lease reads the state again under
//! it, since another puller may have written it between the first read and the Lease.
//!
//! A run that finds no state Secret takes its rollback floor from the kept report
//! (`floor_without_state`), one more request, so a deleted Secret does not open the door
//! to an older bundle; only when both are gone does it start from an empty floor.
//!
//! The state is written only after the engine applied everything without a failure, so
//! a puller killed mid-apply (OOM, node drain, SIGKILL) has written nothing: the next run
//! finds the previous state, verifies the same bundle again as new, re-applies every
//! object (server-side apply is idempotent) and prunes by the previous inventory, which
//! converges. A run that loses its Lease or is asked to stop abandons the apply the same
//! way. This module does not parse manifests or talk to stores itself.

use airlock::bundle::{Floor, VerifiedEnvelope};
use airlock::cli::lease::{self, HeldLease, LeaseConfig, LeaseError};
use airlock::store::Fetch;
use jiff::Timestamp;
use tokio::sync::watch;

use crate::config::SyncSettings;
use crate::engine::{self, InventoryEntry, KnownKind, Outcome};
use crate::failure::Failure;
use crate::kept_report;
use crate::own_objects::{ANNOTATION_CLUSTER, MANAGER};
use crate::report::{Report, RunResult};
use crate::source;
use crate::state::{State, StateStore};

/// Prefixes of the puller's objects, followed by the cluster name.
pub const STATE_PREFIX: &str = "airlock-state-";
pub const LEASE_PREFIX: &str = "airlock-puller-";
pub const REPORT_PREFIX: &str = "airlock-report-";

/// Runs one sync and reports on it. `stop` turning true abandons the run. A puller turned
/// away by the Lease did nothing, and does not touch the kept report.
pub async fn sync(settings: &SyncSettings, client: &kube::Client, stop: watch::Receiver<bool>) -> Report {
    let mut report = Report::start(&settings.cluster);
    let mut writer = Writer { held: None, turned_away: false };
    let result = run(settings, client, &mut writer, stop, &mut report).await;
    report.finish(result);
    if !writer.turned_away {
        let name = settings.object_name(REPORT_PREFIX);
        let holder = writer.held.is_some();
        // The in-cluster copy is a convenience; the report files are the proof that travels.
        if let Err(e) = kept_report::keep(&mut report, client, &settings.state_namespace, &name, holder).await {
            tracing::warn!("report not kept in the cluster: {e:#}");
        }
    }
    if let Some(lease) = writer.held {
        lease.release().await;
    }
    report
}

/// The Lease `airlock-puller-<cluster name>` in the state namespace, which keeps two
/// pullers of one cluster from writing at once.
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

/// Whether this run holds the Lease, or was turned away by another holder.
struct Writer {
    held: Option<HeldLease>,
    turned_away: bool,
}

impl Writer {
    /// Takes the Lease (failing at once when another puller holds it: the next scheduled
    /// run tries again), then reads the state again: what this run may act on.
    async fn take(
        &mut self,
        settings: &SyncSettings,
        client: &kube::Client,
        state_store: &mut StateStore,
    ) -> Result<Option<State>, Failure> {
        match lease_config(settings).try_acquire(client).await {
            Ok(held) => self.held = Some(held),
            Err(e) => {
                self.turned_away = matches!(e, LeaseError::Held { .. });
                return Err(e.into());
            }
        }
        Ok(state_store.read().await?)
    }

    /// What abandons the work from now on: `stop`, and losing the Lease if one is held.
    fn stopped(&self, stop: &watch::Receiver<bool>) -> Stopped {
        // Without a Lease there is none to lose: a receiver whose sender is gone never fires.
        let lost = self.held.as_ref().map_or_else(|| watch::channel(false).1, HeldLease::lost);
        Stopped { stop: stop.clone(), lost }
    }
}

/// The applied version and digest a state records.
fn applied(state: Option<&State>) -> Option<(u64, airlock::Digest)> {
    state.map(|s| (s.version, s.digest))
}

async fn run(
    settings: &SyncSettings,
    client: &kube::Client,
    writer: &mut Writer,
    stop: watch::Receiver<bool>,
    report: &mut Report,
) -> Result<RunResult, Failure> {
    let secret = settings.object_name(STATE_PREFIX);
    let (mut state_store, state) =
        StateStore::load(client, &settings.state_namespace, &secret, &settings.cluster).await?;
    report.applied_version = state.as_ref().map(|s| s.version);
    report.applied_digest = state.as_ref().map(|s| s.digest);
    let keyring = source::trusted_keyring(&settings.keyring, state.as_ref())?;
    let floor = match &state {
        Some(state) => state.floor(),
        None => floor_without_state(settings, client, report).await?,
    };
    let store = source::open(&settings.source).await?;

    let fetched = match source::fetch(&*store, &settings.cluster, &keyring, &floor).await? {
        // The kept report's own version, with no state: applied again as new, which
        // writes the state, and its inventory, again.
        Fetch::AlreadyApplied(envelope) if state.is_none() => {
            Fetch::New(source::fetch_again(&*store, &settings.cluster, &keyring, &floor, &envelope).await?)
        }
        fetched => fetched,
    };
    match fetched {
        Fetch::AlreadyApplied(envelope) => {
            report.saw(&envelope);
            if !source::wants_drift_detection(&envelope) {
                return Ok(RunResult::UpToDate);
            }
            let bundle = source::fetch_again(&*store, &settings.cluster, &keyring, &floor, &envelope).await?;
            let engine_settings = settings.engine(bundle.predicate().watch_namespaces.as_deref());
            let desired = engine::desired(&bundle, &engine_settings)?;
            drop(bundle);
            let known = state.as_ref().map_or(&[][..], |s| &s.kinds[..]);
            let check = writer.stopped(&stop).guard(engine::check_drift(client, desired, known, &engine_settings)).await??;
            let mut state = state;
            if check.found() > 0 && !settings.dry_run {
                let fresh = writer.take(settings, client, &mut state_store).await?;
                if applied(fresh.as_ref()) != applied(state.as_ref()) {
                    return Err(Failure::Error(
                        "the state changed during the drift check (another puller?); nothing was corrected, the next \
                         run checks again"
                            .into(),
                    ));
                }
                state = fresh;
            }
            let previous = state.as_ref().map_or(&[][..], |s| &s.inventory[..]);
            let outcome = writer.stopped(&stop).guard(check.correct(previous, &engine_settings)).await??;
            report.record(&outcome, true);
            check_outcome(&outcome)?;
            // The state stays as it is: drift correction re-applies the manifests of the
            // version already recorded, so the inventory it would record is the same.
            Ok(if settings.dry_run { RunResult::DryRun } else { RunResult::UpToDate })
        }
        Fetch::New(bundle) => {
            report.saw(bundle.envelope());
            let engine_settings = settings.engine(bundle.predicate().watch_namespaces.as_deref());
            let desired = engine::desired(&bundle, &engine_settings)?;
            let envelope = bundle.envelope().clone();
            // The manifests are parsed: the bundle's bytes need not wait for the apply.
            drop(bundle);
            let mut state = state;
            if !settings.dry_run {
                let fresh = writer.take(settings, client, &mut state_store).await?;
                if applied(fresh.as_ref()) == Some((envelope.predicate().version, envelope.digest())) {
                    tracing::info!("another puller applied this bundle meanwhile");
                    report.applied_version = Some(envelope.predicate().version);
                    report.applied_digest = Some(envelope.digest());
                    return Ok(RunResult::UpToDate);
                }
                if applied(fresh.as_ref()) != applied(state.as_ref()) {
                    return Err(Failure::Error(
                        "the state changed before the apply (another puller?); nothing was applied, the next run retries"
                            .into(),
                    ));
                }
                state = fresh;
            }
            let previous = state.as_ref().map_or(&[][..], |s| &s.inventory[..]);
            let outcome = writer.stopped(&stop).guard(engine::sync(client, desired, previous, &engine_settings)).await??;
            report.record(&outcome, false);
            check_outcome(&outcome)?;
            if settings.dry_run {
                return Ok(RunResult::DryRun);
            }
            if !writer.held.as_ref().is_some_and(HeldLease::held) {
                return Err(Failure::Error("lost the lease during the apply; nothing was recorded".into()));
            }
            let new_state = applied_state(settings, &envelope, &floor, outcome.inventory, outcome.kinds);
            state_store.save(&new_state).await?;
            report.applied_version = Some(new_state.version);
            report.applied_digest = Some(new_state.digest);
            Ok(RunResult::Applied)
        }
    }
}

/// The floor of a run that found no state Secret: the applied version and digest of the
/// kept report (an older version is then refused as a rollback), else an empty one. The
/// newest `issuedAt` accepted is not in the report; expiry is judged by the clock alone.
async fn floor_without_state(
    settings: &SyncSettings,
    client: &kube::Client,
    report: &mut Report,
) -> Result<Floor, Failure> {
    let secret = format!("{}/{}", settings.state_namespace, settings.object_name(STATE_PREFIX));
    let name = settings.object_name(REPORT_PREFIX);
    let applied = kept_report::applied(client, &settings.state_namespace, &name, &settings.cluster).await?;
    let config_map = format!("{}/{name}", settings.state_namespace);
    match applied {
        Some((version, digest)) => {
            tracing::warn!(
                %secret,
                %config_map,
                "no state Secret (it was deleted?): the rollback floor is version {version} ({digest}), applied as \
                 the kept report ConfigMap says; objects an earlier run applied are not in the inventory and will \
                 not be pruned"
            );
            report.applied_version = Some(version);
            report.applied_digest = Some(digest);
        }
        None => tracing::warn!(
            %secret,
            %config_map,
            "no state Secret (a first run, or it was deleted) and no applied version in the kept report ConfigMap: \
             starting from an empty floor; objects an earlier run applied are not in the inventory and will not be \
             pruned"
        ),
    }
    Ok(Floor { applied, highest_issued_at: None })
}

/// What the state says once `envelope`'s bundle is fully applied.
fn applied_state(
    settings: &SyncSettings,
    envelope: &VerifiedEnvelope,
    floor: &Floor,
    inventory: Vec<InventoryEntry>,
    kinds: Vec<KnownKind>,
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
        kinds,
        applied_at: Timestamp::now(),
    }
}

/// A run whose objects did not all apply is an error, and records nothing.
fn check_outcome(outcome: &Outcome) -> Result<(), Failure> {
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
