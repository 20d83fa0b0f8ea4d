//! Releasing an adopted object that left the bundle (spec 2.5.4): it stays, and Airlock's
//! marks go, so that nothing reads it as Airlock's any longer and a later bundle naming it
//! again finds an object Airlock did not create, to be adopted again or refused. The marks
//! are what an apply puts on it beside the manifest's own content: the labels and
//! annotations the engine stamps, the manifest's `airlock.dev/adopt`, and the entries of
//! Airlock's field manager in `managedFields`.
//!
//! They go in one JSON patch, conditional on the uid and resourceVersion of the copy
//! read: one that changed meanwhile is read again, a few times, and one recreated under the
//! same name is never touched. An object no longer labelled as this cluster's is not
//! Airlock's to change, and is left as it is.

use airlock_bundle::vocabulary::{ADOPT_ANNOTATION, BUNDLE_DIGEST_ANNOTATION, CLUSTER_LABEL, PROFILE_LABEL, VERSION_ANNOTATION};
use serde_json::{Value, json};

use crate::engine::api::kube_api::{Api, FIELD_MANAGER};
use crate::engine::model::object::InventoryEntry;
use crate::engine::prune::owner::{describe_owner, owner};

/// Why the entry is released, not deleted.
const RELEASED: &str = "released: adopted, Airlock did not create it";
/// The labels Airlock's apply puts on every object.
const LABELS: [&str; 2] = [CLUSTER_LABEL, PROFILE_LABEL];
/// The annotations it puts on an adopted one.
const ANNOTATIONS: [&str; 3] = [VERSION_ANNOTATION, BUNDLE_DIGEST_ANNOTATION, ADOPT_ANNOTATION];
/// The field manager of the release's patch, which owns nothing afterwards: the patch
/// only removes fields.
const RELEASE_MANAGER: &str = "airlock-release";
/// Reads and patches before a release that keeps meeting a changed object fails (the next
/// run tries again).
const ATTEMPTS: usize = 3;

/// Releases `entry`, whose live object must carry `label` (this cluster's) to be changed;
/// with `preview`, only reads. The detail of its result, or why it failed.
pub(crate) async fn one(api: &Api, entry: &InventoryEntry, label: &str, preview: bool) -> Result<String, String> {
    let Some(served) = api.served(&entry.id).await.map_err(|e| e.to_string())? else {
        return Ok(format!("{RELEASED}; its kind is no longer served"));
    };
    let namespace = entry.id.namespace.as_deref();
    for _ in 0..ATTEMPTS {
        let Some(live) = api.get(&served, namespace, &entry.id.name).await.map_err(|e| e.to_string())? else {
            return Ok(format!("{RELEASED}; already gone"));
        };
        if owner(&live) != Some(label) {
            return Ok(format!("{RELEASED}; not Airlock's for this cluster ({}): left as it is", describe_owner(&live)));
        }
        if preview {
            return Ok(format!("{RELEASED}; its Airlock labels, annotations and field manager would be removed"));
        }
        match api.json_patch(entry.service_account.as_ref(), &served, &entry.id, unmark(&live), RELEASE_MANAGER).await {
            Ok(_) => {
                tracing::info!(object = %entry.id, "released an adopted object, Airlock's marks removed");
                return Ok(format!("{RELEASED}; its Airlock labels, annotations and field manager removed"));
            }
            // A test of the patch failed, or the update conflicted: the object changed.
            Err(e) if e.code == 409 || e.code == 422 => tracing::debug!(object = %entry.id, error = %e, "changed meanwhile; reading again"),
            Err(e) => return Err(format!("removing Airlock's marks: {e}")),
        }
    }
    Err(format!("removing Airlock's marks: the object kept changing ({ATTEMPTS} attempts)"))
}

