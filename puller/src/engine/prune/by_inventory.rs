//! Prune by inventory: objects an earlier version applied and the bundle no longer has are
//! deleted, namespaced objects first, CRDs and Namespaces last; objects of a
//! `LeavePolicies` profile are released instead. With watch-namespaces, only objects inside
//! them are looked at; the others stay in the inventory untouched, as do those of a part
//! held back this run (spec 5.7: it is left as it is).
//!
//! Objects Airlock did not create are never touched: before deleting, the live object must
//! carry this cluster's `airlock.dev/cluster` label, and the delete is conditional on the
//! uid that was checked. An object the inventory records as adopted (`ownership`) is
//! released, never deleted, and loses Airlock's marks (`release`).

use std::collections::{BTreeMap, HashMap, HashSet};

use airlock_bundle::StopMatchingBehavior;
use futures::StreamExt;
use serde_json::Value;

use crate::engine::api::kube_api::{Api, PropagationPolicy};
use crate::engine::model::object::{InventoryEntry, ObjectKey, Propagation};
use crate::engine::model::order::Class;
use crate::engine::model::outcome::{Action, ObjectResult};
use crate::engine::model::settings::Settings;
use crate::engine::parse::manifest::cluster_label;
use crate::engine::plan::gate::Held;
use crate::engine::plan::policy;
use crate::engine::plan::scope::Target;
use crate::engine::prune::owner::{describe_owner, owner};
use crate::engine::prune::release;

/// What becomes of the previous inventory's entries that the bundle no longer has.
#[derive(Debug, Default)]
pub(crate) struct Selection<'a> {
    /// To delete, in prune order.
    pub delete: Vec<&'a InventoryEntry>,
    /// To release (LeavePolicies, or adopted).
    pub leave: Vec<&'a InventoryEntry>,
    /// Outside watch-namespaces, or of a part held back: kept in the inventory, not looked at.
    pub keep: Vec<&'a InventoryEntry>,
    /// Helm hooks: released and left in place, as Helm never deletes a hook with its
    /// release (only its delete policy does, when it fires).
    pub hooks: Vec<&'a InventoryEntry>,
}

/// Chooses among `previous` the entries absent from `desired`. `leave` gives the current
/// LeavePolicies flag of each profile still in the bundle; for the others the flag stored
/// in the entry counts. Entries of the parts `held` holds back stay.
pub(crate) fn select<'a>(
    previous: &'a [InventoryEntry],
    desired: &HashSet<ObjectKey>,
    leave: &HashMap<String, bool>,
    held: &Held,
    watch: Option<&[String]>,
) -> Selection<'a> {
    let mut selection = Selection::default();
    for entry in previous.iter().filter(|e| !desired.contains(&e.id.key())) {
        // A Namespace counts as inside itself: deleting it deletes everything in it.
        let namespace = entry.id.namespace.as_deref().or((class(entry) == Class::Namespace).then_some(entry.id.name.as_str()));
        if namespace.is_some_and(|ns| !policy::watched(watch, ns)) || held.holds(&entry.profile) {
            selection.keep.push(entry);
        } else if entry.hook {
            selection.hooks.push(entry);
        } else if entry.adopted || leave.get(&entry.profile).copied().unwrap_or(entry.leave_on_removal) {
            selection.leave.push(entry);
        } else {
            selection.delete.push(entry);
        }
    }
    selection.delete.sort_by_key(|e| class(e).prune_rank());
    selection
}

/// [`select`] for a run over `work`, the objects that passed the policy.
pub(crate) fn select_for<'a, T>(previous: &'a [InventoryEntry], work: &[(Target, T)], held: &Held, settings: &Settings) -> Selection<'a> {
    let desired: HashSet<ObjectKey> = work.iter().map(|(t, _)| t.object.id.key()).collect();
    let leave: HashMap<String, bool> = work
        .iter()
        .map(|(t, _)| (t.object.profile.clone(), t.object.stop_matching_behavior == StopMatchingBehavior::LeavePolicies))
        .collect();
    select(previous, &desired, &leave, held, settings.watch_namespaces.as_deref())
}

