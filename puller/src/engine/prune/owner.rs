//! Whose a live object is, read from its `airlock.dev/cluster` label (spec 2.5.4): the one
//! test every path that deletes or changes an object Airlock may not have made passes
//! first (`ownership` before a takeover, `prune`, `release`, `recreate`, `hook_run`).

use serde_json::Value;

use airlock_bundle::vocabulary::CLUSTER_LABEL;

/// The value of the live object's `airlock.dev/cluster` label, if it has one.
pub(crate) fn owner(live: &Value) -> Option<&str> {
    live.pointer("/metadata/labels").and_then(|l| l.get(CLUSTER_LABEL)).and_then(Value::as_str)
}

/// How a live object's owner reads in a message: its label, or that it has none.
pub(crate) fn describe_owner(live: &Value) -> String {
    owner(live).map_or_else(|| format!("no {CLUSTER_LABEL} label"), |o| format!("{CLUSTER_LABEL}={o}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_is_the_cluster_label() {
        let live = |labels: Value| serde_json::json!({"metadata": {"labels": labels}});
        assert_eq!(owner(&live(serde_json::json!({CLUSTER_LABEL: "fleet.edge-1"}))), Some("fleet.edge-1"));
        assert_eq!(owner(&live(serde_json::json!({"app": "x"}))), None);
        assert_eq!(owner(&serde_json::json!({"metadata": {}})), None);
        assert_eq!(describe_owner(&serde_json::json!({"metadata": {}})), "no airlock.dev/cluster label");
        assert_eq!(describe_owner(&live(serde_json::json!({CLUSTER_LABEL: "fleet.other"}))), "airlock.dev/cluster=fleet.other");
    }
}
