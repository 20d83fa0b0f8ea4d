//! What a report previews, in the shape of Sveltos's ClusterReports (what `sveltosctl show
//! dryrun` reads): one per profile and cluster whose part the run previewed (its objects
//! reported `wouldCreate`, `wouldConfigure` or `wouldPrune`, spec 14.3), named and labelled
//! as Sveltos names them. Pure functions; `sveltos_target` writes them, owned by their
//! profile as Sveltos's are (its tools find the profile through that reference).

use std::collections::BTreeMap;

use airlock_bundle::ClusterId;
use serde_json::{Map, Value, json};

use super::addons::{CLUSTER_NAME_LABEL, CLUSTER_TYPE_LABEL};
use super::configuration::ProfileRef;
use super::report::PullReport;

/// The label naming a ClusterReport's ClusterProfile, and a Profile's.
const CLUSTER_PROFILE_LABEL: &str = "projectsveltos.io/cluster-profile-name";
const PROFILE_LABEL: &str = "projectsveltos.io/profile-name";

/// The ClusterReport of `profile` on `cluster`, named as Sveltos names it.
pub fn report_name(profile: &ProfileRef, cluster: &ClusterId) -> String {
    let prefix = if matches!(profile, ProfileRef::Profile { .. }) { "p--" } else { "" };
    format!("{prefix}{}--sveltos--{}", profile.name(), cluster.name())
}

/// Its labels.
pub fn report_labels(profile: &ProfileRef, cluster: &ClusterId) -> Value {
    let profile_label = if matches!(profile, ProfileRef::Profile { .. }) { PROFILE_LABEL } else { CLUSTER_PROFILE_LABEL };
    json!({CLUSTER_NAME_LABEL: cluster.name(), CLUSTER_TYPE_LABEL: "Sveltos", profile_label: profile.name()})
}

/// Per previewed profile, its `status.resourceReports`: every object of its part the run
/// reported, with Sveltos's action (`Create`, `Update`, `Delete`, `No Action`, `Error`) and
/// the puller's detail as the message (the diff, for an update).
pub fn previews(report: &PullReport, cluster: &ClusterId) -> BTreeMap<ProfileRef, Vec<Value>> {
    let previewed = |a: &str| matches!(a, "wouldCreate" | "wouldConfigure" | "wouldPrune");
    let parts: Vec<&str> = report.objects.iter().filter(|o| previewed(&o.action)).map(|o| o.profile.as_str()).collect();
    let mut out: BTreeMap<ProfileRef, Vec<Value>> = BTreeMap::new();
    for object in report.objects.iter().filter(|o| parts.contains(&o.profile.as_str())) {
        let Some(profile) = ProfileRef::of_part(&object.profile) else { continue };
        if matches!(&profile, ProfileRef::Profile { namespace, .. } if namespace != cluster.namespace()) {
            continue;
        }
        let action = match object.action.as_str() {
            "wouldCreate" => "Create",
            "wouldConfigure" => "Update",
            "wouldPrune" => "Delete",
            "unchanged" => "No Action",
            "failed" => "Error",
            _ => continue,
        };
        let id = &object.id;
        let mut resource = Map::new();
        for (k, v) in [("group", &id.group), ("version", &id.version), ("kind", &id.kind), ("name", &id.name)] {
            resource.insert(k.into(), v.clone().into());
        }
        if let Some(ns) = &id.namespace {
            resource.insert("namespace".into(), ns.clone().into());
        }
        let mut entry = json!({"resource": resource, "action": action});
        if let Some(detail) = &object.detail {
            entry["message"] = detail.clone().into();
        }
        out.entry(profile).or_default().push(entry);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_previewed_part_becomes_its_profiles_cluster_report_named_as_sveltos_names_it() {
        let cluster: ClusterId = "fleet/a".parse().unwrap();
        let object = |part: &str, name: &str, action: &str| json!({"id": {"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "apps", "name": name}, "profile": part, "action": action});
        let mut update = object("Profile.fleet.preview", "b", "wouldConfigure");
        update["detail"] = "data.color: red -> blue".into();
        let report: PullReport = serde_json::from_value(json!({
            "apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": "fleet/a", "finishedAt": "2026-03-01T10:00:00Z",
            "result": "applied", "appliedVersion": 3, "appliedDigest": null, "bundle": null,
            "objects": [object("ClusterProfile.web", "a", "created"), object("Profile.fleet.preview", "a", "wouldCreate"), update,
                        object("Profile.fleet.preview", "c", "unchanged")],
        }))
        .unwrap();
        let previews = previews(&report, &cluster);
        let preview = ProfileRef::Profile { namespace: "fleet".into(), name: "preview".into() };
        assert_eq!(previews.keys().collect::<Vec<_>>(), [&preview], "an applied part has no report");
        let actions: Vec<(&str, Option<&str>)> =
            previews[&preview].iter().map(|e| (e["action"].as_str().unwrap(), e["message"].as_str())).collect();
        assert_eq!(actions, [("Create", None), ("Update", Some("data.color: red -> blue")), ("No Action", None)]);
        assert_eq!(report_name(&preview, &cluster), "p--preview--sveltos--a");
        assert_eq!(report_name(&ProfileRef::ClusterProfile("web".into()), &cluster), "web--sveltos--a");
        assert_eq!(report_labels(&preview, &cluster)["projectsveltos.io/profile-name"], "preview");
    }
}
