//! Sync: decide per object what to send, then run the stages of `order` with a bounded
//! number of requests in flight, then prune. Also the stage runner that drift correction
//! and plan share.
//!
//! A failed object is reported and does not stop independent objects of its stage; but a
//! run with any failure never prunes, so a broken run cannot delete anything.

use std::collections::{HashMap, HashSet};

use airlock_bundle::{StopMatchingBehavior, SyncMode};
use futures::StreamExt;
use serde_json::Value;

use super::compare::{diff, render_changes};
use super::error::{ApiError, EngineError};
use super::kube_api::{Api, Served};
use super::object::{DesiredObject, InventoryEntry, ObjectKey};
use super::order::Class;
use super::outcome::{Action, Finished, ObjectResult};
use super::scope::{self, Target};
use super::settings::Settings;
use super::{drift, prune};

/// What to do with one target.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Step {
    /// Server-side apply (a dry-run one under `Settings::dry_run`).
    Apply,
    /// Re-apply because the live object drifted; the text says how.
    Correct(String),
    /// Server-side dry-run only, reported with a diff (DryRun profiles, plan).
    Preview,
    /// Nothing to send: unchanged since the previous inventory.
    Unchanged,
    /// OneTime and applied before: never touched again; the previous entry stays.
    Keep(InventoryEntry),
}

/// What sync does with an object, given its previous inventory entry. `None` means
/// "compare with the live copy first" (drift detection decides Unchanged or Correct).
pub(super) fn decide(object: &DesiredObject, previous: Option<&InventoryEntry>) -> Option<Step> {
    let unchanged = previous.is_some_and(|p| p.applied_hash == object.hash);
    match (object.sync_mode, previous) {
        (SyncMode::DryRun, _) => Some(Step::Preview),
        (SyncMode::OneTime, Some(previous)) => Some(Step::Keep(previous.clone())),
        (SyncMode::ContinuousWithDriftDetection, _) if unchanged => None,
        _ if unchanged => Some(Step::Unchanged),
        _ => Some(Step::Apply),
    }
}

/// The previous inventory by object key.
pub(super) fn index(previous: &[InventoryEntry]) -> HashMap<ObjectKey, &InventoryEntry> {
    previous.iter().map(|e| (e.id.key(), e)).collect()
}