fn class(entry: &InventoryEntry) -> Class {
    Class::of(&entry.id.group, &entry.id.kind, entry.id.namespace.is_some())
}

/// Results of a prune, and the entries that stay in the inventory.
pub(crate) struct Pruned {
    pub results: Vec<ObjectResult>,
    pub kept: Vec<InventoryEntry>,
}

impl Pruned {
    /// Runs `jobs`, a bounded number at a time, and records each one's result and the
    /// entry it keeps.
    async fn absorb<F>(&mut self, jobs: impl Iterator<Item = F>, settings: &Settings)
    where
        F: Future<Output = (ObjectResult, Option<InventoryEntry>)>,
    {
        let done: Vec<_> = futures::stream::iter(jobs).buffer_unordered(settings.concurrency.max(1)).collect().await;
        for (result, kept) in done {
            self.results.push(result);
            self.kept.extend(kept);
        }
    }
}

/// Deletes (or, with `preview`, reports) the selection, one prune class at a time, after
/// releasing the adopted objects of its `leave`.
/// `applied_uids` are objects this run applied: never deleted, whatever their old name.
pub(crate) async fn run(api: &Api, selection: Selection<'_>, settings: &Settings, preview: bool, applied_uids: &HashSet<String>) -> Pruned {
    let result = |entry: &InventoryEntry, action: Action, detail: &str| ObjectResult {
        id: entry.id.clone(),
        profile: entry.profile.clone(),
        action,
        detail: Some(detail.to_string()),
        sealed: false,
    };
    let (adopted, leave): (Vec<_>, Vec<_>) = selection.leave.into_iter().partition(|e| e.adopted);
    let mut pruned = Pruned {
        results: (leave.iter().map(|e| result(e, Action::Left, "released: its profile has LeavePolicies")))
            .chain(selection.hooks.iter().map(|e| result(e, Action::Left, "released: a Helm hook, which Helm leaves in place")))
            .collect(),
        kept: selection.keep.into_iter().cloned().collect(),
    };
    let label = cluster_label(&settings.cluster);
    let label = label.as_str();
    // A release or a delete that fails keeps its entry, so the next run tries again.
    let settle = |entry: &InventoryEntry, done: Result<(Action, String), String>| match done {
        Ok((action, detail)) => (result(entry, action, &detail), None),
        Err(detail) => (result(entry, Action::Failed, &detail), Some(entry.clone())),
    };
    let releases = adopted
        .into_iter()
        .map(|entry| async move { settle(entry, release::one(api, entry, label, preview).await.map(|detail| (Action::Left, detail))) });
    let mut classes: BTreeMap<u8, Vec<&InventoryEntry>> = BTreeMap::new();
    for entry in selection.delete {
        classes.entry(class(entry).prune_rank()).or_default().push(entry);
    }
    pruned.absorb(releases, settings).await;
    for entries in classes.into_values() {
        let jobs = entries.into_iter().map(|entry| async move { settle(entry, one(api, entry, label, preview, applied_uids).await) });
        pruned.absorb(jobs, settings).await;
    }
    pruned
}

