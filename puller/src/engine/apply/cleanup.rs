//! Cleaning up after a failed release operation, as Helm's `--cleanup-on-fail` (and, for
//! what the site can undo, `--atomic`) does: when a run fails, the objects it created of
//! a release whose install or upgrade asks for it (`airlock.dev/helm-cleanup-on-fail`,
//! spec 2.5.3) are deleted again and left out of the inventory, so a failed upgrade leaves
//! no new object behind. Objects the run only changed keep what it applied: the site holds
//! no earlier render to go back to; the next run retries the operation. Also how a
//! release's objects go when they are pruned (`airlock.dev/helm-deletion-propagation`).

use std::collections::{HashMap, HashSet};

use crate::engine::api::kube_api::Api;
use crate::engine::model::object::{DesiredObject, InventoryEntry, ObjectKey};
use crate::engine::model::outcome::{Action, ObjectResult};
use crate::engine::model::settings::Settings;
use crate::engine::plan::hook::Operation;
use crate::engine::prune::by_inventory::{self, Selection};

/// The objects of `objects` that a failed run deletes if it created them, given each
/// release's operation.
pub(crate) fn candidates<'a>(
    objects: impl Iterator<Item = &'a DesiredObject>,
    operations: &HashMap<String, Operation>,
) -> HashSet<ObjectKey> {
    let asks = |o: &DesiredObject| match o.release.as_ref().and_then(|r| operations.get(r)) {
        Some(Operation::Install) => o.cleanup_on_fail.install,
        Some(Operation::Upgrade) => o.cleanup_on_fail.upgrade,
        _ => false,
    };
    objects.filter(|o| asks(o)).map(|o| o.id.key()).collect()
}

/// After a failed run: deletes the `created` objects (candidates the run created), takes
/// them out of `inventory`, and says so in their results: a Created one becomes the
/// delete's, a failed one (not ready in time) keeps its failure and gains the delete.
pub(crate) async fn run(
    api: &Api,
    settings: &Settings,
    created: Vec<&InventoryEntry>,
    results: &mut Vec<ObjectResult>,
    inventory: &mut Vec<InventoryEntry>,
) {
    if created.is_empty() || settings.dry_run {
        return;
    }
    let keys: HashSet<ObjectKey> = created.iter().map(|e| e.id.key()).collect();
    inventory.retain(|e| !keys.contains(&e.id.key()));
    let selection = Selection { delete: created, ..Selection::default() };
    let pruned = by_inventory::run(api, selection, settings, false, &HashSet::new()).await;
    inventory.extend(pruned.kept);
    const WHY: &str = "cleaned up: created by the release operation that failed";
    for deleted in pruned.results {
        let ok = deleted.action == Action::Pruned;
        match results.iter_mut().find(|r| r.id == deleted.id) {
            Some(r) if r.action == Action::Created => *r = ObjectResult { detail: ok.then(|| WHY.into()).or(deleted.detail), ..deleted },
            Some(r) if ok => r.detail = Some(format!("{}; then {WHY}", r.detail.as_deref().unwrap_or("failed"))),
            _ => results.push(deleted),
        }
    }
}

#[cfg(test)]
mod tests {
    use airlock_bundle::vocabulary::{CLEANUP_ON_FAIL_ANNOTATION, DELETION_PROPAGATION_ANNOTATION};
    use serde_json::{Value, json};

    use super::*;
    use crate::engine::model::helm::CleanupOnFail;
    use crate::engine::model::object::Propagation;
    use crate::engine::parse::helm_annotations::{read_cleanup_on_fail as read, read_propagation as propagation};
    use crate::engine::testing;

    #[test]
    fn reads_the_operations_and_picks_objects_of_releases_going_through_them() {
        let read_of = |annotations: Value, in_release: bool, is_hook: bool| read(annotations.as_object().unwrap(), in_release, is_hook);
        assert_eq!(read_of(json!({}), false, false), Ok(CleanupOnFail::default()));
        let both = read_of(json!({CLEANUP_ON_FAIL_ANNOTATION: "install, upgrade"}), true, false);
        assert_eq!(both, Ok(CleanupOnFail { install: true, upgrade: true }));
        assert!(read_of(json!({CLEANUP_ON_FAIL_ANNOTATION: "rollback"}), true, false).unwrap_err().contains("\"rollback\""));
        assert!(read_of(json!({CLEANUP_ON_FAIL_ANNOTATION: "upgrade"}), true, true).is_err(), "not on a hook");
        assert!(read_of(json!({CLEANUP_ON_FAIL_ANNOTATION: "upgrade"}), false, false).is_err(), "not outside a release");

        let read_propagation =
            |text: &str, is_hook: bool| propagation(json!({DELETION_PROPAGATION_ANNOTATION: text}).as_object().unwrap(), true, is_hook);
        assert_eq!(read_propagation("orphan", false), Ok(Some(Propagation::Orphan)));
        assert!(read_propagation("Orphan", false).unwrap_err().contains("\"Orphan\""));
        assert!(read_propagation("orphan", true).is_err(), "not on a hook");

        let object = |name: &str, release: &str, upgrade: bool| DesiredObject {
            release: Some(release.into()),
            cleanup_on_fail: CleanupOnFail { install: false, upgrade },
            ..testing::object("v1", "ConfigMap", Some("a"), name)
        };
        let operations = HashMap::from([("ns/up".to_string(), Operation::Upgrade), ("ns/new".to_string(), Operation::Install)]);
        let objects = [object("a", "ns/up", true), object("b", "ns/up", false), object("c", "ns/new", true), object("d", "ns/same", true)];
        let picked = candidates(objects.iter(), &operations);
        assert_eq!(picked, HashSet::from([objects[0].id.key()]));
    }
}
