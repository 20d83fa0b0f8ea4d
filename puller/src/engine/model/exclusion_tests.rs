use airlock_bundle::sign::profile_entry;
use airlock_bundle::statement::{DriftExclusion, Target};
use airlock_bundle::{Digest, PartSettings};
use serde_json::json;

use super::*;

fn profile(exclusions: Vec<DriftExclusion>) -> ProfileEntry {
    profile_entry("ClusterProfile.web", Digest::of(b""), 1024, PartSettings { drift_exclusions: exclusions, ..PartSettings::default() })
}

fn exclusion(paths: &[&str], target: Option<Target>) -> DriftExclusion {
    DriftExclusion { paths: paths.iter().map(|p| p.to_string()).collect(), target }
}

fn id(group: &str, kind: &str, namespace: Option<&str>, name: &str) -> ObjectId {
    ObjectId { group: group.into(), version: "v1".into(), kind: kind.into(), namespace: namespace.map(String::from), name: name.into() }
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"}, "annotations": {"a/b": "x"}},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "j"}]}}},
    })
}

/// The setting error compiling `exclusions` gives: its field and message.
fn refusal(exclusions: Vec<DriftExclusion>) -> (String, String) {
    match compile(&profile(exclusions)) {
        Err(EngineError::Setting { part, field, message }) => {
            assert_eq!(part, "ClusterProfile.web");
            (field, message)
        }
        other => panic!("expected a setting error, got {other:?}"),
    }
}

#[test]
fn strips_the_paths_of_the_exclusions_that_select_the_object() {
    let exclusions = compile(&profile(vec![
        exclusion(&["/spec/replicas"], None),
        exclusion(&["/spec/template/spec/containers/1/image", "/metadata/annotations/a~1b"], None),
        exclusion(&["/spec/template"], Some(Target { kind: Some("Service".into()), ..Target::default() })),
        exclusion(&["/no/such/path", "/spec/replicas/deeper"], None),
    ]))
    .unwrap();
    let web = id("apps", "Deployment", Some("apps"), "web");
    let stripped = exclusions.without(&web, &deployment()).expect("selected");
    assert!(stripped["spec"].get("replicas").is_none());
    assert_eq!(stripped["spec"]["template"]["spec"]["containers"][1], json!({"name": "d"}));
    assert_eq!(stripped["metadata"]["annotations"], json!({}));
    assert_eq!(stripped["spec"]["template"]["spec"]["containers"][0]["image"], "i", "the Service exclusion does not apply");
    assert_eq!(Exclusions::default().without(&web, &deployment()), None);
}

#[test]
fn targets_match_the_whole_value_and_the_selectors() {
    let select = |target: Target| {
        let exclusions = compile(&profile(vec![exclusion(&["/spec/replicas"], Some(target))])).unwrap();
        exclusions.without(&id("apps", "Deployment", Some("apps"), "web"), &deployment()).is_some()
    };
    let t = Target::default;
    assert!(select(t()), "an empty target selects everything");
    assert!(select(Target { group: Some("apps".into()), kind: Some("Deploy.*".into()), ..t() }));
    assert!(!select(Target { kind: Some("Deploy".into()), ..t() }), "anchored at both ends");
    assert!(!select(Target { group: Some("^$".into()), ..t() }), "the core group is the empty string");
    assert!(select(Target { name: Some("".into()), ..t() }), "an empty expression matches anything");
    assert!(select(Target { namespace: Some("app.|web".into()), version: Some("v1".into()), ..t() }));
    assert!(select(Target { label_selector: Some("app=web".into()), annotation_selector: Some("a/b".into()), ..t() }));
    assert!(!select(Target { label_selector: Some("app!=web".into()), ..t() }));
    // A cluster-scoped object's namespace is the empty string.
    let exclusions =
        compile(&profile(vec![exclusion(&["/metadata/labels"], Some(Target { namespace: Some("^$".into()), ..t() }))])).unwrap();
    assert!(exclusions.without(&id("", "Namespace", None, "apps"), &json!({"metadata": {"labels": {}}})).is_some());
}

#[test]
fn rejects_a_bad_regex_naming_the_part_and_field() {
    let target = Target { kind: Some("Deploy(".into()), ..Target::default() };
    let (field, message) = refusal(vec![exclusion(&["/spec"], None), exclusion(&["/spec"], Some(target))]);
    assert_eq!(field, "driftExclusions[1].target.kind");
    assert!(message.starts_with("\"Deploy(\" is not a regular expression"), "{message}");
}

#[test]
fn rejects_a_bad_selector_naming_the_part_and_field() {
    for (target, expected) in [
        (Target { label_selector: Some("app in web".into()), ..Target::default() }, "driftExclusions[0].target.labelSelector"),
        (Target { annotation_selector: Some("a=b=c".into()), ..Target::default() }, "driftExclusions[0].target.annotationSelector"),
    ] {
        let (field, message) = refusal(vec![exclusion(&["/spec"], Some(target))]);
        assert_eq!(field, expected);
        assert!(message.contains("is not a selector"), "{message}");
    }
}

#[test]
fn rejects_a_bad_pointer_naming_the_part_and_field() {
    for bad in ["spec/replicas", "/a~2b", "/a~"] {
        let (field, message) = refusal(vec![exclusion(&["/ok", bad], None)]);
        assert_eq!(field, "driftExclusions[0].paths[1]", "{bad}");
        assert!(message.contains("is not a JSON pointer"), "{bad}: {message}");
    }
}

#[test]
fn array_indexes_are_canonical() {
    assert_eq!((index("0"), index("12"), index("01"), index("-"), index("")), (Some(0), Some(12), None, None, None));
}
