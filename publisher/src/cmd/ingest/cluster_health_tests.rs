use super::*;
use crate::sources::health_check::{LivenessCheck, Notification, NotificationKind};

fn check() -> ClusterHealthCheck {
    ClusterHealthCheck {
        name: "production".into(),
        selector: None,
        liveness: vec![
            LivenessCheck { name: "deployments".into(), kind: Liveness::HealthCheck("replicas".into()) },
            LivenessCheck { name: "addons".into(), kind: Liveness::Addons },
        ],
        notifications: vec![
            Notification { name: "event".into(), kind: NotificationKind::KubernetesEvent, secret: None },
            Notification { name: "teams".into(), kind: NotificationKind::Teams, secret: Some(("default".into(), "teams".into())) },
        ],
    }
}

fn cluster() -> ClusterId {
    ClusterId::new("fleet", "edge-1").unwrap()
}

fn facts(unhealthy: Option<&str>) -> Facts {
    Facts { health: BTreeMap::from([("replicas".to_string(), unhealthy.map(String::from))]), addon_failures: vec![] }
}

/// One round: what is decided on `facts` after `previous`, every notification delivered;
/// the entry recorded.
fn round(previous: &Value, facts: &Facts, now: &str) -> (Decision, Value) {
    let decision = decide(&check(), &cluster(), facts, previous, now);
    let sent = decision.send.iter().map(|n| (n.clone(), Ok(()))).collect();
    let recorded = entry(&check(), &cluster(), &decision, &sent, previous, "h");
    (decision, recorded)
}

#[test]
fn notifies_once_per_transition_not_once_per_report() {
    let (first, recorded) = round(&Value::Null, &facts(Some("Deployment: web/a status is Degraded\n")), "t1");
    assert_eq!((first.passing, first.send.clone()), (false, vec!["event".to_string(), "teams".to_string()]), "first judgement");
    assert!(
        first.message.contains("Liveness check \"HealthCheck:deployments\" failing\nDeployment: web/a status is Degraded"),
        "{}",
        first.message
    );
    let (again, recorded) = round(&recorded, &facts(Some("Deployment: web/a status is Degraded\n")), "t2");
    assert!(again.send.is_empty(), "still degraded: nothing sent");
    assert_eq!(again.conditions[0]["lastTransitionTime"], "t1", "no transition: the time stays");
    let (reworded, recorded) = round(&recorded, &facts(Some("Deployment: web/b status is Progressing\n")), "t3");
    assert!(reworded.send.is_empty(), "a new message alone is no transition");
    let (recovered, recorded) = round(&recorded, &facts(None), "t4");
    assert_eq!((recovered.passing, recovered.send.len()), (true, 2));
    assert!(recovered.message.ends_with("All liveness checks are passing"), "{}", recovered.message);
    assert_eq!(
        (recovered.conditions[0]["status"].clone(), recovered.conditions[0]["lastTransitionTime"].clone()),
        (json!("True"), json!("t4"))
    );
    assert!(recovered.conditions[0].get("message").is_none());
    let (quiet, _) = round(&recorded, &facts(None), "t5");
    assert!(quiet.send.is_empty(), "still healthy: nothing sent");
}

#[test]
fn a_failed_delivery_is_retried_and_only_it() {
    let decision = decide(&check(), &cluster(), &facts(Some("x")), &Value::Null, "t1");
    let sent = BTreeMap::from([("event".to_string(), Ok(())), ("teams".to_string(), Err("HTTP 500".to_string()))]);
    let recorded = entry(&check(), &cluster(), &decision, &sent, &Value::Null, "h");
    assert_eq!(recorded["notificationSummaries"][1], json!({"name": "teams", "status": "FailedToDeliver", "failureMessage": "HTTP 500"}));
    let next = decide(&check(), &cluster(), &facts(Some("x")), &recorded, "t2");
    assert_eq!(next.send, ["teams"]);
    let kept = entry(&check(), &cluster(), &next, &BTreeMap::from([("teams".to_string(), Ok(()))]), &recorded, "h");
    assert_eq!(kept["notificationSummaries"][0], json!({"name": "event", "status": "Delivered"}), "kept as recorded");
}

#[test]
fn a_health_check_without_report_fails_and_addons_fail_with_a_failing_profile() {
    let none = Facts { health: BTreeMap::new(), addon_failures: vec!["ClusterProfile/web: Deployment web/a: refused".into()] };
    let decision = decide(&check(), &cluster(), &none, &Value::Null, "t1");
    assert_eq!(decision.conditions[0]["message"], "no HealthCheckReport of HealthCheck replicas yet");
    assert_eq!(decision.conditions[1]["type"], "Addons:addons");
    assert_eq!(decision.conditions[1]["message"], "ClusterProfile/web: Deployment web/a: refused");
    assert_eq!(decision.conditions[1]["severity"], "Warning");
}

#[test]
fn an_entry_names_the_cluster_as_sveltos_does() {
    let (_, recorded) = round(&Value::Null, &facts(None), "t1");
    assert!(is_for(&recorded, &cluster()) && !is_for(&recorded, &ClusterId::new("fleet", "edge-2").unwrap()));
    assert_eq!(recorded["clusterInfo"]["status"], "Provisioned");
}
