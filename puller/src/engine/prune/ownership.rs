//! What Airlock may take over and delete (spec 2.5.4), decided before the first
//! write of a sync so that a refusal leaves everything as it was.
//!
//! An object is Airlock's for this cluster when it carries this cluster's
//! `airlock.dev/cluster` label. A live object the bundle would write that is neither in the
//! inventory nor Airlock's was made by someone else: server-side apply would silently take
//! it over (and add the label), and a later version that drops it would prune it, with all
//! that depends on it. So it is refused unless its manifest allows the takeover
//! (`airlock.dev/adopt`), and an object taken over so is recorded as adopted and only ever
//! released.
//!
//! The mass-prune guard holds a version that would delete more than half of a sizeable
//! inventory, the mark of a bundle rendered from a broken source rather than of a change
//! anyone meant, until it is confirmed.

use std::collections::HashSet;

use crate::engine::api::kube_api::Api;
use crate::engine::model::error::EngineError;
use crate::engine::model::object::{InventoryEntry, ObjectKey};
use crate::engine::model::settings::Settings;
use crate::engine::model::step::Step;
use crate::engine::parse::manifest::cluster_label;
use crate::engine::plan::policy;
use crate::engine::plan::scope::Target;
use crate::engine::prune::by_inventory::Selection;
use crate::engine::prune::foreign;

/// The share of the previous inventory, in percent, that a version may prune unconfirmed.
pub const MASS_PRUNE_PERCENT: usize = 50;
/// Fewer deletions than this are never held, whatever their share: a small inventory loses
/// half of itself in an ordinary change (two of three objects), and what a handful of
/// deletions can break is small.
pub const MASS_PRUNE_MIN: usize = 10;

/// Whether a version that prunes `pruned` of the `inventory` entries is held: at least
/// [`MASS_PRUNE_MIN`] deletions, and more than [`MASS_PRUNE_PERCENT`] of the inventory.
fn mass_prune(pruned: usize, inventory: usize, confirmed: bool) -> Result<(), EngineError> {
    if confirmed || pruned < MASS_PRUNE_MIN || pruned * 100 <= inventory * MASS_PRUNE_PERCENT {
        return Ok(());
    }
    Err(EngineError::MassPrune { pruned, inventory, percent: MASS_PRUNE_PERCENT })
}

/// Whether `step` may write over a live object that exists already.
fn writes_existing(step: &Step) -> bool {
    matches!(step, Step::Apply | Step::Fire(_))
}

/// Whether `target` is the Namespace of one of the watch-namespaces, which registration
/// creates.
fn watched_namespace(target: &Target, settings: &Settings) -> bool {
    let id = &target.object.id;
    !target.namespaced
        && id.group.is_empty()
        && id.kind == "Namespace"
        && settings.watch_namespaces.as_ref().is_some_and(|list| list.contains(&id.name))
}

