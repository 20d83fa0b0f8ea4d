//! A HealthCheck ([`parse_health_check`]) as the evaluation a bundle carries
//! (bundles-format.md 5.14): its resource selectors read as a Classifier's, its
//! `evaluateHealth` as the aggregate script, which must parse as Lua here already (a
//! script that does not would make every puller carrying it refuse its bundle), and
//! `collectResources`. A ClusterHealthCheck ([`parse_cluster_health_check`]): its cluster
//! selector, liveness checks and notifications. What cannot be used is a [`ModelError`]
//! naming the object and the field; such an object is carried to no cluster.

use airlock_bundle::statement::{Evaluation, EvaluationKind};
use airlock_lua::{LuaBudget, LuaSource, check_health_syntax};
use serde_json::Value;

use super::classifier::selector;
use super::reader::{Fields, Metadata, check_version};
use crate::sources::health_check::{ClusterHealthCheck, Liveness, LivenessCheck, Notification, NotificationKind};
use crate::sources::model::{CLUSTER_GROUP, ModelError};
use crate::sources::selector::Selector;

/// Parses a HealthCheck object into its evaluation.
pub fn parse_health_check(value: &Value) -> Result<Evaluation, ModelError> {
    let meta = Metadata::of(value, "HealthCheck")?;
    let name = meta.name.to_string();
    let object = format!("HealthCheck/{name}");
    check_version(value, &object)?;
    let spec = Fields::of(&value["spec"], "spec", &object)?;
    let selectors = spec.items("resourceSelectors")?.iter().map(|(_, s)| selector(s)).collect::<Result<_, _>>()?;
    let script: String = spec.or_default("evaluateHealth")?;
    if script.is_empty() {
        return Err(spec.error("evaluateHealth", "is empty: a HealthCheck needs the script that judges health".into()));
    }
    let source = LuaSource { profile: &object, resource: "spec", key: "evaluateHealth" };
    check_health_syntax(&source, &script, &LuaBudget::DEFAULT).map_err(|e| spec.error("evaluateHealth", e.to_string()))?;
    let collect_resources = spec.or_default("collectResources")?;
    Ok(Evaluation { kind: EvaluationKind::HealthCheck, name, selectors, aggregate: Some(script), collect_resources })
}

