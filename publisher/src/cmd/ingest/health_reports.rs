//! The HealthCheckReports a verified report makes (bundles-format.md 14.5), as Sveltos's
//! agent sends them to the management cluster: one per HealthCheck the cluster's puller
//! evaluated, `<type>--<healthcheck>--<cluster>` in the cluster's namespace, labelled as
//! libsveltos labels them so `sveltosctl` and the healthcheck-manager find them. Pure:
//! `health_target` reads what it needs and writes what this makes.
//!
//! Only a result of the HealthCheck's current definition without error is written: a
//! result of a definition since changed, or an error, says nothing, and the report kept
//! stays. A report of a HealthCheck the cluster no longer carries is stale and deleted,
//! as Sveltos removes it.

use airlock_bundle::ClusterId;
use airlock_bundle::report::{Evaluated, HealthStatus, ResourceHealth};
use airlock_bundle::statement::{Evaluation, EvaluationKind};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// Labels of a HealthCheckReport, as libsveltos names them.
pub const HEALTH_CHECK_NAME_LABEL: &str = "projectsveltos.io/healthcheck-name";
pub const REPORT_CLUSTER_NAME_LABEL: &str = "healthcheckreport.projectsveltos.io/cluster-name";
pub const REPORT_CLUSTER_TYPE_LABEL: &str = "healthcheckreport.projectsveltos.io/cluster-type";
/// The cluster type in the report's spec; its labels and name carry it in lower case.
const CLUSTER_TYPE: &str = "Sveltos";

/// `sveltos--<healthcheck>--<cluster name>`, as libsveltos names a report.
pub fn report_name(health_check: &str, cluster: &ClusterId) -> String {
    format!("{}--{health_check}--{}", CLUSTER_TYPE.to_lowercase(), cluster.name())
}

/// The label selector of every HealthCheckReport of `cluster` in its namespace.
pub fn reports_selector(cluster: &ClusterId) -> String {
    format!("{REPORT_CLUSTER_NAME_LABEL}={},{REPORT_CLUSTER_TYPE_LABEL}={}", cluster.name(), CLUSTER_TYPE.to_lowercase())
}

/// The HealthCheckReports `evaluated` (a report's results) makes for `cluster`, given the
/// HealthChecks it carries (`carried`): one per current result, whole.
pub fn reports(cluster: &ClusterId, carried: &[&Evaluation], evaluated: &[Evaluated]) -> Vec<Value> {
    carried
        .iter()
        .filter_map(|definition| {
            let digest = definition.digest();
            let result = evaluated.iter().find(|e| {
                e.kind == EvaluationKind::HealthCheck && e.name == definition.name && e.definition == digest && e.error.is_none()
            })?;
            Some(report_object(cluster, &definition.name, &ResourceHealth::bounded(result.health.as_deref().unwrap_or_default())))
        })
        .collect()
}

/// The HealthCheckReport of `health_check` on `cluster` saying `health`.
pub fn report_object(cluster: &ClusterId, health_check: &str, health: &[ResourceHealth]) -> Value {
    let statuses: Vec<Value> = health
        .iter()
        .map(|h| {
            let mut reference = json!({"apiVersion": h.api_version, "kind": h.kind, "name": h.name});
            if let Some(namespace) = &h.namespace {
                reference["namespace"] = json!(namespace);
            }
            let mut status = json!({"objectRef": reference, "healthStatus": h.status.name()});
            if let Some(message) = &h.message {
                status["message"] = json!(message);
            }
            if let Some(resource) = &h.resource {
                let bytes = serde_json::to_vec(resource).expect("a JSON value serialises");
                status["resource"] = json!(STANDARD.encode(bytes));
            }
            status
        })
        .collect();
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1",
        "kind": "HealthCheckReport",
        "metadata": {
            "name": report_name(health_check, cluster),
            "namespace": cluster.namespace(),
            "labels": {
                HEALTH_CHECK_NAME_LABEL: health_check,
                REPORT_CLUSTER_NAME_LABEL: cluster.name(),
                REPORT_CLUSTER_TYPE_LABEL: CLUSTER_TYPE.to_lowercase(),
            },
        },
        "spec": {
            "clusterName": cluster.name(),
            "clusterNamespace": cluster.namespace(),
            "clusterType": CLUSTER_TYPE,
            "healthCheckName": health_check,
            "resourceStatuses": statuses,
        },
    })
}

