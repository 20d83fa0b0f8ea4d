//! `airlock-puller sync`, one run: state → fetch and verify → Lease → policy and apply (the
//! engine) → state, and the report of it all, kept in the cluster and sent to the store
//! when it is due (`report_push`) ([`once`]; `run` repeats [`sync`]).
//!
//! The Lease is taken only by a run that will write: one with a new bundle to apply or
//! drift to correct (not under `--dry-run`). A run that finds its bundle applied and
//! nothing drifted reads the state Secret and, to compare, the kept report: two requests
//! of a size that does not grow with the bundle, and no write (`last_report`). A run that
//! takes the Lease reads the state again under it ([`Writer::take`]), since another puller
//! may have written it between the first read and the Lease; only an apply reads the
//! inventory (`state_store`), which a drift correction does not record.
//!
//! A run that finds no state Secret takes its rollback floor from the kept report
//! (`state::floor_without_state`), so a deleted Secret does not open the door to an older bundle;
//! only when both are gone does it start from an empty floor. That read of the kept
//! report is the one the report is kept against at the end of the run.
//!
//! The reloader (spec 5.10) runs after the apply or the drift check: it reads what the
//! workloads of reloader parts mount, restarts those whose digest moved, and records the
//! digests in the state; an unchanged run of a reloader bundle fetches its content for
//! that, as a drift check does, and takes the Lease only when a digest moved.
//!
//! While the bundle's active window is closed (spec 5.6) a run verifies and stops there:
//! no Lease, no apply, no prune, no drift correction, result `deferred`.
//!
//! A final bundle (spec 2.5.5) is applied like any other: it holds nothing, so the engine
//! prunes the whole inventory by the ownership rules, and the state records the cluster
//! decommissioned. Every later run reads the state, says so (`decommissioned`) and stops
//! before fetching anything.
//!
//! The state is written only after the engine applied everything without a failure, so
//! a puller killed mid-apply (OOM, node drain, SIGKILL) has written nothing: the next run
//! finds the previous state, verifies the same bundle again as new, re-applies every
//! object (server-side apply is idempotent) and prunes by the previous inventory, which
//! converges. A run that loses its Lease or is asked to stop abandons the apply the same
//! way. The one write a failed run makes is the count of runs in a row that failed a part
//! with a `maxConsecutiveFailures` (spec 5.7), into the state it read, whose applied
//! version and inventory stay; a part whose count reached its limit is held back from
//! then on, until its content changes (`kept::failures`). This module does not parse
//! manifests or talk to stores itself.

mod checks;
mod decommissioned;
mod state;
pub(crate) mod tenants;
mod writer;

use airlock_bundle::Floor;
use airlock_cli::lease::HeldLease;
use airlock_cli::{KubeArgs, exit};
use jiff::Timestamp;
use tokio::sync::watch;

use crate::config::{SyncArgs, SyncSettings};
use crate::engine::checks::Checker;
use crate::engine::{self, Outcome};
use crate::identities::Identities;
use crate::kept::delete_checks;
use crate::kept::failures;
use crate::kept::state::State;
use crate::kept::state_store::StateStore;
use crate::reports::failure::Failure;
use crate::reports::last_report::{self, KeptRead};
use crate::reports::report::{Report, RunReport, RunResult, summary};
use crate::reports::{push as report_push, writer as report_writer};
use crate::source::{self, Found};
use crate::trusted::Trusted;
use crate::window::WindowState;
pub(crate) use state::names;
use state::{applied_state, floor_without_state, keep_adopted, record_failures};
use writer::{Taken, Writer, applied};

/// What `sync` leaves for the terminal: the line for stdout (only after a success: a
/// failure was logged) and the exit code.
pub struct Synced {
    pub summary: Option<String>,
    pub code: u8,
}

