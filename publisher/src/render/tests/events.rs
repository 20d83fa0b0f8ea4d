//! EventTriggers (bundles-format.md 5.14, 14.5): the EventSource a trigger names reaches
//! the bundles of the clusters it watches, and the EventReports ingest wrote become the
//! trigger's add-ons for that cluster: one part per event with `oneForEvent`, templated
//! over the event, and none once the event is gone.

use airlock_bundle::ClusterId;
use airlock_bundle::report::Collected;
use serde_json::json;

use super::*;
use crate::sources::event_report::report_object;

const TRIGGER: &str = "
apiVersion: lib.projectsveltos.io/v1beta1
kind: EventSource
metadata: {name: load-balancer-service}
spec:
  collectResources: true
  resourceSelectors:
  - {group: '', version: v1, kind: Service, evaluate: \"function evaluate() return {matching = obj.spec.type == 'LoadBalancer'} end\"}
---
apiVersion: lib.projectsveltos.io/v1beta1
kind: EventTrigger
metadata: {name: service-network-policy}
spec:
  sourceClusterSelector: {matchLabels: {region: eu}}
  eventSourceName: load-balancer-service
  oneForEvent: ONE
  policyRefs: [{name: network-policy, namespace: default, kind: ConfigMap}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: network-policy
  namespace: default
  annotations: {projectsveltos.io/instantiate: ok}
data:
  policy.yaml: |
    kind: NetworkPolicy
    apiVersion: networking.k8s.io/v1
    metadata:
      name: front-{{ .Resource.metadata.name }}
      namespace: {{ .Resource.metadata.namespace }}
    spec:
      podSelector:
        matchLabels:
          {{ range $key, $value := .Resource.spec.selector }}
          {{ $key }}: {{ $value }}
          {{ end }}
      ingress:
      - ports:
        {{ range $port := .Resource.spec.ports }}
        - port: {{ $port.port }}
        {{ end }}
";

fn service(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "web", "name": name},
           "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": [{"port": 80}]}})
}

/// The EventReport ingest writes for `services` on eu-1, as YAML.
fn report(services: &[serde_json::Value]) -> String {
    let eu = ClusterId::new("fleet", "eu-1").unwrap();
    let collected = Collected::of(services, true).unwrap();
    serde_json::to_string(&report_object(&eu, "load-balancer-service", &collected)).unwrap()
}

fn parts(r: &Rendered) -> Vec<&str> {
    r.settings.keys().map(String::as_str).collect()
}

#[test]
fn the_event_source_reaches_only_the_clusters_the_trigger_watches() {
    let w = world(&TRIGGER.replace("ONE", "true"));
    let eu = render_for(&w, "fleet/eu-1").unwrap();
    assert_eq!(eu.evaluations.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["load-balancer-service"]);
    assert!(eu.evaluations[0].collect_resources);
    assert!(render_for(&w, "fleet/us-1").unwrap().evaluations.is_empty());
    assert!(parts(&eu).is_empty(), "no event, no add-on");
}

#[test]
fn one_part_per_event_templated_over_the_event() {
    let w = world(&format!("{}---\n{}", TRIGGER.replace("ONE", "true"), report(&[service("a"), service("b")])));
    let eu = render_for(&w, "fleet/eu-1").unwrap();
    assert_eq!(eu.settings.len(), 2, "{:?}", parts(&eu));
    let texts: Vec<String> = eu.bundle.files().map(|(_, b)| String::from_utf8_lossy(b).into_owned()).collect();
    for name in ["a", "b"] {
        let policy = texts.iter().find(|t| t.contains(&format!("name: front-{name}"))).expect("a NetworkPolicy per Service");
        assert!(policy.contains("namespace: web") && policy.contains(&format!("app: {name}")) && policy.contains("port: 80"), "{policy}");
    }
    assert!(render_for(&w, "fleet/us-1").unwrap().settings.is_empty(), "the add-on goes to the cluster of the event alone");
    let again = world(&format!("{}---\n{}", TRIGGER.replace("ONE", "true"), report(&[service("b")])));
    let kept = render_for(&again, "fleet/eu-1").unwrap();
    assert_eq!(kept.settings.len(), 1, "a's event is gone, and its part with it");
    assert!(eu.settings.contains_key(parts(&kept)[0]), "b keeps the part it had");
}

