//! An EventSource ([`parse_event_source`]) as the evaluation a bundle carries
//! (bundles-format.md 5.14): its resource selectors read as a Classifier's, its
//! `aggregatedSelection` and `collectResources` carried as written. And an EventTrigger
//! ([`parse_event_trigger`]): which clusters it watches and which EventSource it names.
//! `messagingMatchCriteria` (CloudEvents over Sveltos's NATS link) cannot reach a
//! pull-mode cluster: an EventSource that sets it is refused, naming the field, rather
//! than carried as a source that never fires.

use airlock_bundle::statement::{Evaluation, EvaluationKind};
use serde_json::Value;

use super::classifier::selector;
use super::reader::{Fields, Metadata, check_version};
use crate::sources::event_trigger::EventTrigger;
use crate::sources::model::ModelError;
use crate::sources::selector::Selector;

/// Parses an EventSource object into the evaluation its watching clusters carry.
pub fn parse_event_source(value: &Value) -> Result<Evaluation, ModelError> {
    let meta = Metadata::of(value, "EventSource")?;
    let name = meta.name.to_string();
    let object = format!("EventSource/{name}");
    check_version(value, &object)?;
    let spec = Fields::of(&value["spec"], "spec", &object)?;
    if !spec.items("messagingMatchCriteria")?.is_empty() {
        return Err(spec.error(
            "messagingMatchCriteria",
            "CloudEvents travel over Sveltos's NATS link, which a pull-mode cluster does not have".into(),
        ));
    }
    let selectors = spec.items("resourceSelectors")?.iter().map(|(_, s)| selector(s)).collect::<Result<_, _>>()?;
    let aggregate = spec.get::<String>("aggregatedSelection")?.filter(|s| !s.is_empty());
    let collect_resources = spec.or_default("collectResources")?;
    Ok(Evaluation { kind: EvaluationKind::EventSource, name, selectors, aggregate, collect_resources })
}

/// Parses an EventTrigger object.
pub fn parse_event_trigger(value: &Value) -> Result<EventTrigger, ModelError> {
    let meta = Metadata::of(value, "EventTrigger")?;
    let name = meta.name.to_string();
    let object = format!("EventTrigger/{name}");
    check_version(value, &object)?;
    let spec = Fields::of(&value["spec"], "spec", &object)?;
    let event_source: String = spec.or_default("eventSourceName")?;
    if event_source.is_empty() {
        return Err(spec.error("eventSourceName", "names no EventSource".into()));
    }
    let selector = match spec.raw("sourceClusterSelector") {
        Value::Null => None,
        raw => Selector::parse(raw).map_err(|m| spec.error("sourceClusterSelector", m))?,
    };
    for field in ["destinationClusterSelector", "destinationCluster"] {
        if !spec.raw(field).is_null() {
            return Err(
                spec.error(field, "add-ons for another cluster than the one the event happened in are not supported in pull mode".into())
            );
        }
    }
    Ok(EventTrigger {
        name,
        event_source,
        selector,
        set_refs: spec.or_default("clusterSetRefs")?,
        one_for_event: spec.or_default("oneForEvent")?,
        object: value.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn doc(text: &str) -> Value {
        yaml::parse_documents(text).unwrap().remove(0)
    }

    #[test]
    fn reads_the_documented_load_balancer_event_source() {
        let e = parse_event_source(&doc("apiVersion: lib.projectsveltos.io/v1beta1
kind: EventSource
metadata: {name: load-balancer-service}
spec:
  collectResources: true
  resourceSelectors:
  - group: ''
    version: v1
    kind: Service
    evaluate: |
      function evaluate()
        hs = {}
        hs.matching = obj.spec.type == 'LoadBalancer'
        return hs
      end
"))
        .unwrap();
        assert_eq!((e.kind, e.name.as_str(), e.collect_resources), (EvaluationKind::EventSource, "load-balancer-service", true));
        assert_eq!(e.selectors[0].objects.kind, "Service");
        assert!(e.selectors[0].script.as_deref().unwrap().contains("LoadBalancer"));
    }

    #[test]
    fn refuses_what_a_pull_mode_cluster_cannot_do_naming_the_field() {
        let err = parse_event_source(&doc(
            "apiVersion: lib.projectsveltos.io/v1beta1\nkind: EventSource\nmetadata: {name: e}\nspec:\n  messagingMatchCriteria: [{subject: a}]\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("EventSource/e") && err.contains("spec.messagingMatchCriteria"), "{err}");
        let trigger = "apiVersion: lib.projectsveltos.io/v1beta1\nkind: EventTrigger\nmetadata: {name: t}\nspec:\n  eventSourceName: e\n";
        let err = parse_event_trigger(&doc(&format!("{trigger}  destinationCluster: {{name: other}}\n"))).unwrap_err().to_string();
        assert!(err.contains("EventTrigger/t") && err.contains("spec.destinationCluster"), "{err}");
        let err = parse_event_trigger(&doc(&trigger.replace("eventSourceName: e", "oneForEvent: true"))).unwrap_err().to_string();
        assert!(err.contains("spec.eventSourceName"), "{err}");
    }

    #[test]
    fn reads_which_clusters_a_trigger_watches() {
        let t = parse_event_trigger(&doc("apiVersion: lib.projectsveltos.io/v1beta1
kind: EventTrigger
metadata: {name: service-network-policy}
spec:
  sourceClusterSelector: {matchLabels: {env: fv}}
  clusterSetRefs: [edge]
  eventSourceName: load-balancer-service
  oneForEvent: true
  policyRefs: [{name: network-policy, namespace: default, kind: ConfigMap}]
"))
        .unwrap();
        assert_eq!(
            (t.event_source.as_str(), t.one_for_event, t.set_refs.as_slice()),
            ("load-balancer-service", true, &["edge".to_string()][..])
        );
        assert_eq!(t.selector.unwrap().query(), "env=fv");
    }
}