async fn one(
    api: &Api,
    entry: &InventoryEntry,
    label: &str,
    preview: bool,
    applied_uids: &HashSet<String>,
) -> Result<(Action, String), String> {
    let gone = if preview { Action::WouldPrune } else { Action::Pruned };
    let Some(served) = api.served(&entry.id).await.map_err(|e| e.to_string())? else {
        return Ok((gone, "already gone: its kind is no longer served".into()));
    };
    let namespace = entry.id.namespace.as_deref();
    let Some(live) = api.get(&served, namespace, &entry.id.name).await.map_err(|e| e.to_string())? else {
        return Ok((gone, "already gone".into()));
    };
    if let Some(reason) = untouchable(&live, label, applied_uids) {
        return Ok((Action::Left, reason));
    }
    let uid = live.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    if preview {
        return Ok((Action::WouldPrune, "no longer in the bundle".into()));
    }
    let propagation = match entry.propagation {
        None | Some(Propagation::Background) => PropagationPolicy::Background,
        Some(Propagation::Foreground) => PropagationPolicy::Foreground,
        Some(Propagation::Orphan) => PropagationPolicy::Orphan,
    };
    api.delete(entry.service_account.as_ref(), &served, namespace, &entry.id.name, uid, propagation).await.map_err(|e| e.to_string())?;
    tracing::info!(object = %entry.id, "pruned");
    Ok((Action::Pruned, "no longer in the bundle".into()))
}

