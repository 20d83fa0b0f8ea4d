//! What a verified report means for the cluster's EventReports (bundles-format.md 14.5),
//! the objects Sveltos's event-manager reads to deploy an EventTrigger's add-ons: one
//! `sveltos--<eventsource>--<cluster>` per EventSource whose event is happening on the
//! cluster, in the cluster's namespace, with the labels and fields Sveltos's agent gives
//! the copy it sends to the management cluster. Pure: `event_target` reads the current
//! EventSources and the EventReports kept, and writes what this decides.
//!
//! A result counts only when it names the EventSource's current definition, has no
//! error and carries its objects within the bounds: the event is happening when it
//! matched, and is gone when it did not. Anything less leaves the EventReport as it was.
//! An EventReport kept for an EventSource of which a report that evaluated something has
//! no result is deleted: its cluster no longer carries that EventSource (no EventTrigger
//! watching the cluster names it, or it was deleted).

use std::collections::{BTreeMap, BTreeSet};

use airlock_bundle::ClusterId;
use airlock_bundle::Digest;
use airlock_bundle::report::Evaluated;
use airlock_bundle::statement::EvaluationKind;
use serde_json::Value;

use crate::sources::event_report::{report_name, report_object};

/// What a report changes for the cluster's EventReports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Events {
    /// EventReports to write, whole.
    pub write: Vec<Value>,
    /// Names of EventReports to delete.
    pub delete: Vec<String>,
}

/// Decides what `evaluated` (a report's results) means for `cluster`, given the current
/// EventSources' definitions by name (`current`) and the EventSource names of the
/// EventReports kept (`kept`).
pub fn decide(cluster: &ClusterId, evaluated: &[Evaluated], current: &BTreeMap<String, Digest>, kept: &BTreeSet<String>) -> Events {
    let mut out = Events::default();
    let mut reported = BTreeSet::new();
    for result in evaluated.iter().filter(|r| r.kind == EvaluationKind::EventSource) {
        reported.insert(result.name.as_str());
        if current.get(&result.name) != Some(&result.definition) || result.error.is_some() {
            continue;
        }
        let Some(collected) = &result.collected else { continue };
        if let Err(why) = collected.check() {
            tracing::warn!("{cluster}: the result of EventSource {:?} is refused: {why}", result.name);
            continue;
        }
        if collected.matching_resources.is_empty() {
            if kept.contains(&result.name) {
                out.delete.push(report_name(&result.name, cluster));
            }
        } else {
            out.write.push(report_object(cluster, &result.name, collected));
        }
    }
    if !evaluated.is_empty() {
        out.delete.extend(kept.iter().filter(|k| !reported.contains(k.as_str())).map(|k| report_name(k, cluster)));
    }
    out.delete.sort();
    out
}

#[cfg(test)]
mod tests {
    use airlock_bundle::report::Collected;
    use airlock_bundle::statement::Evaluation;

    use serde_json::json;

    use super::*;
    use crate::sources::event_report::{EVENT_SOURCE_NAME_LABEL, REPORT_CLUSTER_TYPE_LABEL, collected_of};

    fn source(name: &str) -> Evaluation {
        Evaluation { kind: EvaluationKind::EventSource, name: name.into(), selectors: vec![], aggregate: None, collect_resources: true }
    }

    fn service(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "web", "name": name}, "spec": {"type": "LoadBalancer"}})
    }

    fn cluster() -> ClusterId {
        ClusterId::new("fleet", "edge-1").unwrap()
    }

    fn current(sources: &[&Evaluation]) -> BTreeMap<String, Digest> {
        sources.iter().map(|e| (e.name.clone(), e.digest())).collect()
    }

    #[test]
    fn writes_the_event_report_sveltos_reads() {
        let lb = source("lb");
        let result = Evaluated::event(&lb, Ok((Collected::of(&[service("a")], true).unwrap(), String::new())));
        let out = decide(&cluster(), &[result], &current(&[&lb]), &BTreeSet::new());
        assert!(out.delete.is_empty());
        let report = &out.write[0];
        assert_eq!(report["metadata"]["name"], "sveltos--lb--edge-1");
        assert_eq!(report["metadata"]["namespace"], "fleet");
        assert_eq!(report["metadata"]["labels"][REPORT_CLUSTER_TYPE_LABEL], "sveltos");
        assert_eq!(report["metadata"]["labels"][EVENT_SOURCE_NAME_LABEL], "lb");
        assert_eq!(report["spec"]["matchingResources"], json!([{"apiVersion": "v1", "kind": "Service", "namespace": "web", "name": "a"}]));
        assert_eq!(report["spec"]["clusterType"], "Sveltos");
        assert_eq!(collected_of(report), vec![service("a")]);
    }

    #[test]
    fn deletes_the_report_when_the_event_is_gone_or_no_longer_carried() {
        let (lb, old) = (source("lb"), source("old"));
        let kept: BTreeSet<String> = ["lb".to_string(), "old".to_string()].into();
        let none = Evaluated::event(&lb, Ok((Collected::of(&[], false).unwrap(), String::new())));
        let out = decide(&cluster(), &[none], &current(&[&lb, &old]), &kept);
        assert_eq!((out.write.len(), out.delete), (0, vec!["sveltos--lb--edge-1".to_string(), "sveltos--old--edge-1".to_string()]));
        assert_eq!(decide(&cluster(), &[], &current(&[&lb]), &kept), Events::default(), "a run that evaluated nothing says nothing");
    }

    #[test]
    fn a_result_of_another_definition_an_error_or_beyond_the_bounds_changes_nothing() {
        let lb = source("lb");
        let kept: BTreeSet<String> = ["lb".to_string()].into();
        let changed = Evaluation { aggregate: Some("function evaluate() end".into()), ..lb.clone() };
        let stale = Evaluated::event(&changed, Ok((Collected::of(&[], false).unwrap(), String::new())));
        let failed = Evaluated::event(&lb, Err("listing v1 Service: forbidden".into()));
        let mut oversized = Evaluated::event(&lb, Ok((Collected::of(&[service("a")], false).unwrap(), String::new())));
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "eA=="}});
        oversized.collected.as_mut().unwrap().resources = vec![secret];
        for result in [stale, failed, oversized] {
            assert_eq!(decide(&cluster(), &[result], &current(&[&lb]), &kept), Events::default());
        }
    }
}
