//! A profile's status as Sveltos keeps it for one cluster: `status.matchingClusters` (what
//! `sveltosctl show usage` reads) lists the cluster while the profile is deployed there,
//! and `status.failedClusters` holds the cluster, with the message and the report's time,
//! while the profile fails there. A failed profile is the profile's state, never the
//! cluster's: the SveltosCluster stays ready.
//!
//! A pure function over the profile's JSON; both lists hold every cluster, so the caller
//! writes them whole, conditional on the profile's resourceVersion (`sveltos_target`).

use airlock_bundle::ClusterId;
use serde_json::{Value, json};

use super::addons::{Failure, ProfileState};
use crate::sources::live::sveltos_kinds;

/// The two lists `profile` (a ClusterProfile or Profile as JSON) holds once `state` of
/// `cluster` is recorded, as a status to apply; `None` when neither changes.
pub fn status(profile: &Value, cluster: &ClusterId, state: &ProfileState, time: &str) -> Option<Value> {
    let status = &profile["status"];
    let this = |r: &Value| r["kind"] == "SveltosCluster" && r["namespace"] == cluster.namespace() && r["name"] == cluster.name();
    let list = |field: &str| status[field].as_array().cloned().unwrap_or_default();
    let (old_matching, old_failed) = (list("matchingClusters"), list("failedClusters"));
    let mut matching: Vec<Value> = old_matching.iter().filter(|r| !this(r)).cloned().collect();
    if state.matching {
        let at = old_matching.iter().position(&this);
        // An entry written by someone else keeps its fields (uid, resourceVersion).
        let entry = at.map_or_else(|| reference(cluster), |i| old_matching[i].clone());
        matching.insert(at.unwrap_or(matching.len()).min(matching.len()), entry);
    }
    let mut failed = old_failed.clone();
    let at = old_failed.iter().position(|f| this(&f["clusterRef"]));
    match (&state.failure, at) {
        (Failure::Keep, _) | (Failure::Clear, None) => {}
        (Failure::Clear, Some(i)) => {
            failed.remove(i);
        }
        (Failure::Set(message), Some(i)) if old_failed[i]["failureMessage"] == message.as_str() => {}
        (Failure::Set(message), at) => {
            let entry = json!({"clusterRef": reference(cluster), "failureMessage": message, "lastFailureTime": time});
            match at {
                Some(i) => failed[i] = entry,
                None => failed.push(entry),
            }
        }
    }
    if matching == old_matching && failed == old_failed {
        return None;
    }
    Some(json!({"matchingClusters": matching, "failedClusters": failed}))
}

/// How Sveltos refers to a SveltosCluster in a profile's status.
fn reference(cluster: &ClusterId) -> Value {
    let [(resource, _), ..] = sveltos_kinds();
    json!({"apiVersion": resource.api_version, "kind": resource.kind, "namespace": cluster.namespace(), "name": cluster.name()})
}

#[cfg(test)]
mod tests {
    use super::super::configuration::ProfileRef;
    use super::*;

    fn state(matching: bool, failure: Failure) -> ProfileState {
        ProfileState { profile: ProfileRef::ClusterProfile("web".into()), matching, failure }
    }

    fn cluster(name: &str) -> ClusterId {
        format!("fleet/{name}").parse().unwrap()
    }

    #[test]
    fn adds_the_cluster_and_its_failure_keeping_the_other_clusters() {
        let other = reference(&cluster("b"));
        let profile = json!({"status": {"matchingClusters": [other.clone()]}});
        let failing = state(true, Failure::Set("ConfigMap apps/settings: forbidden".into()));
        let status = status(&profile, &cluster("a"), &failing, "2026-03-01T10:00:00Z").unwrap();
        assert_eq!(status["matchingClusters"], json!([other, reference(&cluster("a"))]));
        let failed = &status["failedClusters"][0];
        assert_eq!(
            (failed["clusterRef"]["name"].as_str(), failed["failureMessage"].as_str()),
            (Some("a"), Some("ConfigMap apps/settings: forbidden"))
        );
        assert_eq!(failed["lastFailureTime"], "2026-03-01T10:00:00Z");
    }

    #[test]
    fn writes_nothing_when_nothing_changes_and_clears_what_recovered() {
        let recorded = json!({"status": {
            "matchingClusters": [reference(&cluster("a"))],
            "failedClusters": [{"clusterRef": reference(&cluster("a")), "failureMessage": "boom", "lastFailureTime": "2026-03-01T10:00:00Z"}],
        }});
        let at = "2026-03-02T10:00:00Z";
        assert_eq!(status(&recorded, &cluster("a"), &state(true, Failure::Set("boom".into())), at), None, "the same failure");
        assert_eq!(status(&recorded, &cluster("a"), &state(true, Failure::Keep), at), None);
        let cleared = status(&recorded, &cluster("a"), &state(true, Failure::Clear), at).unwrap();
        assert_eq!(cleared, json!({"matchingClusters": [reference(&cluster("a"))], "failedClusters": []}));
        let gone = status(&recorded, &cluster("a"), &state(false, Failure::Clear), at).unwrap();
        assert_eq!(gone, json!({"matchingClusters": [], "failedClusters": []}));
    }
}
