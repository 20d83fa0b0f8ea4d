use serde_json::json;

use super::*;

fn deployment(replicas: u64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"},
                     "annotations": {"airlock.dev/version": "3", "airlock.dev/bundle-digest": "sha256:aa"}},
        "spec": {
            "replicas": replicas,
            "paused": false,
            "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": image, "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                                  "resources": {"limits": {"cpu": 0.5, "memory": "1Gi"}}}]}}
        }
    })
}

/// What the API server returns for `deployment(...)`: defaults, bookkeeping, normal forms.
fn live(replicas: u64, image: &str) -> Value {
    let mut live = deployment(replicas, image);
    live["metadata"]["uid"] = json!("u");
    live["metadata"]["resourceVersion"] = json!("42");
    live["metadata"]["annotations"] =
        json!({"airlock.dev/version": "2", "airlock.dev/bundle-digest": "sha256:bb", "deployment.kubernetes.io/revision": "1"});
    let spec = live["spec"].as_object_mut().unwrap();
    spec.remove("paused");
    spec.insert("strategy".into(), json!({"type": "RollingUpdate"}));
    let template = &mut live["spec"]["template"];
    template["metadata"].as_object_mut().unwrap().remove("creationTimestamp");
    let container = &mut template["spec"]["containers"][0];
    container["imagePullPolicy"] = json!("IfNotPresent");
    container["resources"]["limits"]["cpu"] = json!("500m");
    template["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "sidecar", "image": "injected"}));
    live["status"] = json!({"replicas": 1});
    live
}

#[test]
fn a_live_object_with_defaults_and_normal_forms_has_not_drifted() {
    assert_eq!(first_drift(&deployment(2, "nginx:1"), &live(2, "nginx:1")), None);
}

#[test]
fn list_items_without_api_version_and_kind_have_not_drifted() {
    let mut listed = live(2, "nginx:1");
    let root = listed.as_object_mut().unwrap();
    root.remove("apiVersion");
    root.remove("kind");
    assert_eq!(first_drift(&deployment(2, "nginx:1"), &listed), None);
}

#[test]
fn a_changed_field_is_drift_named_by_its_path() {
    let change = first_drift(&deployment(2, "nginx:1"), &live(5, "nginx:1")).expect("drift");
    assert_eq!((change.path.as_str(), &change.old, &change.new), ("spec.replicas", &Some(json!(2)), &Some(json!(5))));
    assert_eq!(change.as_drift(), "spec.replicas: the bundle has 2, the live object 5");
    let change = first_drift(&deployment(2, "nginx:1"), &live(2, "nginx:2")).expect("drift");
    assert_eq!(change.path, "spec.template.spec.containers[name=web].image");
}

#[test]
fn removed_fields_and_list_elements_are_drift() {
    let mut gone = live(2, "nginx:1");
    gone["metadata"]["labels"].as_object_mut().unwrap().remove("app");
    assert_eq!(first_drift(&deployment(2, "nginx:1"), &gone).expect("drift").path, "metadata.labels.app");
    let mut no_container = live(2, "nginx:1");
    no_container["spec"]["template"]["spec"]["containers"].as_array_mut().unwrap().remove(0);
    let change = first_drift(&deployment(2, "nginx:1"), &no_container).expect("drift");
    assert_eq!((change.path.as_str(), change.new), ("spec.template.spec.containers[name=web]", None));
    let mut ports = live(2, "nginx:1");
    ports["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81}]);
    let change = first_drift(&deployment(2, "nginx:1"), &ports).expect("lists without names compare element-wise");
    assert_eq!(change.path, "spec.template.spec.containers[name=web].ports");
    ports["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": 81, "protocol": "TCP"}]);
    let change = first_drift(&deployment(2, "nginx:1"), &ports).expect("drift");
    assert_eq!(change.path, "spec.template.spec.containers[name=web].ports[0].containerPort");
}

#[test]
fn scalars_compare_by_value() {
    for (want, got) in [
        (json!(1), json!(1.0)),
        (json!("1000m"), json!("1")),
        (json!(0.5), json!("500m")),
        (json!("1Gi"), json!("1024Mi")),
        (json!(2), json!("2")),
    ] {
        assert!(scalar_equal(&want, &got), "{want} {got}");
    }
    for (want, got) in [(json!("1Gi"), json!("1G")), (json!("a"), json!("b")), (json!(true), json!("true")), (json!("m"), json!("0m"))] {
        assert!(!scalar_equal(&want, &got), "{want} {got}");
    }
}

#[test]
fn diff_lists_changed_fields_and_skips_bookkeeping() {
    let old = live(2, "nginx:1");
    let mut new = live(3, "nginx:1");
    new["metadata"]["resourceVersion"] = json!("43");
    new["metadata"]["managedFields"] = json!([{"manager": "airlock"}]);
    new["metadata"]["annotations"]["airlock.dev/version"] = json!("3");
    new["metadata"]["labels"]["tier"] = json!("front");
    new["status"] = json!({"replicas": 3});
    let changes = diff(&old, &new);
    let lines: Vec<String> = changes.iter().map(Change::to_string).collect();
    assert_eq!(lines, ["metadata.labels.tier: (absent) → \"front\"", "spec.replicas: 2 → 3"]);
    assert!(diff(&old, &old).is_empty());
}

#[test]
fn rendered_diffs_are_bounded() {
    let long = "x".repeat(500);
    let changes: Vec<Change> = (0..30).map(|i| Change { path: format!("data.k{i}"), old: None, new: Some(json!(long)) }).collect();
    let text = render_changes(&changes);
    assert_eq!(text.lines().count(), MAX_DIFF_LINES + 1);
    assert!(text.ends_with("… and 10 more"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() < MAX_VALUE_CHARS + 40), "{text}");
}
