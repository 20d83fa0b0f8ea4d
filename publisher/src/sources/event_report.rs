//! An EventReport as Sveltos's agent sends it to the management cluster and its
//! event-manager reads it: its name, its labels, and its spec, whose `resources` are the
//! collected objects as JSON, each followed by `---`, base64 encoded as the CRD's bytes
//! field. Ingest writes them (`cmd::ingest::events`); the EventTriggers' instances are
//! made from them (`event_instances`).

use airlock_bundle::ClusterId;
use airlock_bundle::report::Collected;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::model::{CLUSTER_GROUP, SVELTOS_VERSION};

/// Labels of an EventReport, as libsveltos names them.
pub const EVENT_SOURCE_NAME_LABEL: &str = "projectsveltos.io/eventsource-name";
pub const REPORT_CLUSTER_NAME_LABEL: &str = "eventreport.projectsveltos.io/cluster-name";
pub const REPORT_CLUSTER_TYPE_LABEL: &str = "eventreport.projectsveltos.io/cluster-type";
/// What separates collected objects in `spec.resources`, after each one, as Sveltos's
/// agent writes it.
const SEPARATOR: &str = "---";

/// The EventReport name of `event_source` on `cluster`.
pub fn report_name(event_source: &str, cluster: &ClusterId) -> String {
    format!("sveltos--{event_source}--{}", cluster.name())
}

/// The label selector of every EventReport of `cluster`.
pub fn reports_selector(cluster: &ClusterId) -> String {
    format!("{REPORT_CLUSTER_NAME_LABEL}={},{REPORT_CLUSTER_TYPE_LABEL}=sveltos", cluster.name())
}

/// The EventReport of `event_source` on `cluster` for the event `collected`.
pub fn report_object(cluster: &ClusterId, event_source: &str, collected: &Collected) -> Value {
    let matching: Vec<Value> = collected
        .matching_resources
        .iter()
        .map(|r| {
            let mut reference = json!({"apiVersion": r.api_version, "kind": r.kind, "name": r.name});
            if let Some(namespace) = &r.namespace {
                reference["namespace"] = json!(namespace);
            }
            reference
        })
        .collect();
    let mut spec = json!({
        "eventSourceName": event_source,
        "clusterNamespace": cluster.namespace(),
        "clusterName": cluster.name(),
        "clusterType": "Sveltos",
        "matchingResources": matching,
    });
    if !collected.resources.is_empty() {
        let joined: String = collected.resources.iter().map(|r| format!("{r}{SEPARATOR}")).collect();
        spec["resources"] = json!(STANDARD.encode(joined));
    }
    json!({
        "apiVersion": format!("{CLUSTER_GROUP}/{SVELTOS_VERSION}"),
        "kind": "EventReport",
        "metadata": {
            "name": report_name(event_source, cluster),
            "namespace": cluster.namespace(),
            "labels": {
                EVENT_SOURCE_NAME_LABEL: event_source,
                REPORT_CLUSTER_NAME_LABEL: cluster.name(),
                REPORT_CLUSTER_TYPE_LABEL: "sveltos",
            },
        },
        "spec": spec,
    })
}

/// The collected objects of an EventReport's `spec.resources`, as Sveltos's event-manager
/// reads them back; empty when it has none or they do not decode.
pub fn collected_of(report: &Value) -> Vec<Value> {
    let Some(encoded) = report.pointer("/spec/resources").and_then(Value::as_str) else { return Vec::new() };
    let Ok(bytes) = STANDARD.decode(encoded) else { return Vec::new() };
    String::from_utf8_lossy(&bytes).split(SEPARATOR).filter(|s| !s.trim().is_empty()).filter_map(|s| serde_json::from_str(s).ok()).collect()
}