/// The HealthCheck a kept report is of.
pub fn health_check_of(report: &Value) -> Option<&str> {
    report["spec"]["healthCheckName"].as_str().or_else(|| report["metadata"]["labels"][HEALTH_CHECK_NAME_LABEL].as_str())
}

/// What a kept report says for a liveness check: `None` when all is healthy, else what is
/// not, one line per object, as Sveltos words it.
pub fn unhealthy(report: &Value) -> Option<String> {
    let mut message = String::new();
    for status in report["spec"]["resourceStatuses"].as_array().into_iter().flatten() {
        let health = status["healthStatus"].as_str().unwrap_or_default();
        if HealthStatus::parse(health) == Some(HealthStatus::Healthy) {
            continue;
        }
        let r = &status["objectRef"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        message.push_str(&format!("{}: {}/{} status is {health}\n", text(&r["kind"]), text(&r["namespace"]), text(&r["name"])));
        if let Some(said) = status["message"].as_str().filter(|m| !m.is_empty()) {
            message.push_str(&format!("Message: {said}\n"));
        }
    }
    (!message.is_empty()).then_some(message)
}

#[cfg(test)]
mod tests {
    use airlock_bundle::report::Collector;

    use super::*;

    fn definition(name: &str) -> Evaluation {
        Evaluation {
            kind: EvaluationKind::HealthCheck,
            name: name.into(),
            selectors: vec![],
            aggregate: Some("x".into()),
            collect_resources: true,
        }
    }

    fn deployment(name: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "web"}})
    }

    fn result(of: &Evaluation, health: Vec<ResourceHealth>) -> Evaluated {
        Evaluated { health: Some(health), ..Evaluated::of(of, Ok((false, String::new()))) }
    }

    #[test]
    fn writes_a_report_per_current_result_named_and_labelled_as_sveltos_does() {
        let cluster = ClusterId::new("fleet", "edge-1").unwrap();
        let (current, changed) = (definition("replicas"), definition("nodes"));
        let mut collector = Collector::default();
        let degraded = ResourceHealth::judged(&deployment("a"), HealthStatus::Degraded, "1 of 2".into(), Some(&mut collector));
        let stale = Evaluated { definition: definition("other").digest(), ..result(&changed, vec![]) };
        let failed = Evaluated::of(&changed, Err("forbidden".into()));
        let written = reports(&cluster, &[&current, &changed], &[result(&current, vec![degraded]), stale, failed]);
        assert_eq!(written.len(), 1, "a stale or failed result writes nothing");
        let r = &written[0];
        assert_eq!(r["metadata"]["name"], "sveltos--replicas--edge-1");
        assert_eq!(r["metadata"]["labels"][HEALTH_CHECK_NAME_LABEL], "replicas");
        assert_eq!(r["metadata"]["labels"][REPORT_CLUSTER_TYPE_LABEL], "sveltos");
        assert_eq!(r["spec"]["clusterType"], "Sveltos");
        let status = &r["spec"]["resourceStatuses"][0];
        assert_eq!((status["healthStatus"].clone(), status["objectRef"]["namespace"].clone()), (json!("Degraded"), json!("web")));
        let collected = STANDARD.decode(status["resource"].as_str().unwrap()).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&collected).unwrap()["metadata"]["name"], "a");
        assert_eq!(health_check_of(r), Some("replicas"));
        assert_eq!(unhealthy(r).unwrap(), "Deployment: web/a status is Degraded\nMessage: 1 of 2\n");
    }

    #[test]
    fn a_report_of_healthy_objects_says_nothing_unhealthy() {
        let cluster = ClusterId::new("fleet", "edge-1").unwrap();
        let healthy = ResourceHealth::judged(&deployment("a"), HealthStatus::Healthy, String::new(), None);
        assert_eq!(unhealthy(&report_object(&cluster, "replicas", &[healthy])), None);
        assert_eq!(unhealthy(&report_object(&cluster, "replicas", &[])), None, "nothing judged is nothing unhealthy");
    }
}