/// The `sync` command: checks the flags, then runs one sync and writes its report. Only
/// flags that cannot be used fail it; what the run met is in the report.
pub async fn once(args: &SyncArgs, kube: &KubeArgs, stop: watch::Receiver<bool>) -> Result<Synced, Failure> {
    let settings = &args.check(kube)?;
    let report = match settings.kube.client().await {
        Ok(client) => sync(settings, &client, stop).await,
        Err(e) => {
            let mut report = Report::start(&settings.cluster);
            report.finish(Err(Failure::KubeClient(e.to_string())));
            report
        }
    };
    let written = report_writer::write(&report, settings);
    let code = exit_code(report.result);
    let summary = report.error.is_none().then(|| summary(&report));
    // Proof of what was applied is part of the job: a run whose report file is missing failed.
    Ok(Synced { summary, code: if code == exit::OK && written.is_err() { exit::ERROR } else { code } })
}

/// The documented exit code of a run that ended with `result`.
fn exit_code(result: RunResult) -> u8 {
    match result {
        RunResult::Applied | RunResult::UpToDate | RunResult::DryRun | RunResult::Deferred => exit::OK,
        RunResult::Rejected => exit::REJECTED,
        RunResult::Error => exit::ERROR,
    }
}

/// Runs one sync and reports on it. `stop` turning true abandons the run. A puller turned
/// away by the Lease did nothing, and does not touch the kept report.
pub async fn sync(settings: &SyncSettings, client: &kube::Client, stop: watch::Receiver<bool>) -> Report {
    let mut report = Report::start(&settings.cluster);
    let mut writer = Writer { held: None, turned_away: false };
    let mut kept = None;
    let mut definitions = Vec::new();
    let result = run(settings, client, &mut writer, stop, &mut report, &mut kept, &mut definitions).await;
    // Evaluating only reads: every run that verified its bundle and did not fail does it,
    // a deferred or dry run included, so the management side hears of the cluster as it is.
    if result.as_ref().is_ok_and(|r| *r != RunResult::Rejected) && !definitions.is_empty() {
        report.evaluations = engine::evaluate::evaluate(client, &definitions).await;
    }
    report.finish(result);
    let names = names(settings);
    let mut found = None;
    if !writer.turned_away {
        let holder = writer.held.is_some();
        // The in-cluster copy is a convenience; the report files are the proof that travels.
        match last_report::keep(&mut report, client, &names, holder, kept).await {
            Ok(now) => found = Some(now),
            Err(e) => tracing::warn!("report not kept in the cluster: {e}"),
        }
    }
    if let Some(lease) = writer.held {
        lease.release().await;
    }
    if !writer.turned_away {
        report_push::send(settings, client, &names, &report, found).await;
    }
    report
}

