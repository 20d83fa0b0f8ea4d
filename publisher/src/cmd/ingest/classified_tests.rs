use airlock_bundle::statement::{Evaluation, Selection, Selector};

use super::*;
use crate::sources::classifier::{Comparison, VersionConstraint};

fn classifier(name: &str, labels: &[(&str, &str)], lists: bool) -> Classifier {
    let selectors = if lists {
        let objects = Selection { label_selector: "sveltos=fv".into(), ..Selection::every("", "v1", "Service") };
        vec![Selector { objects, script: None, cel: vec![] }]
    } else {
        vec![]
    };
    Classifier {
        name: name.into(),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        versions: vec![],
        evaluation: Evaluation {
            kind: EvaluationKind::Classifier,
            name: name.into(),
            selectors,
            aggregate: None,
            collect_resources: false,
        },
    }
}

fn found(c: &Classifier, matched: bool) -> Evaluated {
    Evaluated::of(&c.evaluation, Ok((matched, String::new())))
}

fn kept(entries: &[(&str, bool, &[&str])]) -> BTreeMap<String, Kept> {
    entries.iter().map(|(n, m, l)| (n.to_string(), Kept { matched: *m, managed: l.iter().map(|k| k.to_string()).collect() })).collect()
}

fn labels(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn a_match_labels_the_cluster_and_records_the_managed_key() {
    let c = classifier("sveltos-service", &[("sveltos-service", "present")], true);
    let out = classify(std::slice::from_ref(&c), &[found(&c, true)], Some("v1.20.2"), &BTreeMap::new(), &labels(&[("env", "prod")]));
    assert_eq!(out.labels, BTreeMap::from([("sveltos-service".to_string(), Some("present".to_string()))]));
    assert_eq!(
        out.pairs,
        vec![Pair { classifier: c.name.clone(), matched: true, managed: vec!["sveltos-service".into()], unmanaged: vec![] }]
    );
}

#[test]
fn a_cluster_that_stops_matching_loses_the_label_it_was_given_and_no_other() {
    let c = classifier("sveltos-service", &[("sveltos-service", "present")], true);
    let before = kept(&[("sveltos-service", true, &["sveltos-service"])]);
    let current = labels(&[("sveltos-service", "present"), ("env", "prod")]);
    let out = classify(std::slice::from_ref(&c), &[found(&c, false)], Some("v1.20.2"), &before, &current);
    assert_eq!(out.labels, BTreeMap::from([("sveltos-service".to_string(), None)]));
    assert!(!out.pairs[0].matched && out.pairs[0].managed.is_empty());
    // A label of the same key the operator set, never recorded as managed, stays.
    let out = classify(std::slice::from_ref(&c), &[found(&c, false)], Some("v1.20.2"), &kept(&[("sveltos-service", true, &[])]), &current);
    assert!(out.labels.is_empty(), "{:?}", out.labels);
}

#[test]
fn the_owner_keeps_a_contested_key_and_the_other_records_the_conflict() {
    let (a, b) = (classifier("a", &[("tier", "gold")], true), classifier("b", &[("tier", "silver")], true));
    let both = [a.clone(), b.clone()];
    let results = [found(&a, true), found(&b, true)];
    // b owned it first: it keeps it, though a comes first by name.
    let out = classify(&both, &results, Some("v1.20.2"), &kept(&[("b", true, &["tier"])]), &labels(&[("tier", "silver")]));
    assert!(out.labels.is_empty(), "{:?}", out.labels);
    assert_eq!(out.pairs[0].unmanaged, vec![("tier".to_string(), "b".to_string())]);
    assert_eq!(out.pairs[1].managed, vec!["tier".to_string()]);
    // With no owner yet, the first by name takes it; once b stops matching, a does.
    let out = classify(&both, &results, Some("v1.20.2"), &BTreeMap::new(), &BTreeMap::new());
    assert_eq!(out.labels["tier"], Some("gold".into()));
    let out = classify(
        &both,
        &[found(&a, true), found(&b, false)],
        Some("v1.20.2"),
        &kept(&[("b", true, &["tier"])]),
        &labels(&[("tier", "silver")]),
    );
    assert_eq!(out.labels["tier"], Some("gold".into()));
}

#[test]
fn a_result_of_another_definition_or_an_error_keeps_what_was_recorded() {
    let c = classifier("svc", &[("svc", "yes")], true);
    let before = kept(&[("svc", true, &["svc"])]);
    let current = labels(&[("svc", "yes")]);
    let mut stale = found(&c, false);
    stale.definition = airlock_bundle::Digest::of(b"an older definition");
    let failed = Evaluated::of(&c.evaluation, Err("listing v1 Service: forbidden".into()));
    for evaluated in [vec![stale], vec![failed], vec![]] {
        let out = classify(std::slice::from_ref(&c), &evaluated, Some("v1.20.2"), &before, &current);
        assert!(out.labels.is_empty() && out.pairs[0].matched, "{evaluated:?}");
    }
    // Never evaluated and never recorded: no report at all.
    assert!(classify(std::slice::from_ref(&c), &[], Some("v1.20.2"), &BTreeMap::new(), &current).pairs.is_empty());
}

#[test]
fn version_constraints_are_decided_here_without_the_puller() {
    let mut c = classifier("k8s-1-20", &[("k8s", "v1-20")], false);
    c.versions = vec![
        VersionConstraint { comparison: Comparison::GreaterThanOrEqualTo, version: (1, 20, 0) },
        VersionConstraint { comparison: Comparison::LessThan, version: (1, 21, 0) },
    ];
    let at = |version: Option<&str>| classify(std::slice::from_ref(&c), &[], version, &BTreeMap::new(), &BTreeMap::new());
    assert_eq!(at(Some("v1.20.2")).labels["k8s"], Some("v1-20".into()));
    assert!(!at(Some("v1.21.0")).pairs[0].matched);
    assert!(at(None).pairs.is_empty(), "no version known: nothing decided");
}

#[test]
fn a_deleted_classifier_gives_up_its_labels_and_its_report() {
    let out = classify(&[], &[], Some("v1.20.2"), &kept(&[("old", true, &["team"])]), &labels(&[("team", "a")]));
    assert_eq!((out.gone, out.labels), (vec!["old".to_string()], BTreeMap::from([("team".to_string(), None)])));
}

#[test]
fn the_report_is_named_and_labelled_as_libsveltos_does() {
    let cluster: ClusterId = "fleet/edge-1".parse().unwrap();
    let pair = Pair { classifier: "gpu".into(), matched: true, managed: vec!["gpu".into()], unmanaged: vec![("x".into(), "other".into())] };
    let object = report_object(&cluster, &pair);
    assert_eq!(object["metadata"]["name"], "sveltos--gpu--edge-1");
    assert_eq!(object["metadata"]["labels"][REPORT_CLUSTER_TYPE_LABEL], "sveltos");
    assert_eq!(
        object["spec"],
        json!({"classifierName": "gpu", "clusterName": "edge-1", "clusterNamespace": "fleet", "clusterType": "Sveltos", "match": true})
    );
    assert_eq!(kept_of(&object), Some(("gpu".into(), Kept { matched: true, managed: vec!["gpu".into()] })));
}
