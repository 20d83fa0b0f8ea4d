//! What a ClusterHealthCheck says of one cluster after a report (bundles-format.md 14.5),
//! as Sveltos's healthcheck-manager judges it: each liveness check passes or fails
//! (`Addons`: no profile fails on the cluster; `HealthCheck`: the HealthCheckReport of
//! the named HealthCheck exists and every object in it is `Healthy`), which becomes one
//! condition per check in the ClusterHealthCheck's `status.clusterCondition` entry of the
//! cluster. Pure: `health_target` gathers the facts and sends what this decides.
//!
//! Notifications are sent on a transition only: when some check's pass or fail differs
//! from the condition recorded (or none was), every notification is sent; otherwise only
//! those whose last summary is not `Delivered` (a failed delivery is retried, a new
//! notification sent once). The entry records each one's summary, so an ingest that
//! restarts reads what was sent and does not send it again. Sveltos also sends again
//! when a failing check's message changes; here the message is recorded but a changed
//! message alone is no transition.

use std::collections::BTreeMap;

use airlock_bundle::ClusterId;
use serde_json::{Value, json};

use crate::sources::health_check::{ClusterHealthCheck, Liveness};

/// The facts a cluster's liveness checks are judged on.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Per HealthCheck name, what its kept report says is not healthy (`None`: all
    /// healthy); a HealthCheck with no report is absent.
    pub health: BTreeMap<String, Option<String>>,
    /// Profiles failing on the cluster, each `Kind/name: message`.
    pub addon_failures: Vec<String>,
}

/// What one ClusterHealthCheck decides for one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The conditions, as the status records them.
    pub conditions: Vec<Value>,
    /// Whether every liveness check passes.
    pub passing: bool,
    /// Names of the notifications to send now.
    pub send: Vec<String>,
    /// The message the notifications carry.
    pub message: String,
}

/// Judges `check` for `cluster` on `facts`, given the cluster's entry `previous` in the
/// ClusterHealthCheck's status (`Value::Null` when none), at time `now` (RFC 3339).
pub fn decide(check: &ClusterHealthCheck, cluster: &ClusterId, facts: &Facts, previous: &Value, now: &str) -> Decision {
    let before: BTreeMap<(&str, &str), &Value> = previous["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some(((c["type"].as_str()?, c["name"].as_str()?), c)))
        .collect();
    let mut changed = before.is_empty() && !check.liveness.is_empty();
    let (mut conditions, mut failing) = (Vec::new(), Vec::new());
    for liveness in &check.liveness {
        let kind = liveness.condition_type();
        let (passing, message) = match &liveness.kind {
            Liveness::Addons => (facts.addon_failures.is_empty(), facts.addon_failures.join("\n")),
            Liveness::HealthCheck(name) => match facts.health.get(name) {
                Some(None) => (true, String::new()),
                Some(Some(unhealthy)) => (false, unhealthy.clone()),
                None => (false, format!("no HealthCheckReport of HealthCheck {name} yet")),
            },
        };
        let status = if passing { "True" } else { "False" };
        let was = before.get(&(kind.as_str(), liveness.name.as_str()));
        let same = was.is_some_and(|c| c["status"] == status);
        changed |= !same;
        let since = if same { was.and_then(|c| c["lastTransitionTime"].as_str()).unwrap_or(now) } else { now };
        let mut condition = json!({"type": kind, "name": liveness.name, "status": status, "lastTransitionTime": since});
        if !passing {
            condition["severity"] = json!("Warning");
            condition["message"] = json!(message);
            failing.push((kind, message));
        }
        conditions.push(condition);
    }
    let delivered = |name: &str| {
        previous["notificationSummaries"].as_array().into_iter().flatten().any(|s| s["name"] == name && s["status"] == "Delivered")
    };
    let send = check.notifications.iter().filter(|n| changed || !delivered(&n.name)).map(|n| n.name.clone()).collect();
    Decision { conditions, passing: failing.is_empty(), send, message: message(cluster, &failing) }
}

/// The notification's text, worded as Sveltos's: the cluster, then each failing check
/// with what fails, or that all pass.
fn message(cluster: &ClusterId, failing: &[(String, String)]) -> String {
    let mut text = format!("Cluster Sveltos:{}/{}\n", cluster.namespace(), cluster.name());
    if failing.is_empty() {
        text.push_str("All liveness checks are passing");
    }
    for (kind, why) in failing {
        text.push_str(&format!("Liveness check {kind:?} failing\n{why}\n"));
    }
    text
}

/// The cluster's `status.clusterCondition` entry after `decision`, with each notification
/// of `check` summarised: `sent` holds the outcome of those sent now (`Err`: why it
/// failed); the others keep the summary recorded in `previous`.
pub fn entry(
    check: &ClusterHealthCheck,
    cluster: &ClusterId,
    decision: &Decision,
    sent: &BTreeMap<String, Result<(), String>>,
    previous: &Value,
    hash: &str,
) -> Value {
    let summaries: Vec<Value> = check
        .notifications
        .iter()
        .map(|n| match sent.get(&n.name) {
            Some(Ok(())) => json!({"name": n.name, "status": "Delivered"}),
            Some(Err(why)) => json!({"name": n.name, "status": "FailedToDeliver", "failureMessage": why}),
            None => previous["notificationSummaries"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| s["name"] == n.name.as_str())
                .cloned()
                .unwrap_or_else(|| json!({"name": n.name, "status": "Delivered"})),
        })
        .collect();
    json!({
        "clusterInfo": {"cluster": cluster_ref(cluster), "hash": hash, "status": "Provisioned"},
        "conditions": decision.conditions,
        "notificationSummaries": summaries,
    })
}

/// The reference Sveltos writes to a SveltosCluster in a ClusterHealthCheck's status.
pub fn cluster_ref(cluster: &ClusterId) -> Value {
    json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster", "namespace": cluster.namespace(), "name": cluster.name()})
}

/// Whether a `status.clusterCondition` entry is `cluster`'s.
pub fn is_for(entry: &Value, cluster: &ClusterId) -> bool {
    let c = &entry["clusterInfo"]["cluster"];
    c["kind"] == "SveltosCluster" && c["namespace"] == cluster.namespace() && c["name"] == cluster.name()
}

#[cfg(test)]
#[path = "cluster_health_tests.rs"]
mod tests;