/// Parses a ClusterHealthCheck object.
pub fn parse_cluster_health_check(value: &Value) -> Result<ClusterHealthCheck, ModelError> {
    let meta = Metadata::of(value, "ClusterHealthCheck")?;
    let name = meta.name.to_string();
    let object = format!("ClusterHealthCheck/{name}");
    check_version(value, &object)?;
    let spec = Fields::of(&value["spec"], "spec", &object)?;
    let selector = match spec.raw("clusterSelector") {
        Value::Null => None,
        raw => Selector::parse(raw).map_err(|m| spec.error("clusterSelector", m))?,
    };
    let mut liveness = Vec::new();
    for (_, check) in spec.items("livenessChecks")? {
        let check_name: String = check.or_default("name")?;
        if check_name.is_empty() {
            return Err(check.error("name", "is empty".into()));
        }
        let kind = match check.or_default::<String>("type")?.as_str() {
            "Addons" => Liveness::Addons,
            "HealthCheck" => {
                let source = check.nested("livenessSourceRef")?;
                let (api, kind, target): (String, String, String) =
                    (source.or_default("apiVersion")?, source.or_default("kind")?, source.or_default("name")?);
                if kind != "HealthCheck" || api != format!("{CLUSTER_GROUP}/v1beta1") || target.is_empty() {
                    return Err(check.error("livenessSourceRef", format!("must name a {CLUSTER_GROUP}/v1beta1 HealthCheck")));
                }
                Liveness::HealthCheck(target)
            }
            other => return Err(check.error("type", format!("{other:?} is neither Addons nor HealthCheck"))),
        };
        liveness.push(LivenessCheck { name: check_name, kind });
    }
    let mut notifications = Vec::new();
    for (_, n) in spec.items("notifications")? {
        let notification_name: String = n.or_default("name")?;
        if notification_name.is_empty() {
            return Err(n.error("name", "is empty".into()));
        }
        let kind = match n.or_default::<String>("type")?.as_str() {
            "KubernetesEvent" => NotificationKind::KubernetesEvent,
            "Teams" => NotificationKind::Teams,
            other => NotificationKind::Other(other.to_string()),
        };
        let secret = match n.raw("notificationRef") {
            Value::Null => None,
            _ => {
                let r = n.nested("notificationRef")?;
                let (api, kind): (String, String) = (r.or_default("apiVersion")?, r.or_default("kind")?);
                if api != "v1" || kind != "Secret" {
                    return Err(n.error("notificationRef", "must name a v1 Secret".into()));
                }
                Some((r.or_default("namespace")?, r.or_default("name")?))
            }
        };
        notifications.push(Notification { name: notification_name, kind, secret });
    }
    Ok(ClusterHealthCheck { name, selector, liveness, notifications })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::yaml;

    fn doc(text: &str) -> Value {
        yaml::parse_documents(text).unwrap().remove(0)
    }

    const HEALTH: &str = "apiVersion: lib.projectsveltos.io/v1beta1
kind: HealthCheck
metadata: {name: deployment-replicas}
spec:
  collectResources: true
  resourceSelectors:
  - {group: apps, version: v1, kind: Deployment, namespace: web}
  evaluateHealth: |
    function evaluate()
      return {}
    end
";

    #[test]
    fn reads_a_health_check_as_an_evaluation() {
        let e = parse_health_check(&doc(HEALTH)).unwrap();
        assert_eq!((e.kind, e.name.as_str(), e.collect_resources), (EvaluationKind::HealthCheck, "deployment-replicas", true));
        assert_eq!((e.selectors[0].objects.kind.as_str(), e.selectors[0].objects.namespace.as_deref()), ("Deployment", Some("web")));
        assert!(e.aggregate.unwrap().contains("function evaluate()"));
    }

    #[test]
    fn refuses_lua_that_does_not_parse_naming_the_object_and_field() {
        let broken = HEALTH.replace("return {}", "return {");
        let err = parse_health_check(&doc(&broken)).unwrap_err().to_string();
        assert!(err.contains("HealthCheck/deployment-replicas") && err.contains("spec.evaluateHealth"), "{err}");
        let empty = HEALTH.split("  evaluateHealth").next().unwrap().to_string();
        let err = parse_health_check(&doc(&empty)).unwrap_err().to_string();
        assert!(err.contains("spec.evaluateHealth") && err.contains("is empty"), "{err}");
    }

    const CLUSTER: &str = "apiVersion: lib.projectsveltos.io/v1beta1
kind: ClusterHealthCheck
metadata: {name: production}
spec:
  clusterSelector: {matchLabels: {env: production}}
  livenessChecks:
  - {name: deployments, type: HealthCheck, livenessSourceRef: {kind: HealthCheck, apiVersion: lib.projectsveltos.io/v1beta1, name: deployment-replicas}}
  - {name: addons, type: Addons}
  notifications:
  - {name: event, type: KubernetesEvent}
  - {name: teams, type: Teams, notificationRef: {apiVersion: v1, kind: Secret, name: teams, namespace: default}}
  - {name: slack, type: Slack, notificationRef: {apiVersion: v1, kind: Secret, name: slack, namespace: default}}
";

    #[test]
    fn reads_a_cluster_health_check() {
        let c = parse_cluster_health_check(&doc(CLUSTER)).unwrap();
        assert_eq!(c.health_checks().collect::<Vec<_>>(), ["deployment-replicas"]);
        assert_eq!(c.liveness[1], LivenessCheck { name: "addons".into(), kind: Liveness::Addons });
        assert_eq!(c.liveness[0].condition_type(), "HealthCheck:deployments");
        let kinds: Vec<_> = c.notifications.iter().map(|n| n.kind.clone()).collect();
        assert_eq!(kinds, [NotificationKind::KubernetesEvent, NotificationKind::Teams, NotificationKind::Other("Slack".into())]);
        assert_eq!(c.notifications[1].secret, Some(("default".into(), "teams".into())));
        let production = BTreeMap::from([("env".to_string(), "production".to_string())]);
        assert!(c.selects(&production) && !c.selects(&BTreeMap::new()));
    }

    #[test]
    fn refuses_a_cluster_health_check_it_cannot_use_naming_the_field() {
        for (from, to, field) in [
            ("type: HealthCheck,", "type: Pods,", "spec.livenessChecks[0].type"),
            ("kind: HealthCheck, apiVersion", "kind: Classifier, apiVersion", "spec.livenessChecks[0].livenessSourceRef"),
            (
                "apiVersion: v1, kind: Secret, name: teams",
                "apiVersion: v1, kind: ConfigMap, name: teams",
                "spec.notifications[1].notificationRef",
            ),
            ("{matchLabels: {env: production}}", "{matchExpressions: [{key: env, operator: Near}]}", "spec.clusterSelector"),
        ] {
            let err = parse_cluster_health_check(&doc(&CLUSTER.replace(from, to))).unwrap_err().to_string();
            assert!(err.contains("ClusterHealthCheck/production") && err.contains(field), "{to}: {err}");
        }
    }
}
