//! The HealthChecks a pull-mode cluster's bundle carries (bundles-format.md 5.14): those
//! the ClusterHealthChecks selecting the cluster name, each once, after the Classifiers;
//! none for a cluster no ClusterHealthCheck selects, and none that cannot be read.

use super::*;
use airlock_bundle::statement::EvaluationKind;

const HEALTH: &str = "
apiVersion: lib.projectsveltos.io/v1beta1
kind: HealthCheck
metadata: {name: replicas}
spec:
  resourceSelectors: [{group: apps, version: v1, kind: Deployment}]
  evaluateHealth: 'function evaluate() return {} end'
---
apiVersion: lib.projectsveltos.io/v1beta1
kind: HealthCheck
metadata: {name: nodes}
spec:
  resourceSelectors: [{group: '', version: v1, kind: Node}]
  evaluateHealth: 'function evaluate() return {} end'
---
apiVersion: lib.projectsveltos.io/v1beta1
kind: ClusterHealthCheck
metadata: {name: eu}
spec:
  clusterSelector: {matchLabels: {region: eu}}
  livenessChecks:
  - {name: a, type: HealthCheck, livenessSourceRef: {apiVersion: lib.projectsveltos.io/v1beta1, kind: HealthCheck, name: replicas}}
  - {name: b, type: HealthCheck, livenessSourceRef: {apiVersion: lib.projectsveltos.io/v1beta1, kind: HealthCheck, name: nodes}}
  - {name: c, type: Addons}
---
apiVersion: lib.projectsveltos.io/v1beta1
kind: ClusterHealthCheck
metadata: {name: everywhere-eu}
spec:
  clusterSelector: {matchExpressions: [{key: region, operator: In, values: [eu]}]}
  livenessChecks:
  - {name: a, type: HealthCheck, livenessSourceRef: {apiVersion: lib.projectsveltos.io/v1beta1, kind: HealthCheck, name: replicas}}
  - {name: gone, type: HealthCheck, livenessSourceRef: {apiVersion: lib.projectsveltos.io/v1beta1, kind: HealthCheck, name: missing}}
";

const CLASSIFIER: &str = "
apiVersion: lib.projectsveltos.io/v1beta1
kind: Classifier
metadata: {name: zz-last-by-name}
spec: {classifierLabels: [{key: a, value: b}]}
";

#[test]
fn a_cluster_carries_the_health_checks_of_the_cluster_health_checks_selecting_it() {
    let w = world(&format!("{HEALTH}---\n{CLASSIFIER}"));
    let eu = render_for(&w, "fleet/eu-1").unwrap();
    let carried: Vec<(EvaluationKind, &str)> = eu.evaluations.iter().map(|e| (e.kind, e.name.as_str())).collect();
    assert_eq!(
        carried,
        [
            (EvaluationKind::Classifier, "zz-last-by-name"),
            (EvaluationKind::HealthCheck, "nodes"),
            (EvaluationKind::HealthCheck, "replicas")
        ],
        "kind then name, each once, a missing one skipped"
    );
    assert_eq!(eu.evaluations[2].aggregate.as_deref(), Some("function evaluate() return {} end"));
    let us = render_for(&w, "fleet/us-1").unwrap();
    assert_eq!(us.evaluations.iter().map(|e| e.kind).collect::<Vec<_>>(), [EvaluationKind::Classifier], "selected by none");
}

#[test]
fn a_health_check_whose_lua_does_not_parse_is_carried_to_no_cluster() {
    let broken = HEALTH.replacen("'function evaluate() return {} end'", "'function evaluate( return'", 1);
    let docs = yaml::parse_documents(&format!("{CLUSTERS}---\n{broken}")).unwrap();
    let inv = Inventory::from_objects(docs.iter().map(|d| ("test".to_string(), d)));
    assert_eq!(inv.health_checks.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["nodes"]);
    let found = inv.broken.iter().find(|b| b.message.contains("HealthCheck/replicas")).expect("named");
    assert!(found.message.contains("spec.evaluateHealth"), "{}", found.message);
}