/// `kept`: the kept report, when this run read it for its floor. `definitions`: what the
/// bundle it verified asks it to evaluate (spec 5.14).
async fn run(
    settings: &SyncSettings,
    client: &kube::Client,
    writer: &mut Writer,
    stop: watch::Receiver<bool>,
    report: &mut Report,
    kept: &mut Option<KeptRead>,
    definitions: &mut Vec<airlock_bundle::statement::Evaluation>,
) -> Result<RunResult, Failure> {
    let (mut state_store, state) = StateStore::load(client, &names(settings), &settings.cluster).await?;
    (report.applied_version, report.applied_digest) = applied(state.as_ref()).unzip();
    if let Some(at) = state.as_ref().and_then(|s| s.decommissioned) {
        report.decommissioned = Some(at);
        decommissioned::say(settings, at);
        return Ok(RunResult::UpToDate);
    }
    let trusted = &Trusted::derive(&settings.keyring, state.as_ref(), settings.max_validity)?;
    let identities = Identities::derive(&settings.identities, state.as_ref());
    let open = Some(identities.all());
    let floor = match &state {
        Some(_) => trusted.floor(state.as_ref()),
        None => floor_without_state(settings, report, kept.insert(KeptRead::read(client, &names(settings)).await?)),
    };
    let store = source::open(&settings.source).await?;

    let recorded = state.as_ref().and_then(|s| s.verified.as_deref());
    let found = match source::fetch(&*store, &settings.cluster, trusted, &floor, recorded, open).await? {
        // The kept report's own version, with no state: applied again as new, which
        // writes the state, and its inventory, again.
        Found::Applied(applied) if state.is_none() => {
            let (bundle, record) = source::fetch_again(&*store, &settings.cluster, trusted, &floor, &applied, open).await?;
            Found::New(Box::new(bundle), record)
        }
        found => found,
    };
    match found {
        Found::Applied(applied) => {
            definitions.clone_from(&applied.evaluations);
            report.bundle = Some(applied.seen.clone());
            report.profiles = applied.profiles.clone();
            if deferred(applied.active_window.as_ref(), &floor) {
                return Ok(RunResult::Deferred);
            }
            if !applied.drift_detection && !applied.reloader {
                return Ok(RunResult::UpToDate);
            }
            let (bundle, _) = source::fetch_again(&*store, &settings.cluster, trusted, &floor, &applied, open).await?;
            let mut engine_settings = settings.engine(bundle.predicate());
            engine_settings.decrypts = identities.decrypts();
            engine_settings.held_back = failures::held_back(state.as_ref().map_or(&[][..], |s| &s.failures), &bundle.predicate().profiles);
            let desired = engine::desired(&bundle, &engine_settings)?;
            engine_settings.tenants = tenants::connect(settings, &tenants::by_part(&bundle.predicate().profiles, &[])).await?;
            drop(bundle);
            let workloads = engine::workloads(&desired, &engine_settings);
            let mut state = state;
            if applied.drift_detection {
                let known = state.as_ref().map_or(&[][..], |s| &s.kinds[..]);
                let check = writer.stopped(&stop).guard(engine::check_drift(client, desired, known, &engine_settings)).await??;
                if check.found() > 0 && !settings.dry_run {
                    match writer.take(settings, client, &mut state_store, state.as_ref()).await? {
                        Taken::Unchanged(fresh) => state = *fresh,
                        Taken::Changed(_) => return Err(Failure::StateChangedDuringDriftCheck),
                    }
                }
                // The state stays as it is: drift correction re-applies the manifests of
                // the version already recorded, so the inventory it would record is the
                // same, and the one stored need not be read for it.
                let outcome = writer.stopped(&stop).guard(check.correct(&[], &engine_settings)).await??;
                report.record(&outcome, true);
                check_outcome(&outcome)?;
            }
            let recorded = state.as_ref().map(|s| s.mounted.clone()).unwrap_or_default();
            let check = writer.stopped(&stop).guard(engine::check_reload(client, &engine_settings.tenants, workloads, &recorded)).await??;
            let moved = check.mounted() != recorded;
            if moved && !settings.dry_run && writer.held.is_none() {
                match writer.take(settings, client, &mut state_store, state.as_ref()).await? {
                    Taken::Unchanged(fresh) => state = *fresh,
                    Taken::Changed(_) => return Err(Failure::StateChangedDuringReloadCheck),
                }
            }
            let (outcome, mounted) = writer.stopped(&stop).guard(check.restart(settings.dry_run)).await?;
            report.record(&outcome, false);
            if moved
                && !settings.dry_run
                && let Some(state) = state
            {
                state_store.record(&State { mounted, ..state }).await?;
            }
            check_outcome(&outcome)?;
            Ok(if settings.dry_run { RunResult::DryRun } else { RunResult::UpToDate })
        }
        Found::New(bundle, record) => {
            report.saw(bundle.envelope());
            let mut state = state;
            if !settings.dry_run && !bundle.envelope().adopted_updates().is_empty() {
                state = keep_adopted(&mut state_store, state, trusted, bundle.envelope()).await?;
            }
            let mut engine_settings = settings.engine(bundle.predicate());
            engine_settings.decrypts = identities.decrypts();
            // Parsed, and its settings checked, even while the window is closed: a bundle
            // that would be refused is refused now, not when the window opens.
            let desired = engine::desired(&bundle, &engine_settings)?;
            let envelope = bundle.envelope().clone();
            definitions.clone_from(&envelope.predicate().settings.evaluations);
            // The manifests are parsed: the bundle's bytes need not wait for the apply.
            drop(bundle);
            if deferred(envelope.predicate().settings.active_window.as_ref(), &floor) {
                return Ok(RunResult::Deferred);
            }
            let bundle = Some((envelope.predicate().version, envelope.digest()));
            if !settings.dry_run {
                state = match writer.take(settings, client, &mut state_store, state.as_ref()).await? {
                    Taken::Unchanged(fresh) => *fresh,
                    Taken::Changed(applied) if applied == bundle => {
                        tracing::info!("another puller applied this bundle meanwhile");
                        (report.applied_version, report.applied_digest) = applied.unzip();
                        return Ok(RunResult::UpToDate);
                    }
                    Taken::Changed(_) => {
                        return Err(Failure::StateChangedBeforeApply);
                    }
                };
            }
            let profiles = &envelope.predicate().profiles;
            let counts = state.as_ref().map(|s| s.failures.clone()).unwrap_or_default();
            engine_settings.held_back = failures::held_back(&counts, profiles);
            let previous = state_store.inventory(state.as_ref()).await?;
            let tenant_parts = tenants::by_part(profiles, &previous);
            engine_settings.tenants = tenants::connect(settings, &tenant_parts).await?;
            let checker = Checker {
                client,
                tenants: &engine_settings.tenants,
                tenant_parts: &tenant_parts,
                cluster_label: engine::cluster_label(&engine_settings.cluster),
                timeout: settings.check_timeout,
                sealed: crate::engine::checks::sealed(&desired),
            };
            let recorded_checks = state.as_ref().map(|s| s.delete_checks.clone()).unwrap_or_default();
            let leaving = delete_checks::leaving(&recorded_checks, profiles);
            let mut failed = Vec::new();
            if !settings.dry_run {
                failed = writer.stopped(&stop).guard(checks::before(&checker, profiles, &leaving, &mut engine_settings.held_back)).await?;
            }
            let workloads = engine::workloads(&desired, &engine_settings);
            let recorded = state.as_ref().map(|s| s.mounted.clone()).unwrap_or_default();
            let releases = engine::releases(&desired, &previous, &engine_settings.held_back);
            let outcome = writer.stopped(&stop).guard(engine::sync(client, desired, &previous, &engine_settings)).await??;
            report.record(&outcome, false);
            let counts = failures::counted(&counts, profiles, &outcome.results);
            if outcome.failed() && !settings.dry_run {
                record_failures(&mut state_store, state, counts.clone()).await;
            }
            check_outcome(&outcome)?;
            if settings.dry_run {
                return Ok(RunResult::DryRun);
            }
            let held_back = &engine_settings.held_back;
            failed.extend(writer.stopped(&stop).guard(checks::after(&checker, profiles, &leaving, held_back, &outcome)).await?);
            if !failed.is_empty() {
                return Err(Failure::ChecksFailed { checks: failed.iter().map(ToString::to_string).collect() });
            }
            if !writer.held.as_ref().is_some_and(HeldLease::held) {
                return Err(Failure::LeaseLost);
            }
            let check = writer.stopped(&stop).guard(engine::check_reload(client, &engine_settings.tenants, workloads, &recorded)).await??;
            let (restarted, mounted) = writer.stopped(&stop).guard(check.restart(false)).await?;
            report.record(&restarted, false);
            let applied = applied_state(settings, trusted, &identities, &envelope, record, &floor, outcome.kinds);
            let decommissioned = applied.decommissioned;
            state_store.save(State { failures: counts, mounted, ..applied }, outcome.inventory).await?;
            (report.applied_version, report.applied_digest) = bundle.unzip();
            report.releases = releases;
            if let Some(at) = decommissioned {
                report.decommissioned = Some(at);
                decommissioned::say(settings, at);
            }
            // A restart that failed keeps its recorded digest, so the next run tries again.
            check_outcome(&restarted)?;
            Ok(RunResult::Applied)
        }
    }
}

/// Whether the bundle's active window keeps this run from changing the cluster.
fn deferred(window: Option<&airlock_bundle::statement::ActiveWindow>, floor: &Floor) -> bool {
    let state = WindowState::of(window, floor, Timestamp::now());
    if let Some(state) = state.as_ref().filter(|_| WindowState::closed(state.as_ref())) {
        tracing::info!("the active window is {state}: the bundle is verified, nothing is changed");
    }
    WindowState::closed(state.as_ref())
}

/// A run whose objects did not all apply is an error, and records nothing.
fn check_outcome(outcome: &Outcome) -> Result<(), Failure> {
    if !outcome.failed() {
        return Ok(());
    }
    let objects = outcome.results.iter().filter(|r| r.action == engine::Action::Failed).map(|r| r.id.clone()).collect();
    Err(Failure::ObjectsFailed { objects })
}