/// Why a live object must not be deleted, if it must not: it is not labelled as this
/// cluster's (Airlock did not create it), or this run applied it under another name.
fn untouchable(live: &Value, label: &str, applied_uids: &HashSet<String>) -> Option<String> {
    if owner(live) != Some(label) {
        return Some(format!("not Airlock's for this cluster ({}): left in place", describe_owner(live)));
    }
    let uid = live.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    applied_uids.contains(uid).then(|| "the same object was applied under another apiVersion in this run".into())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::engine::{DesiredObject, ObjectId};
    use airlock_bundle::vocabulary::CLUSTER_LABEL;

    fn entry(group: &str, kind: &str, namespace: Option<&str>, name: &str, profile: &str, leave: bool) -> InventoryEntry {
        InventoryEntry {
            id: ObjectId {
                group: group.into(),
                version: "v1".into(),
                kind: kind.into(),
                namespace: namespace.map(String::from),
                name: name.into(),
            },
            profile: profile.into(),
            applied_hash: "h".into(),
            leave_on_removal: leave,
            release: None,
            hook: false,
            propagation: None,
            adopted: false,
            service_account: None,
        }
    }

    fn names(entries: &[&InventoryEntry]) -> Vec<String> {
        entries.iter().map(|e| e.id.name.clone()).collect()
    }

    #[test]
    fn deletes_what_left_the_bundle_in_reverse_order() {
        let previous = vec![
            entry("", "Namespace", None, "ns", "a", false),
            entry("apiextensions.k8s.io", "CustomResourceDefinition", None, "crd", "a", false),
            entry("rbac.authorization.k8s.io", "ClusterRole", None, "role", "a", false),
            entry("", "ConfigMap", Some("ns"), "cm", "a", false),
            entry("", "ConfigMap", Some("ns"), "still-here", "a", false),
        ];
        let desired: HashSet<ObjectKey> = [previous[4].id.key()].into();
        let selection = select(&previous, &desired, &HashMap::new(), &Held::default(), None);
        assert_eq!(names(&selection.delete), ["cm", "role", "crd", "ns"]);
        assert!(selection.leave.is_empty() && selection.keep.is_empty());
    }

    #[test]
    fn another_api_version_of_a_desired_object_is_not_pruned() {
        let previous = vec![entry("apps", "Deployment", Some("ns"), "web", "a", false)];
        let mut moved = previous[0].id.clone();
        moved.version = "v2".into();
        let selection = select(&previous, &[moved.key()].into(), &HashMap::new(), &Held::default(), None);
        assert!(selection.delete.is_empty());
    }

    #[test]
    fn leave_policies_releases_by_the_current_or_the_stored_flag() {
        let previous = vec![
            entry("", "ConfigMap", Some("ns"), "gone-profile-leave", "gone", true),
            entry("", "ConfigMap", Some("ns"), "gone-profile-withdraw", "gone2", false),
            entry("", "ConfigMap", Some("ns"), "now-leave", "kept", false),
        ];
        let leave: HashMap<String, bool> = [("kept".to_string(), true)].into();
        let selection = select(&previous, &HashSet::new(), &leave, &Held::default(), None);
        assert_eq!(names(&selection.leave), ["gone-profile-leave", "now-leave"]);
        assert_eq!(names(&selection.delete), ["gone-profile-withdraw"]);
    }

    #[test]
    fn watch_namespaces_limit_what_is_looked_at() {
        let previous = vec![
            entry("", "ConfigMap", Some("apps"), "inside", "a", false),
            entry("", "ConfigMap", Some("kube-system"), "outside", "a", false),
            entry("", "Namespace", None, "kube-system", "a", false),
            entry("", "Namespace", None, "apps", "a", false),
            entry("rbac.authorization.k8s.io", "ClusterRole", None, "role", "a", false),
        ];
        let watch = vec!["apps".to_string()];
        let selection = select(&previous, &HashSet::new(), &HashMap::new(), &Held::default(), Some(&watch));
        assert_eq!(names(&selection.delete), ["inside", "role", "apps"]);
        assert_eq!(names(&selection.keep), ["outside", "kube-system"]);
    }

    #[test]
    fn a_part_held_back_keeps_its_entries() {
        let previous = vec![
            entry("", "ConfigMap", Some("ns"), "of-held", "held", false),
            entry("", "ConfigMap", Some("ns"), "of-other", "other", false),
        ];
        let held_back = BTreeMap::from([("held".to_string(), "3 runs failed".to_string())]);
        let object = DesiredObject { profile: "held".into(), ..crate::engine::testing::object("v1", "ConfigMap", Some("ns"), "x") };
        let held = Held::new(&held_back, [&object].into_iter());
        let selection = select(&previous, &HashSet::new(), &HashMap::new(), &held, None);
        assert_eq!((names(&selection.keep), names(&selection.delete)), (vec!["of-held".to_string()], vec!["of-other".to_string()]));
    }

    #[test]
    fn adopted_objects_are_released_never_deleted() {
        let adopted = |name: &str| InventoryEntry {
            adopted: true,
            ..entry("apiextensions.k8s.io", "CustomResourceDefinition", None, name, "a", false)
        };
        let previous = vec![adopted("widgets.example.com"), entry("", "ConfigMap", Some("ns"), "own", "a", false)];
        let selection = select(&previous, &HashSet::new(), &HashMap::new(), &Held::default(), None);
        assert_eq!((names(&selection.leave), names(&selection.delete)), (vec!["widgets.example.com".to_string()], vec!["own".to_string()]));
        // Even when its profile has gone: the flag is the entry's.
        let leave: HashMap<String, bool> = [("a".to_string(), false)].into();
        assert_eq!(names(&select(&previous, &HashSet::new(), &leave, &Held::default(), None).leave), ["widgets.example.com"]);
    }

    #[test]
    fn objects_airlock_did_not_create_are_never_deleted() {
        let live = |labels: serde_json::Value| serde_json::json!({"metadata": {"uid": "u1", "labels": labels}});
        let none = HashSet::new();
        assert_eq!(untouchable(&live(serde_json::json!({CLUSTER_LABEL: "fleet.edge-1"})), "fleet.edge-1", &none), None);
        for foreign in [serde_json::json!({}), serde_json::json!({CLUSTER_LABEL: "fleet.other"}), serde_json::Value::Null] {
            let reason = untouchable(&live(foreign.clone()), "fleet.edge-1", &none).expect("left alone");
            assert!(reason.starts_with("not Airlock's"), "{foreign}: {reason}");
        }
        let applied: HashSet<String> = ["u1".to_string()].into();
        let reason = untouchable(&live(serde_json::json!({CLUSTER_LABEL: "fleet.edge-1"})), "fleet.edge-1", &applied);
        assert!(reason.expect("left alone").contains("another apiVersion"));
    }
}
