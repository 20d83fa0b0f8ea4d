use airlock_bundle::vocabulary::{WAIT_ANNOTATION, WAIT_TIMEOUT_ANNOTATION};

use super::*;
use crate::engine::parse::helm_annotations::read_wait as read;
use serde_json::json;
use tokio::time::Duration;

fn pending(p: Progress) -> bool {
    matches!(p, Progress::Pending(_))
}

#[test]
fn a_deployment_is_ready_when_its_rollout_is_observed_updated_and_available() {
    let deployment = |generation: i64, observed: i64, updated: i64, available: i64| {
        json!({"metadata": {"generation": generation}, "spec": {"replicas": 4},
               "status": {"observedGeneration": observed, "updatedReplicas": updated, "availableReplicas": available}})
    };
    assert!(pending(progress("apps", "Deployment", &deployment(2, 1, 4, 4), false)), "an old generation's status");
    assert!(pending(progress("apps", "Deployment", &deployment(2, 2, 3, 4), false)), "one replica not updated");
    // The default maxUnavailable, 25 %, lets one of four be unavailable.
    assert_eq!(progress("apps", "Deployment", &deployment(2, 2, 4, 3), false), Progress::Done);
    assert!(pending(progress("apps", "Deployment", &deployment(2, 2, 4, 2), false)));
    let strict = json!({"metadata": {"generation": 1}, "spec": {"replicas": 4, "strategy": {"rollingUpdate": {"maxUnavailable": 0}}},
                        "status": {"observedGeneration": 1, "updatedReplicas": 4, "availableReplicas": 3}});
    assert_eq!(progress("apps", "Deployment", &strict, false), Progress::Pending("3 of 4 replicas available, 4 updated".into()));
    assert_eq!(progress("apps", "Deployment", &json!({"spec": {"paused": true}}), false), Progress::Done);
}

#[test]
fn sets_and_pods_count_ready_replicas() {
    let set = json!({"spec": {"replicas": 2, "updateStrategy": {"rollingUpdate": {"partition": 1}}},
                     "status": {"readyReplicas": 2, "updatedReplicas": 1}});
    assert_eq!(progress("apps", "StatefulSet", &set, false), Progress::Done);
    let daemons = |ready: i64| json!({"status": {"desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberReady": ready}});
    assert_eq!(progress("apps", "DaemonSet", &daemons(2), false), Progress::Done);
    assert!(pending(progress("apps", "DaemonSet", &daemons(1), false)));
    assert!(pending(progress("apps", "ReplicaSet", &json!({"spec": {"replicas": 1}, "status": {}}), false)));
    let pod = |phase: &str, ready: &str| json!({"status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}});
    assert_eq!(progress("", "Pod", &pod("Running", "True"), false), Progress::Done);
    assert_eq!(progress("", "Pod", &pod("Running", "False"), false), Progress::Pending("phase Running, not Ready".into()));
    assert_eq!(progress("", "Pod", &pod("Failed", "False"), false), Progress::Failed("phase Failed".into()));
}

#[test]
fn services_claims_and_jobs() {
    assert_eq!(progress("", "Service", &json!({"spec": {"clusterIP": "10.0.0.1"}}), false), Progress::Done);
    assert_eq!(progress("", "Service", &json!({"spec": {"type": "ExternalName"}}), false), Progress::Done);
    assert!(pending(progress("", "Service", &json!({"spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1"}}), false)));
    assert!(pending(progress("", "PersistentVolumeClaim", &json!({"status": {"phase": "Pending"}}), false)));
    assert_eq!(progress("", "PersistentVolumeClaim", &json!({"status": {"phase": "Bound"}}), false), Progress::Done);
    let running = json!({"status": {}});
    assert_eq!(progress("batch", "Job", &running, false), Progress::Done, "without jobs, a Job is done once applied");
    assert!(pending(progress("batch", "Job", &running, true)));
    let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
    assert_eq!(progress("batch", "Job", &failed, true), Progress::Failed("BackoffLimitExceeded".into()));
    assert_eq!(progress("example.com", "Widget", &running, true), Progress::Done);
}

#[test]
fn reads_and_refuses_wait_annotations() {
    let read_of = |annotations: Value, in_release: bool, hook: bool| read(annotations.as_object().unwrap(), in_release, hook);
    assert_eq!(read_of(json!({}), true, false), Ok(None));
    assert_eq!(read_of(json!({WAIT_ANNOTATION: "ready"}), true, false), Ok(Some(Wait { jobs: false, timeout: Duration::from_secs(300) })));
    assert_eq!(
        read_of(json!({WAIT_ANNOTATION: "ready-and-jobs", WAIT_TIMEOUT_ANNOTATION: "90"}), true, false),
        Ok(Some(Wait { jobs: true, timeout: Duration::from_secs(90) }))
    );
    let refused = [
        (json!({WAIT_ANNOTATION: "yes"}), true, false, WAIT_ANNOTATION),
        (json!({WAIT_ANNOTATION: "ready", WAIT_TIMEOUT_ANNOTATION: "0"}), true, false, WAIT_TIMEOUT_ANNOTATION),
        (json!({WAIT_TIMEOUT_ANNOTATION: "10"}), true, false, WAIT_TIMEOUT_ANNOTATION),
        (json!({WAIT_ANNOTATION: "ready"}), false, false, WAIT_ANNOTATION),
        (json!({WAIT_ANNOTATION: "ready"}), true, true, "hook"),
    ];
    for (annotations, in_release, hook, named) in refused {
        let error = read_of(annotations.clone(), in_release, hook).expect_err("refused");
        assert!(error.contains(named), "{annotations}: {error}");
    }
}
