//! Sync: decide per object what to send, then run the stages of `order` with a bounded
//! number of requests in flight, then prune. Also the stage runner that drift correction
//! and plan share.
//!
//! Before the first write, `ownership` refuses a version that would take over objects
//! Airlock did not create, or prune too much of the inventory unconfirmed.
//!
//! A refused object stops the objects not yet sent of its part (unless the part continues
//! on error) and of the parts that depend on it (`gate`); parts held back are not sent at
//! all. A run with any failure never prunes, so a broken run cannot delete anything.
//! Post-delete hooks of a release being uninstalled fire after the prune; a failed run
//! deletes what it created of the releases that ask for it (`cleanup`).
//! Sending one object is `send`'s.

use std::collections::{HashMap, HashSet};

use airlock_bundle::SyncMode;
use airlock_bundle::vocabulary::HookEvent;
use futures::StreamExt;

use crate::engine::api::kube_api::Api;
use crate::engine::apply::cleanup;
use crate::engine::apply::ready;
use crate::engine::apply::send::{self, Done};
use crate::engine::drift::detect;
use crate::engine::model::error::EngineError;
use crate::engine::model::object::{DesiredObject, InventoryEntry, ObjectKey};
use crate::engine::model::order::{Class, Stage};
use crate::engine::model::outcome::{Action, Finished, ObjectResult};
use crate::engine::model::settings::Settings;
use crate::engine::model::step::Step;
use crate::engine::plan::gate::{Failures, Held};
use crate::engine::plan::hook::{self, Operation};
use crate::engine::plan::scope::{self, Target};
use crate::engine::prune::by_inventory;
use crate::engine::prune::ownership;

/// What sync does with an object, given its previous inventory entry. `None` means
/// "compare with the live copy first" (drift detection decides Unchanged or Correct).
pub(crate) fn decide(object: &DesiredObject, previous: Option<&InventoryEntry>) -> Option<Step> {
    let unchanged = previous.is_some_and(|p| p.applied_hash == object.hash);
    match (object.sync_mode, previous) {
        (SyncMode::DryRun, _) => Some(Step::Preview),
        _ if object.create_only => Some(Step::CreateOnly),
        (SyncMode::OneTime, Some(previous)) => Some(Step::Keep(Box::new(previous.clone()))),
        (SyncMode::ContinuousWithDriftDetection, _) if unchanged && !object.drift_ignored => None,
        _ if unchanged => Some(Step::Unchanged),
        _ => Some(Step::Apply),
    }
}

/// What sync does with a hook (`None` for any other object): fire it when its release's
/// operation is one of its events, in that event's slot, else record it as it is. A dry-run
/// part previews it as any object.
fn hook_step(target: &mut Target, operations: &HashMap<String, Operation>) -> Option<Step> {
    let hook = target.object.hook.as_ref()?;
    if target.object.sync_mode == SyncMode::DryRun {
        return Some(Step::Preview);
    }
    let operation = target.object.release.as_ref().and_then(|r| operations.get(r));
    Some(match operation.and_then(|&o| hook.fires(o)) {
        Some((event, slot)) => {
            target.stage = target.stage.fired(slot, hook.weight);
            Step::Fire(event)
        }
        None => Step::Idle(match operation {
            None => "hook: its release is unchanged",
            Some(Operation::Install) => "hook: not an event of this install",
            Some(Operation::Upgrade) => "hook: not an event of this upgrade",
            Some(Operation::Uninstall) => "hook: not an event of this uninstall",
        }),
    })
}

/// What sync does with each target: the steps decided, and apart the targets that a drift
/// check decides (`decide` gave `None`). A plan decides them so too, to refuse what a sync
/// would refuse.
pub(crate) fn steps(
    targets: Vec<Target>,
    by_key: &HashMap<ObjectKey, &InventoryEntry>,
    held: &Held,
    operations: &HashMap<String, Operation>,
) -> (Vec<(Target, Step)>, Vec<Target>) {
    let mut work = Vec::with_capacity(targets.len());
    let mut checks = Vec::new();
    for mut target in targets {
        if let Some(why) = held.reason(&target.object) {
            let why = why.to_string();
            work.push((target, Step::Skip(why)));
            continue;
        }
        if let Some(step) = hook_step(&mut target, operations) {
            work.push((target, step));
            continue;
        }
        match decide(&target.object, by_key.get(&target.object.id.key()).copied()) {
            Some(step) => work.push((target, step)),
            None => checks.push(target),
        }
    }
    (work, checks)
}