/// Applies what changed, corrects drift of unchanged drift-detected objects, prunes.
pub(super) async fn sync(
    api: &Api,
    targets: Vec<Target>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Finished, EngineError> {
    let by_key = index(previous);
    let mut work = Vec::with_capacity(targets.len());
    let mut checks = Vec::new();
    for target in targets {
        match decide(&target.object, by_key.get(&target.object.id.key()).copied()) {
            Some(step) => work.push((target, step)),
            None => checks.push(target),
        }
    }
    let drifted = drift::detect(api, &mut checks, settings).await?;
    work.extend(checks.into_iter().zip(drifted).map(|(t, d)| (t, d.map_or(Step::Unchanged, Step::Correct))));

    let selection = prune::select_for(previous, &work, settings);
    let mut run = execute(api, settings, work, &by_key).await?;
    let mut inventory = run.inventory;
    if run.results.iter().any(|r| r.action == Action::Failed) {
        // No pruning after a failure; the inventory keeps what it had.
        inventory.extend(selection.delete.into_iter().chain(selection.leave).chain(selection.keep).cloned());
    } else {
        let pruned = prune::run(api, selection, settings, settings.dry_run, &run.applied_uids).await;
        run.results.extend(pruned.results);
        inventory.extend(pruned.kept);
    }
    if settings.dry_run {
        inventory = previous.to_vec();
    }
    Ok((run.results, inventory))
}

/// What running the stages produced.
pub(super) struct Run {
    pub results: Vec<ObjectResult>,
    pub inventory: Vec<InventoryEntry>,
    /// Uids of the objects applied: pruning must not delete one of them under an old
    /// apiVersion or group.
    pub applied_uids: HashSet<String>,
}

/// Runs `work` stage by stage. After the CRD stage, waits until the applied CRDs are
/// Established and asks discovery again for the kinds they define.
pub(super) async fn execute(
    api: &Api,
    settings: &Settings,
    work: Vec<(Target, Step)>,
    previous: &HashMap<ObjectKey, &InventoryEntry>,
) -> Result<Run, EngineError> {
    let created_namespaces: HashSet<String> = work
        .iter()
        .filter(|(t, s)| t.stage.class == Class::Namespace && !matches!(s, Step::Keep(_) | Step::Unchanged))
        .map(|(t, _)| t.object.id.name.clone())
        .collect();
    let mut stages = scope::stages(work);
    let mut run = Run { results: Vec::new(), inventory: Vec::new(), applied_uids: HashSet::new() };
    for i in 0..stages.len() {
        let stage = std::mem::take(&mut stages[i]);
        let is_crd_stage = stage.first().is_some_and(|(t, _)| t.stage.class == Class::Crd);
        let jobs = stage.into_iter().map(|(target, step)| {
            let previous = previous.get(&target.object.id.key()).copied();
            one(api, settings, &created_namespaces, target, step, previous)
        });
        let mut done: Vec<Done> = futures::stream::iter(jobs).buffer_unordered(settings.concurrency.max(1)).collect().await;
        if is_crd_stage {
            let waits = done.iter_mut().filter_map(|d| {
                let (served, name, live) = d.crd.take()?;
                Some(async move {
                    if let Err(e) = api.wait_established(&served, &name, &live).await {
                        fail(d, &e);
                    }
                })
            });
            futures::stream::iter(waits).buffer_unordered(settings.concurrency.max(1)).collect::<()>().await;
            scope::refresh(api, stages[i + 1..].iter_mut().flatten().map(|(t, _)| t)).await?;
        }
        for d in done {
            run.applied_uids.extend(d.uid);
            run.results.push(d.result);
            run.inventory.extend(d.entry);
        }
    }
    Ok(run)
}

/// One object's result, its inventory entry, and, when it was really applied, the
/// object's uid and, for a CRD, what waiting until it is Established needs (how CRDs are
/// served, its name, the object the apply answered). The manifest is not kept: it was sent.
struct Done {
    result: ObjectResult,
    entry: Option<InventoryEntry>,
    uid: Option<String>,
    crd: Option<(Served, String, Value)>,
}

impl Done {
    /// An object that was not (really) applied.
    fn not_applied(result: ObjectResult, entry: Option<InventoryEntry>) -> Done {
        Done { result, entry, uid: None, crd: None }
    }
}

fn fail(done: &mut Done, error: &ApiError) {
    done.result.action = Action::Failed;
    done.result.detail = Some(error.to_string());
}

async fn one(
    api: &Api,
    settings: &Settings,
    created_namespaces: &HashSet<String>,
    target: Target,
    step: Step,
    previous: Option<&InventoryEntry>,
) -> Done {
    let object = &target.object;
    let result =
        |action: Action, detail: Option<String>| ObjectResult { id: object.id.clone(), profile: object.profile.clone(), action, detail };
    let fresh = InventoryEntry {
        id: object.id.clone(),
        profile: object.profile.clone(),
        applied_hash: object.hash.clone(),
        leave_on_removal: object.stop_matching_behavior == StopMatchingBehavior::LeavePolicies,
    };
    let kept = previous.cloned();
    let (drift, preview) = match &step {
        Step::Unchanged => return Done::not_applied(result(Action::Unchanged, None), Some(fresh)),
        Step::Keep(entry) => {
            let entry = InventoryEntry { applied_hash: entry.applied_hash.clone(), ..fresh };
            let detail = Some("OneTime: applied before, never updated".to_string());
            return Done::not_applied(result(Action::Unchanged, detail), Some(entry));
        }
        Step::Preview => (None, true),
        Step::Apply => (None, settings.dry_run),
        Step::Correct(how) => (Some(how.clone()), settings.dry_run),
    };
    // Correcting drift takes back fields another manager changed, which a plain apply
    // would refuse as a conflict.
    let force = object.force_conflicts || drift.is_some();
    if preview {
        let done = |r| Done::not_applied(r, kept.clone());
        return match dry_run(api, created_namespaces, &target, force).await {
            Ok((action, detail)) => {
                let detail = match (&drift, detail) {
                    (Some(how), Some(d)) => Some(format!("drifted: {how}\n{d}")),
                    (Some(how), None) => Some(format!("drifted: {how}")),
                    (None, d) => d,
                };
                done(result(action, detail))
            }
            Err(e) => done(result(Action::Failed, Some(e.to_string()))),
        };
    }
    let Some(served) = &target.served else {
        let detail = format!("{} {} is not served, although its CRD was applied", object.id.api_version(), object.id.kind);
        return Done::not_applied(result(Action::Failed, Some(detail)), kept);
    };
    match api.apply(served, &object.id, object.manifest.json(), force, false).await {
        Ok((created, live)) => {
            let action = match (&drift, created) {
                (Some(_), _) => Action::DriftCorrected,
                (None, true) => Action::Created,
                (None, false) => Action::Configured,
            };
            let uid = live.pointer("/metadata/uid").and_then(Value::as_str).map(String::from);
            tracing::info!(object = %object.id, action = ?action, "applied");
            let crd = (target.stage.class == Class::Crd).then(|| (served.clone(), object.id.name.clone(), live));
            Done { result: result(action, drift), entry: Some(fresh), uid, crd }
        }
        Err(e) => {
            tracing::warn!(object = %object.id, error = %e, "apply failed");
            Done::not_applied(result(Action::Failed, Some(e.to_string())), kept)
        }
    }
}

/// A server-side dry-run apply compared with the live object: what applying would do.
async fn dry_run(
    api: &Api,
    created_namespaces: &HashSet<String>,
    target: &Target,
    force: bool,
) -> Result<(Action, Option<String>), ApiError> {
    let object = &target.object;
    let Some(served) = &target.served else {
        return Ok((Action::WouldCreate, Some("its kind comes from a CRD that this bundle creates first".into())));
    };
    let namespace = object.id.namespace.as_deref();
    let live = api.get(served, namespace, &object.id.name).await?;
    match api.apply(served, &object.id, object.manifest.json(), force, true).await {
        Ok((_, after)) => Ok(match live {
            None => (Action::WouldCreate, None),
            Some(live) => {
                let changes = diff(&live, &after);
                if changes.is_empty() { (Action::Unchanged, None) } else { (Action::WouldConfigure, Some(render_changes(&changes))) }
            }
        }),
        Err(e) if e.code == 404 && namespace.is_some_and(|ns| created_namespaces.contains(ns)) => {
            Ok((Action::WouldCreate, Some(format!("namespace {} is created by this bundle first", namespace.unwrap_or_default()))))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
