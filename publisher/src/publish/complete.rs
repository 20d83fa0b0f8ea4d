//! Completing a cluster whose bundle depends on what the store holds (render's
//! `PreparedCluster::needs_store`, a tie between profiles, or a stored part of a profile
//! that cannot be read or is paused): read the stored bundle (`kept`), render again with
//! its recorded time each clock-reading part whose inputs did not change, let `hold`
//! decide, fetch the held parts' content, carry the delete hooks of releases that leave
//! (`withdraw`), and assemble. Entry point: [`complete`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use airlock_bundle::{ClusterId, Keyring};

use super::Run;
use super::{kept, withdraw};
use crate::render::hold;
use crate::render::manifest::file_path;
use crate::render::{Assembly, ClusterPlan, KeptContent, Object, PreparedCluster, RenderError, Rendered, Renderer};

/// The bundle of `prepared` given what the store holds for its cluster, with the parts
/// `held_back` names (part → why) kept as the store has them.
pub async fn complete(
    run: &Run<'_>,
    keyring: &Keyring,
    plan: &ClusterPlan<'_>,
    mut prepared: PreparedCluster,
    held_back: &BTreeMap<String, String>,
) -> Result<(Rendered, PreparedCluster), RenderError> {
    let (p, renderer, unplanned, now) = (run.publisher, &run.renderer, &run.unplanned, run.times.now);
    let cluster: &ClusterId = &plan.cluster.id;
    let unreadable = |e: airlock_store::StoreError| RenderError::StoredBundle { cluster: cluster.to_string(), message: e.to_string() };
    let stored = kept::read(&*p.store, cluster, keyring, now, &p.limits).await.map_err(unreadable)?;
    let statement = stored.as_ref().map(kept::Stored::statement);
    if let Some(statement) = statement {
        pin_clocks(renderer, plan, &mut prepared, statement);
    }
    let mut unavailable = BTreeSet::new();
    let mut kept: BTreeMap<String, KeptContent> = BTreeMap::new();
    let mut decided = loop {
        let decided = hold::plan(&prepared, statement, unplanned, &unavailable, held_back);
        let mut failed = false;
        if let Some(stored) = &stored {
            for entry in decided.to_fetch() {
                if kept.contains_key(&entry.name) {
                    continue;
                }
                match stored.part(&*p.store, cluster, entry, &p.limits).await {
                    Ok(content) => {
                        kept.insert(entry.name.clone(), content);
                    }
                    Err(kept::PartError::Store(e)) => return Err(unreadable(e)),
                    Err(kept::PartError::Unusable(e)) => {
                        tracing::warn!(%cluster, part = entry.name, "cannot keep the stored part, so it counts as never rendered: {e}");
                        unavailable.insert(entry.name.clone());
                        failed = true;
                    }
                }
            }
        }
        if !failed {
            break decided;
        }
    };
    if let Some(stored) = &stored {
        let applied = plan.cluster.applied_version().is_some_and(|v| v >= stored.statement().predicate.version);
        withdraw_all(cluster, &decided, &mut kept, applied, &p.limits);
        decided.carried = hooks_left(run, cluster, stored, &prepared, &decided, applied).await.map_err(unreadable)?;
    }
    match renderer.assemble(&prepared, &decided, &kept, true)? {
        Assembly::Done(rendered) => Ok((*rendered, prepared)),
        Assembly::Ties => unreachable!("a decided assembly breaks its ties"),
    }
}

/// Replaces the content of every withdrawn part with what `withdraw` carries of it; one
/// that carries nothing is left without content, which `assemble` leaves out. `applied`:
/// the cluster reported applying the stored bundle.
fn withdraw_all(
    cluster: &ClusterId,
    decided: &hold::Plan,
    kept: &mut BTreeMap<String, KeptContent>,
    applied: bool,
    limits: &airlock_bundle::Limits,
) {
    for (name, _) in decided.held.iter().filter(|(_, h)| h.reason == hold::Reason::Withdrawn) {
        let Some(content) = kept.remove(name) else { continue };
        match withdraw::carry(name, &content, applied, limits) {
            Ok(Some(carried)) => {
                tracing::info!(%cluster, part = name, hooks = carried.keys.len(), "carrying the delete hooks of a withdrawn profile");
                kept.insert(name.clone(), carried);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(%cluster, part = name, "cannot read the withdrawn part, so its releases are pruned without their delete hooks: {e}")
            }
        }
    }
}

/// The delete hooks each fresh part carries from the stored bundle: of the releases its
/// stored part held and it no longer deploys. Only a part that lost files is read.
async fn hooks_left(
    run: &Run<'_>,
    cluster: &ClusterId,
    stored: &kept::Stored,
    prepared: &PreparedCluster,
    decided: &hold::Plan,
    applied: bool,
) -> Result<BTreeMap<String, Vec<Arc<Object>>>, airlock_store::StoreError> {
    let p = run.publisher;
    let statement = stored.statement();
    let mut carried = BTreeMap::new();
    for draft in prepared.parts.iter().filter(|d| !decided.held.contains_key(&*d.name)) {
        let (Ok(fresh), Some(entry)) = (&draft.outcome, statement.predicate.profiles.iter().find(|e| *e.name == *draft.name)) else {
            continue;
        };
        let paths: BTreeSet<String> = fresh.objects.iter().map(|o| file_path(&draft.name, &o.key)).collect();
        if !withdraw::lost_files(statement, &draft.name, |path| paths.contains(path)) {
            continue;
        }
        let content = match stored.part(&*p.store, cluster, entry, &p.limits).await {
            Ok(content) => content,
            Err(kept::PartError::Store(e)) => return Err(e),
            Err(kept::PartError::Unusable(e)) => {
                tracing::warn!(%cluster, part = entry.name, "cannot read the stored part, so the releases it dropped are pruned without their delete hooks: {e}");
                continue;
            }
        };
        match withdraw::hooks_left(&content.part, &fresh.objects, applied) {
            Ok(hooks) if hooks.is_empty() => {}
            Ok(hooks) => {
                tracing::info!(%cluster, part = entry.name, hooks = hooks.len(), "carrying the delete hooks of releases the profile dropped");
                carried.insert(entry.name.clone(), hooks);
            }
            Err(e) => {
                tracing::warn!(%cluster, part = entry.name, "cannot read the stored part, so the releases it dropped are pruned without their delete hooks: {e}")
            }
        }
    }
    Ok(carried)
}

/// Renders again, at the time the store's bundle records, each part that read the clock
/// from inputs that have not changed since: an unchanged profile then renders the bytes
/// it rendered before.
fn pin_clocks(renderer: &Renderer<'_>, plan: &ClusterPlan<'_>, prepared: &mut PreparedCluster, statement: &airlock_bundle::Statement) {
    for (draft, pp) in prepared.parts.iter_mut().zip(&plan.profiles) {
        let Ok(fresh) = &draft.outcome else { continue };
        let Some(clock) = &fresh.clock else { continue };
        let recorded = statement.predicate.profiles.iter().find(|e| *e.name == *draft.name).and_then(|e| e.rendered.as_ref());
        if let Some(recorded) = recorded.filter(|r| r.inputs == clock.inputs && r.at != clock.at) {
            draft.outcome = renderer.prepare_part(pp, plan, recorded.at);
        }
    }
}
