//! The add-ons of an EventTrigger, instantiated for the events its clusters reported, as
//! Sveltos's event-manager instantiates them: from each EventReport
//! (`sveltos--<eventsource>--<cluster>`, written by ingest) of a pull-mode cluster the
//! trigger watches, one ClusterProfile per matching object with `oneForEvent`, else one
//! per cluster, that selects exactly that cluster and carries the trigger's add-on
//! fields. Each instance's templates see, besides `.Cluster`, the event:
//! `.MatchingResource` and `.Resource` (one object, `null` when the EventSource does not
//! collect), or `.MatchingResources` and `.Resources` (every object). A ConfigMap or
//! Secret its `policyRefs` name with the annotation `projectsveltos.io/instantiate` is
//! rendered as a template with them (rendering's business, `render::content`).
//!
//! Instances are named `sveltos-<hex>`, from the trigger, the cluster and the object, so
//! that the same event gives the same part at every publish; when the event is gone its
//! instance is not made, and the cluster's puller withdraws the part. A trigger whose
//! instance cannot be read is recorded as broken for that cluster alone.

use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use airlock_bundle::ClusterId;

use super::Inventory;
use super::broken::{Broken, Touches};
use super::event_report::collected_of;
use super::event_trigger::EventTrigger;
use super::model::{CLUSTER_GROUP, EventInstance, PROFILE_GROUP, ProfileKind, SVELTOS_VERSION};
use super::parse::parse_profile;

/// The fields of an EventTrigger's spec that are a ClusterProfile's too, carried into
/// every instance as written.
const PROFILE_FIELDS: &[&str] = &[
    "syncMode",
    "tier",
    "stopMatchingBehavior",
    "continueOnConflict",
    "policyRefs",
    "helmCharts",
    "kustomizationRefs",
    "templateResourceRefs",
    "patches",
    "patchesFrom",
    "driftExclusions",
    "dependsOn",
    "validateHealths",
    "preDeployChecks",
    "preDeleteChecks",
    "postDeleteChecks",
    "extraLabels",
    "extraAnnotations",
    "maxUpdate",
    "reloader",
];

/// The event data of one instance: what its templates see besides the cluster.
pub type EventData = Map<String, Value>;

/// Adds to `inventory` every instance the EventTriggers make of the EventReports in
/// `reports` (each with where it came from).
pub fn instantiate(inventory: &mut Inventory, reports: &[(String, Value)]) {
    let mut made = Vec::new();
    for trigger in &inventory.event_triggers {
        for cluster in inventory.clusters.iter().filter(|c| c.pull_mode && trigger.watches(c, &inventory.sets)) {
            let Some((origin, report)) = reports.iter().find(|(_, r)| is_report_of(r, &trigger.event_source, &cluster.id)) else {
                continue;
            };
            for (key, data) in events_of(trigger, report) {
                let name = instance_name(trigger, &cluster.id, &key);
                let display = ProfileKind::ClusterProfile.display(&name);
                match parse_profile(&instance_object(trigger, &cluster.id, &name), false) {
                    Ok(mut profile) => {
                        profile.event = Some(EventInstance { trigger: trigger.name.clone(), data });
                        made.push(profile);
                    }
                    Err(e) => inventory.broken.push(Broken {
                        origin: origin.clone(),
                        what: Touches::Profile { part: ProfileKind::ClusterProfile.part_name(&name), display: display.clone() },
                        message: format!("EventTrigger/{} (instantiated as {display} for {}): {e}", trigger.name, cluster.id),
                    }),
                }
            }
        }
    }
    inventory.profiles.extend(made);
}

fn is_report_of(report: &Value, event_source: &str, cluster: &ClusterId) -> bool {
    report["metadata"]["namespace"] == cluster.namespace()
        && report["spec"]["eventSourceName"] == event_source
        && report["spec"]["clusterName"] == cluster.name()
        && report["spec"]["clusterType"].as_str().is_some_and(|t| t.eq_ignore_ascii_case("sveltos"))
}

/// The instances an EventReport makes for `trigger`: a key naming each (the object's
/// `namespace/name`, empty for the one per cluster) with its event data.
fn events_of(trigger: &EventTrigger, report: &Value) -> Vec<(String, EventData)> {
    let matching: Vec<Value> = report["spec"]["matchingResources"].as_array().cloned().unwrap_or_default();
    if matching.is_empty() {
        return Vec::new();
    }
    let collected = collected_of(report);
    if !trigger.one_for_event {
        let mut data = EventData::new();
        data.insert("MatchingResources".into(), Value::Array(matching));
        data.insert("Resources".into(), Value::Array(collected));
        return vec![(String::new(), data)];
    }
    matching
        .into_iter()
        .enumerate()
        .map(|(i, reference)| {
            let key = format!("{}/{}", reference["namespace"].as_str().unwrap_or_default(), reference["name"].as_str().unwrap_or_default());
            let mut data = EventData::new();
            data.insert("Resource".into(), collected.get(i).cloned().unwrap_or(Value::Null));
            data.insert("MatchingResource".into(), reference);
            (key, data)
        })
        .collect()
}

/// `sveltos-` and 20 hex digits of the trigger, the cluster and the instance's key.
fn instance_name(trigger: &EventTrigger, cluster: &ClusterId, key: &str) -> String {
    let digest = Sha256::digest(format!("{}\n{cluster}\n{key}", trigger.name).as_bytes());
    let hex: String = digest.iter().take(10).map(|b| format!("{b:02x}")).collect();
    format!("sveltos-{hex}")
}

/// The ClusterProfile of one instance: the trigger's add-on fields, for `cluster` alone.
fn instance_object(trigger: &EventTrigger, cluster: &ClusterId, name: &str) -> Value {
    let spec = &trigger.object["spec"];
    let mut profile = Map::new();
    for field in PROFILE_FIELDS {
        if let Some(value) = spec.get(*field).filter(|v| !v.is_null()) {
            profile.insert((*field).to_string(), value.clone());
        }
    }
    profile.insert(
        "clusterRefs".into(),
        json!([{"apiVersion": format!("{CLUSTER_GROUP}/{SVELTOS_VERSION}"), "kind": "SveltosCluster",
                "namespace": cluster.namespace(), "name": cluster.name()}]),
    );
    json!({
        "apiVersion": format!("{PROFILE_GROUP}/{SVELTOS_VERSION}"),
        "kind": "ClusterProfile",
        "metadata": {"name": name, "labels": {"eventtrigger.lib.projectsveltos.io/eventtriggername": trigger.name}},
        "spec": Value::Object(profile),
    })
}