#[test]
fn without_one_for_event_one_part_sees_every_object() {
    let trigger = TRIGGER.replace("ONE", "false").replace("front-{{ .Resource.metadata.name }}", "front-{{ len .MatchingResources }}");
    let trigger = trigger.replace("{{ .Resource.metadata.namespace }}", "{{ (index .Resources 0).metadata.namespace }}");
    let trigger = trigger.replace(".Resource.spec", "(index .Resources 1).spec");
    let w = world(&format!("{trigger}---\n{}", report(&[service("a"), service("b")])));
    let eu = render_for(&w, "fleet/eu-1").unwrap();
    assert_eq!(eu.settings.len(), 1, "{:?}", parts(&eu));
    let text: String = eu.bundle.files().map(|(_, b)| String::from_utf8_lossy(b).into_owned()).collect();
    assert!(text.contains("name: front-2") && text.contains("app: b"), "{text}");
}

#[test]
fn a_template_that_fails_names_the_trigger_instance_and_changes_only_its_part() {
    let broken =
        TRIGGER.replace("ONE", "true").replace("{{ .Resource.metadata.namespace }}", "{{ .Resource.metadata.namespace | nosuchfunction }}");
    let docs = yaml::parse_documents(&format!("{CLUSTERS}---\n{broken}---\n{}", report(&[service("a")]))).unwrap();
    let inv = Inventory::from_objects(docs.iter().map(|d| ("test".to_string(), d)));
    let res = Resources::found(docs.iter().filter_map(|d| ObjectKey::of(d).map(|k| (k, d.clone()))).collect());
    let eu = render_for(&(inv, res), "fleet/eu-1").unwrap();
    let failed = eu.failures.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join("\n");
    assert!(failed.contains("EventTrigger/service-network-policy") && failed.contains("ConfigMap default/network-policy"), "{failed}");
    assert!(failed.contains("nosuchfunction"), "{failed}");
    assert_eq!(eu.objects, 0, "nothing of the failed instance is rendered");
}

#[test]
fn an_instance_that_cannot_be_read_is_broken_naming_the_trigger() {
    let bad = TRIGGER.replace("ONE", "true").replace("kind: ConfigMap}]", "kind: ConfigMap}]\n  syncMode: Sometimes");
    let docs = yaml::parse_documents(&format!("{CLUSTERS}---\n{bad}---\n{}", report(&[service("a")]))).unwrap();
    let inv = Inventory::from_objects(docs.iter().map(|d| ("test".to_string(), d)));
    assert!(
        inv.broken.iter().any(|b| b.message.contains("EventTrigger/service-network-policy") && b.message.contains("syncMode")),
        "{:?}",
        inv.broken
    );
}

#[test]
fn reference_names_are_templates_over_the_event() {
    let trigger = TRIGGER
        .replace("ONE", "true")
        .replace("name: network-policy, namespace: default", "name: 'net-{{ .MatchingResource.name }}', namespace: default");
    let trigger = trigger.replace("  name: network-policy\n", "  name: net-a\n");
    let w = world(&format!("{trigger}---\n{}", report(&[service("a")])));
    let eu = render_for(&w, "fleet/eu-1").unwrap();
    assert!(eu.failures.is_empty(), "{:?}", eu.failures);
    let text: String = eu.bundle.files().map(|(_, b)| String::from_utf8_lossy(b).into_owned()).collect();
    assert!(text.contains("name: front-a"), "{text}");
}