/// The checks of a run before its first write, which a plan makes as well. First the
/// mass-prune guard, over what `selection` deletes of the previous inventory (`previous`).
/// Then it reads every object of `work` that would be written and is not in `previous`
/// (`foreign`, by kind and namespace):
/// one that exists and is not Airlock's for this cluster is refused, every such object
/// listed, unless its manifest allows adoption or registration made it (the relayed
/// store-credentials Secret, the watched Namespaces). Every such object is marked to be
/// taken over whole, and the keys of those adopted returned. Read-only.
pub(crate) async fn check(
    api: &Api,
    work: &mut [(Target, Step)],
    selection: &Selection<'_>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<HashSet<ObjectKey>, EngineError> {
    mass_prune(selection.delete.len(), previous.len(), settings.allow_mass_prune)?;
    let previous: HashSet<ObjectKey> = previous.iter().map(|e| e.id.key()).collect();
    let label = cluster_label(&settings.cluster);
    let unrecorded = |(t, step): &&(Target, Step)| writes_existing(step) && !previous.contains(&t.object.id.key());
    let reads = work.iter().filter(unrecorded).filter_map(|(target, _)| Some((target.served.as_ref()?, &target.object.id)));
    let foreign = foreign::find(api, reads, &label, settings.concurrency).await?;
    let mut adopted = HashSet::new();
    let mut refused = Vec::new();
    for (target, _) in work.iter().filter(unrecorded) {
        let Some(owner) = foreign.get(&target.object.id.key()) else { continue };
        // Registration creates the relayed credentials Secret, and the relay replaces it
        // by design (spec 2.6); it creates the watched Namespaces too, for their Roles, and
        // a profile may then label them.
        let registered = policy::own_credentials(target, settings.own_namespace.as_deref()) || watched_namespace(target, settings);
        // A Helm hook is deleted by its policy each time it fires: adopting one would hand
        // a foreign object to that delete, so a hook is never adopted.
        let hook = target.object.hook.is_some();
        if (target.object.adopt && !hook) || registered {
            tracing::info!(object = %target.object.id, %owner, "adopting an object Airlock did not create");
            adopted.insert(target.object.id.key());
        } else {
            let never = if hook { "; a Helm hook is never adopted" } else { "" };
            refused.push(format!("{} ({owner}; {}{never})", target.object.id, target.object.source));
        }
    }
    // Adopting takes the object over whole, the fields another manager set included. Those
    // refused are marked too: a sync writes nothing then, and a plan shows them as they
    // would be once adopted.
    for (target, _) in work.iter_mut().filter(|(t, _)| foreign.contains_key(&t.object.id.key())) {
        target.object.force_conflicts = true;
    }
    if !refused.is_empty() {
        refused.sort();
        return Err(EngineError::ForeignObjects { objects: refused });
    }
    Ok(adopted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_holds_from_ten_deletions_above_half_of_the_inventory() {
        let held = |pruned, inventory| mass_prune(pruned, inventory, false).is_err();
        // Below the minimum count, any share passes: 9 of 9 is a small change.
        assert!(!held(9, 9) && !held(9, 10) && !held(1, 1));
        // Exactly half passes; one more is held.
        assert!(!held(10, 20) && held(11, 20) && held(10, 19) && held(10, 10));
        assert!(!held(50, 100) && held(51, 100));
        // Confirmed, nothing is held.
        assert!(mass_prune(100, 100, true).is_ok());
        let error = mass_prune(11, 20, false).expect_err("held").to_string();
        assert!(error.contains("11 of the 20") && error.contains("allowMassPrune") && error.contains("--allow-mass-prune"), "{error}");
    }

    #[test]
    fn only_steps_that_write_look_for_foreign_objects() {
        assert!(writes_existing(&Step::Apply));
        assert!(writes_existing(&Step::Fire(airlock_bundle::vocabulary::HookEvent::PreInstall)));
        for quiet in [Step::Unchanged, Step::Preview, Step::CreateOnly, Step::Skip("held".into()), Step::Correct("d".into())] {
            assert!(!writes_existing(&quiet), "{quiet:?}");
        }
    }

    #[test]
    fn registration_made_the_watched_namespaces_so_they_are_adopted() {
        use crate::engine::model::order::{Class, Stage};
        let namespace = |name: &str| Target {
            object: crate::engine::testing::object("v1", "Namespace", None, name),
            served: None,
            namespaced: false,
            stage: Stage::new(Class::Namespace, 0, 100),
        };
        let settings = Settings {
            watch_namespaces: Some(vec!["web".into()]),
            own_namespace: Some("airlock-system".into()),
            ..crate::engine::testing::settings("fleet/edge-1")
        };
        assert!(watched_namespace(&namespace("web"), &settings));
        assert!(!watched_namespace(&namespace("kube-system"), &settings), "not one of the list");
        assert!(
            !watched_namespace(&namespace("web"), &Settings { watch_namespaces: None, ..settings.clone() }),
            "no list, no registration"
        );
    }
}