/// The previous inventory by object key.
pub(crate) fn index(previous: &[InventoryEntry]) -> HashMap<ObjectKey, &InventoryEntry> {
    previous.iter().map(|e| (e.id.key(), e)).collect()
}

/// Applies what changed, corrects drift of unchanged drift-detected objects, prunes.
pub(crate) async fn sync(
    api: &Api,
    targets: Vec<Target>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Finished, EngineError> {
    let by_key = index(previous);
    let held = Held::new(&settings.held_back, targets.iter().map(|t| &t.object));
    let operations = hook::operations(targets.iter().map(|t| &t.object).filter(|o| held.reason(o).is_none()), previous);
    let cleanup = cleanup::candidates(targets.iter().map(|t| &t.object), &operations);
    let (mut work, mut checks) = steps(targets, &by_key, &held, &operations);
    let drifted = detect::detect(api, &mut checks, settings).await?;
    work.extend(checks.into_iter().zip(drifted).map(|(t, d)| (t, d.map_or(Step::Unchanged, Step::Correct))));

    let selection = by_inventory::select_for(previous, &work, &held, settings);
    let adopted = ownership::check(api, &mut work, &selection, previous, settings).await?;
    let (after_prune, work): (Vec<_>, Vec<_>) = work.into_iter().partition(|(_, step)| *step == Step::Fire(HookEvent::PostDelete));
    let mut run = execute(api, settings, work, &by_key).await?;
    let mut inventory = run.inventory;
    for entry in inventory.iter_mut().filter(|e| adopted.contains(&e.id.key())) {
        entry.adopted = true;
    }
    if run.results.iter().any(|r| r.action == Action::Failed) {
        // No pruning after a failure; the inventory keeps what it had.
        inventory.extend(selection.delete.into_iter().chain(selection.leave).chain(selection.keep).chain(selection.hooks).cloned());
        let why = "post-delete hook: the uninstall failed before it";
        run.results.extend(after_prune.iter().map(|(t, _)| send::result(&t.object, Action::Skipped, Some(why.into()))));
        let created: Vec<&InventoryEntry> = run.created.iter().filter(|e| cleanup.contains(&e.id.key())).collect();
        cleanup::run(api, settings, created, &mut run.results, &mut inventory).await;
    } else {
        let pruned = by_inventory::run(api, selection, settings, settings.dry_run, &run.applied_uids).await;
        run.results.extend(pruned.results);
        inventory.extend(pruned.kept);
        let post = execute(api, settings, after_prune, &by_key).await?;
        run.results.extend(post.results);
        inventory.extend(post.inventory);
    }
    if settings.dry_run {
        inventory = previous.to_vec();
    }
    Ok((run.results, inventory))
}

/// What running the stages produced.
pub(crate) struct Run {
    pub results: Vec<ObjectResult>,
    pub inventory: Vec<InventoryEntry>,
    /// Uids of the objects applied: pruning must not delete one of them under an old
    /// apiVersion or group.
    pub applied_uids: HashSet<String>,
    /// The inventory entries of the objects this run created that ask to be cleaned up.
    pub created: Vec<InventoryEntry>,
}

/// Runs `work` stage by stage. After the CRD stage, waits until the applied CRDs are
/// Established and asks discovery again for the kinds they define. Applied objects of a
/// release that waits are waited for once the release objects of their wave and tier are
/// all sent, before the stage after them (their post- hooks, or the next tier).
pub(crate) async fn execute(
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
    let created_namespaces = &created_namespaces;
    let mut stages = scope::stages(work);
    let failures = &Failures::default();
    let mut run = Run { results: Vec::new(), inventory: Vec::new(), applied_uids: HashSet::new(), created: Vec::new() };
    // Applied objects of releases that wait, and the stage of the last of them.
    let mut waiting: (Vec<Done>, Option<Stage>) = (Vec::new(), None);
    for i in 0..stages.len() {
        let stage = std::mem::take(&mut stages[i]);
        let this = stage.first().map(|(t, _)| t.stage);
        if let (Some(this), Some(earlier)) = (this, waiting.1)
            && !this.continues(earlier)
        {
            run.record(settle(api, settings, failures, previous, std::mem::take(&mut waiting.0)).await);
            waiting.1 = None;
        }
        let is_crd_stage = this.is_some_and(|s| s.class == Class::Crd);
        let jobs = stage.into_iter().map(|(target, step)| {
            let previous = previous.get(&target.object.id.key()).copied();
            async move {
                if step.sends()
                    && let Some(why) = failures.stop(&target.object)
                {
                    return Done::not_applied(send::result(&target.object, Action::Skipped, Some(why)), previous.cloned());
                }
                let done = send::one(api, settings, created_namespaces, target, step, previous).await;
                if done.result.action == Action::Failed {
                    failures.record(&done.result.profile);
                }
                done
            }
        });
        let mut done: Vec<Done> = futures::stream::iter(jobs).buffer_unordered(settings.concurrency.max(1)).collect().await;
        if is_crd_stage {
            let waits = done.iter_mut().filter_map(|d| {
                let (served, name, live) = d.crd.take()?;
                Some(async move {
                    if let Err(e) = api.wait_established(&served, &name, &live).await {
                        d.fail(&e);
                        failures.record(&d.result.profile);
                    }
                })
            });
            futures::stream::iter(waits).buffer_unordered(settings.concurrency.max(1)).collect::<()>().await;
            scope::refresh(api, stages[i + 1..].iter_mut().flatten().map(|(t, _)| t)).await?;
        }
        let (waits, done): (Vec<Done>, Vec<Done>) = done.into_iter().partition(|d| d.ready.is_some());
        if !waits.is_empty() {
            waiting.0.extend(waits);
            waiting.1 = this;
        }
        run.record(done);
    }
    run.record(settle(api, settings, failures, previous, waiting.0).await);
    Ok(run)
}

impl Run {
    fn record(&mut self, done: Vec<Done>) {
        for d in done {
            self.created.extend(d.created);
            self.applied_uids.extend(d.uid);
            self.results.push(d.result);
            self.inventory.extend(d.entry);
        }
    }
}

/// Waits until each of `waiting` is ready (`ready`). One that is not fails, stops the
/// rest of its part as a refusal does, and keeps its previous inventory entry, so the next
/// run applies it again and its release goes through the same operation.
async fn settle(
    api: &Api,
    settings: &Settings,
    failures: &Failures,
    previous: &HashMap<ObjectKey, &InventoryEntry>,
    mut waiting: Vec<Done>,
) -> Vec<Done> {
    let waits = waiting.iter_mut().map(|d| async move {
        let Some((served, wait)) = d.ready.take() else { return };
        if let Err(e) = ready::wait(api, &served, &d.result.id, wait).await {
            d.fail(&e);
            d.entry = previous.get(&d.result.id.key()).map(|e| (*e).clone());
            failures.record(&d.result.profile);
        }
    });
    futures::stream::iter(waits).buffer_unordered(settings.concurrency.max(1)).collect::<()>().await;
    waiting
}

/// For an unchanged bundle, once `drift::detect::detect` ran: re-applies only what drifted. The
/// inventory is the previous one, with the re-applied objects' entries. `targets` are the
/// objects of drift-detected profiles only.
pub(crate) async fn correct_drift(
    api: &Api,
    targets: Vec<Target>,
    drifted: Vec<Option<String>>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Finished, EngineError> {
    let work = targets.into_iter().zip(drifted).map(|(t, d)| (t, d.map_or(Step::Unchanged, Step::Correct))).collect();
    let run = execute(api, settings, work, &index(previous)).await?;
    let mut inventory = previous.to_vec();
    if !settings.dry_run {
        let positions: HashMap<_, usize> = inventory.iter().enumerate().map(|(i, e)| (e.id.key(), i)).collect();
        for entry in run.inventory {
            match positions.get(&entry.id.key()) {
                Some(&i) => inventory[i] = entry,
                None => inventory.push(entry),
            }
        }
    }
    Ok((run.results, inventory))
}

#[cfg(test)]
#[path = "stages_tests.rs"]
mod tests;