/// The JSON patch that removes Airlock's marks from `live`, tested against its uid and
/// resourceVersion. Only marks present are removed (JSON patch refuses removing what is
/// absent); `managedFields` entries from the last, so each index stays right. An object
/// whose every entry is Airlock's has them reset instead: the API server keeps the old
/// entries when a write leaves none.
fn unmark(live: &Value) -> Value {
    let meta = &live["metadata"];
    let mut ops = vec![
        json!({"op": "test", "path": "/metadata/uid", "value": meta["uid"]}),
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}),
    ];
    for (map, keys) in [("labels", &LABELS[..]), ("annotations", &ANNOTATIONS[..])] {
        for key in keys.iter().filter(|k| meta[map].get(**k).is_some()) {
            ops.push(json!({"op": "remove", "path": format!("/metadata/{map}/{}", key.replace('~', "~0").replace('/', "~1"))}));
        }
    }
    let entries = meta["managedFields"].as_array().map(Vec::as_slice).unwrap_or_default();
    let airlock: Vec<usize> = (0..entries.len()).filter(|&i| entries[i]["manager"] == FIELD_MANAGER).collect();
    if !airlock.is_empty() && airlock.len() == entries.len() {
        ops.push(json!({"op": "replace", "path": "/metadata/managedFields", "value": [{}]}));
    } else {
        ops.extend(airlock.iter().rev().map(|i| json!({"op": "remove", "path": format!("/metadata/managedFields/{i}")})));
    }
    Value::Array(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(labels: Value, annotations: Value, managers: &[&str]) -> Value {
        let managed: Vec<Value> = managers.iter().map(|m| json!({"manager": m, "operation": "Apply"})).collect();
        json!({"metadata": {"uid": "u1", "resourceVersion": "42", "labels": labels, "annotations": annotations, "managedFields": managed}})
    }

    fn paths(patch: &Value, op: &str) -> Vec<String> {
        patch.as_array().unwrap().iter().filter(|o| o["op"] == op).map(|o| o["path"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn removes_only_airlock_s_marks_tested_against_uid_and_resource_version() {
        let patch = unmark(&live(
            json!({CLUSTER_LABEL: "fleet.edge-1", PROFILE_LABEL: "app", "team": "a"}),
            json!({VERSION_ANNOTATION: "3", BUNDLE_DIGEST_ANNOTATION: "sha256:x", ADOPT_ANNOTATION: "true", "note": "n"}),
            &["kubectl-create", FIELD_MANAGER, "kube-controller-manager", FIELD_MANAGER],
        ));
        let ops = patch.as_array().unwrap();
        assert_eq!(ops[0], json!({"op": "test", "path": "/metadata/uid", "value": "u1"}));
        assert_eq!(ops[1], json!({"op": "test", "path": "/metadata/resourceVersion", "value": "42"}));
        assert_eq!(
            paths(&patch, "remove"),
            [
                "/metadata/labels/airlock.dev~1cluster",
                "/metadata/labels/airlock.dev~1profile",
                "/metadata/annotations/airlock.dev~1version",
                "/metadata/annotations/airlock.dev~1bundle-digest",
                "/metadata/annotations/airlock.dev~1adopt",
                "/metadata/managedFields/3",
                "/metadata/managedFields/1",
            ]
        );
        // Applied to the object, it leaves the rest as it was.
        let mut object = live(
            json!({CLUSTER_LABEL: "fleet.edge-1", PROFILE_LABEL: "app", "team": "a"}),
            json!({VERSION_ANNOTATION: "3", BUNDLE_DIGEST_ANNOTATION: "sha256:x", ADOPT_ANNOTATION: "true", "note": "n"}),
            &["kubectl-create", FIELD_MANAGER, "kube-controller-manager", FIELD_MANAGER],
        );
        let patch: json_patch::Patch = serde_json::from_value(patch).unwrap();
        json_patch::patch(&mut object, &patch).expect("applies");
        assert_eq!(object["metadata"]["labels"], json!({"team": "a"}));
        assert_eq!(object["metadata"]["annotations"], json!({"note": "n"}));
        let managers: Vec<&str> =
            object["metadata"]["managedFields"].as_array().unwrap().iter().map(|m| m["manager"].as_str().unwrap()).collect();
        assert_eq!(managers, ["kubectl-create", "kube-controller-manager"]);
    }

    #[test]
    fn a_changed_object_fails_the_patch() {
        let before = live(json!({CLUSTER_LABEL: "fleet.edge-1"}), json!({}), &["kubectl-create", FIELD_MANAGER]);
        let patch: json_patch::Patch = serde_json::from_value(unmark(&before)).unwrap();
        let mut changed = before.clone();
        changed["metadata"]["resourceVersion"] = json!("43");
        assert!(json_patch::patch(&mut changed, &patch).is_err(), "another resourceVersion");
        let mut recreated = before.clone();
        recreated["metadata"]["uid"] = json!("u2");
        assert!(json_patch::patch(&mut recreated, &patch).is_err(), "another object of that name");
    }

    #[test]
    fn only_airlock_s_entries_are_reset_rather_than_emptied() {
        let patch = unmark(&live(json!({CLUSTER_LABEL: "fleet.edge-1"}), json!({}), &[FIELD_MANAGER]));
        assert_eq!(paths(&patch, "replace"), ["/metadata/managedFields"]);
        assert_eq!(patch.as_array().unwrap().last().unwrap()["value"], json!([{}]));
        let none = unmark(&json!({"metadata": {"uid": "u1", "resourceVersion": "1", "labels": {CLUSTER_LABEL: "c"}}}));
        assert_eq!(paths(&none, "remove"), ["/metadata/labels/airlock.dev~1cluster"], "no managedFields, nothing to do there");
        assert!(paths(&none, "replace").is_empty());
    }
}
