//! Sync: decide per object what to send, then run the stages of `order` with a bounded
//! number of requests in flight, then prune. Also the stage runner that drift correction
//! and plan share.
//!
//! A refused object stops the objects not yet sent of its part (unless the part continues
//! on error) and of the parts that depend on it (`gate`); parts held back are not sent at
//! all. A run with any failure never prunes, so a broken run cannot delete anything.
//! Post-delete hooks of a release being uninstalled fire after the prune.
//! Sending one object is `send`'s.

use std::collections::{HashMap, HashSet};

use airlock_bundle::SyncMode;
use futures::StreamExt;

use super::error::EngineError;
use super::gate::{Failures, Held};
use super::hook::{self, HookEvent, Operation};
use super::kube_api::Api;
use super::object::{DesiredObject, InventoryEntry, ObjectKey};
use super::order::Class;
use super::outcome::{Action, Finished, ObjectResult};
use super::scope::{self, Target};
use super::send::{self, Done, Step};
use super::settings::Settings;
use super::{drift, prune};

/// What sync does with an object, given its previous inventory entry. `None` means
/// "compare with the live copy first" (drift detection decides Unchanged or Correct).
pub(super) fn decide(object: &DesiredObject, previous: Option<&InventoryEntry>) -> Option<Step> {
    let unchanged = previous.is_some_and(|p| p.applied_hash == object.hash);
    match (object.sync_mode, previous) {
        (SyncMode::DryRun, _) => Some(Step::Preview),
        _ if object.create_only => Some(Step::CreateOnly),
        (SyncMode::OneTime, Some(previous)) => Some(Step::Keep(previous.clone())),
        (SyncMode::ContinuousWithDriftDetection, _) if unchanged => None,
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
    let held = Held::new(&settings.held_back, targets.iter().map(|t| &t.object));
    let operations = hook::operations(targets.iter().map(|t| &t.object).filter(|o| held.reason(o).is_none()), previous);
    let mut work = Vec::with_capacity(targets.len());
    let mut checks = Vec::new();
    for mut target in targets {
        if let Some(why) = held.reason(&target.object) {
            let why = why.to_string();
            work.push((target, Step::Skip(why)));
            continue;
        }
        if let Some(step) = hook_step(&mut target, &operations) {
            work.push((target, step));
            continue;
        }
        match decide(&target.object, by_key.get(&target.object.id.key()).copied()) {
            Some(step) => work.push((target, step)),
            None => checks.push(target),
        }
    }
    let drifted = drift::detect(api, &mut checks, settings).await?;
    work.extend(checks.into_iter().zip(drifted).map(|(t, d)| (t, d.map_or(Step::Unchanged, Step::Correct))));

    let selection = prune::select_for(previous, &work, &held, settings);
    let (after_prune, work): (Vec<_>, Vec<_>) = work.into_iter().partition(|(_, step)| *step == Step::Fire(HookEvent::PostDelete));
    let mut run = execute(api, settings, work, &by_key).await?;
    let mut inventory = run.inventory;
    if run.results.iter().any(|r| r.action == Action::Failed) {
        // No pruning after a failure; the inventory keeps what it had.
        inventory.extend(selection.delete.into_iter().chain(selection.leave).chain(selection.keep).chain(selection.hooks).cloned());
        let why = "post-delete hook: the uninstall failed before it";
        run.results.extend(after_prune.iter().map(|(t, _)| send::result(&t.object, Action::Skipped, Some(why.into()))));
    } else {
        let pruned = prune::run(api, selection, settings, settings.dry_run, &run.applied_uids).await;
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
    let created_namespaces = &created_namespaces;
    let mut stages = scope::stages(work);
    let failures = &Failures::default();
    let mut run = Run { results: Vec::new(), inventory: Vec::new(), applied_uids: HashSet::new() };
    for i in 0..stages.len() {
        let stage = std::mem::take(&mut stages[i]);
        let is_crd_stage = stage.first().is_some_and(|(t, _)| t.stage.class == Class::Crd);
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
        for d in done {
            run.applied_uids.extend(d.uid);
            run.results.push(d.result);
            run.inventory.extend(d.entry);
        }
    }
    Ok(run)
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
