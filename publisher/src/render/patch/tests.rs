//! The public entry point: Sveltos's pre-filters, the documentation's examples, and one
//! `rejects_*` test per error.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::*;
use crate::sources::model::Target;

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}}})
}

fn patch(text: &str, target: Option<Target>) -> ParsedPatch {
    ParsedPatch::new(&Patch { source: "ClusterProfile/web spec.patches[0]".into(), text: text.into(), target })
}

fn kind(kind: &str) -> Option<Target> {
    Some(Target { kind: Some(kind.into()), ..Target::default() })
}

fn applied(object: &Value, patches: &[ParsedPatch]) -> Value {
    apply(object, patches).expect("applies").object.into_owned()
}

fn error(object: &Value, patches: &[ParsedPatch]) -> PatchError {
    apply(object, patches).expect_err("fails")
}

#[test]
fn an_object_no_patch_matches_comes_back_borrowed() {
    let object = deployment();
    let patches = [patch("- {op: add, path: /metadata/labels/x, value: y}", kind("Service"))];
    assert!(matches!(apply(&object, &patches), Ok(Patched { object: Cow::Borrowed(_), .. })));
}

#[test]
fn json6902_labels_every_deployment() {
    let object = deployment();
    let patches = [patch("- op: add\n  path: /metadata/labels/environment\n  value: production", kind("Deployment"))];
    assert_eq!(applied(&object, &patches)["metadata"]["labels"], json!({"app": "web", "environment": "production"}));
}

#[test]
fn strategic_merge_adds_a_toleration_whatever_the_patch_is_named() {
    let object = deployment();
    let text = concat!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ignored}\nspec:\n  template:\n    spec:\n",
        "      tolerations: [{key: dedicated, operator: Equal, value: edge, effect: NoSchedule}]"
    );
    let out = applied(&object, &[patch(text, kind("Deployment"))]);
    assert_eq!(out["spec"]["template"]["spec"]["tolerations"][0]["key"], "dedicated");
    assert_eq!(out["metadata"]["name"], "web");
}

#[test]
fn sveltos_matches_targets_unanchored_before_kustomize_anchors_them() {
    let object = deployment();
    // Sveltos lets `we` through (it is in `web`), kustomize does not (not all of it): unchanged.
    let partial = [patch("- {op: add, path: /metadata/labels/x, value: y}", Some(Target { name: Some("we".into()), ..Target::default() }))];
    assert_eq!(applied(&object, &partial), object);
    // kustomize would call the missing namespace `default`, but Sveltos sees none first.
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let default = Target { namespace: Some("default".into()), ..Target::default() };
    let patches = [patch("- {op: add, path: /metadata/labels, value: {x: y}}", Some(default))];
    assert!(matches!(apply(&configmap, &patches), Ok(Patched { object: Cow::Borrowed(_), .. })));
}

#[test]
fn a_remove_of_a_missing_path_is_dropped_as_sveltos_drops_it() {
    let object = deployment();
    let missing = [patch("- op: remove\n  path: /spec/template/spec/nodeSelector", kind("Deployment"))];
    assert!(matches!(apply(&object, &missing), Ok(Patched { object: Cow::Borrowed(_), .. })));
    let present = [patch("- op: remove\n  path: /spec/replicas", kind("Deployment"))];
    assert_eq!(applied(&object, &present)["spec"].get("replicas"), None);
}

#[test]
fn a_remove_of_a_missing_path_drops_that_operation_and_applies_the_rest() {
    let object = deployment();
    let text = "- op: remove\n  path: /spec/template/spec/nodeSelector\n- op: add\n  path: /metadata/labels/tier\n  value: edge";
    let out = applied(&object, &[patch(text, kind("Deployment"))]);
    assert_eq!(out["metadata"]["labels"], json!({"app": "web", "tier": "edge"}));
    // JSON spelling, a list index and an escaped key are read as Sveltos reads them now.
    let json = r#"[{"op": "remove", "path": "/spec/template/spec/containers/0/image"}, {"op": "remove", "path": "/spec/template/spec/containers/1"}]"#;
    let out = applied(&object, &[patch(json, kind("Deployment"))]);
    assert_eq!(out["spec"]["template"]["spec"]["containers"], json!([{"name": "app"}]));
    let escaped = "- op: remove\n  path: /metadata/labels/app.kubernetes.io~1name\n- op: replace\n  path: /spec/replicas\n  value: 3";
    assert_eq!(applied(&object, &[patch(escaped, kind("Deployment"))])["spec"]["replicas"], 3);
}

#[test]
fn a_deleting_patch_leaves_the_object_as_it_was() {
    let object = deployment();
    let patches = [patch("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n$patch: delete", kind("Deployment"))];
    assert!(matches!(apply(&object, &patches), Ok(Patched { object: Cow::Borrowed(_), .. })));
}

#[test]
fn a_broken_patch_that_matches_nothing_deploys_fine() {
    let object = deployment();
    assert!(apply(&object, &[patch("{not yaml", kind("Service"))]).is_ok());
}

#[test]
fn patches_from_values_read_as_sveltos_reads_them() {
    let value = concat!(
        "patch: |-\n  - op: add\n    path: /metadata/labels/owner\n    value: blue\n",
        "Target: {Kind: Deployment, labelSelector: 'app=web'}\nextra: ignored"
    );
    let read = Patch::from_data_value("ConfigMap fleet/edge-1-patches key json", value).unwrap();
    assert_eq!(read.text, "- op: add\n  path: /metadata/labels/owner\n  value: blue");
    let target = read.target.clone().unwrap();
    assert_eq!((target.kind.as_deref(), target.label_selector.as_deref()), (Some("Deployment"), Some("app=web")));
    let out = applied(&deployment(), &[ParsedPatch::new(&read)]);
    assert_eq!(out["metadata"]["labels"], json!({"app": "web", "owner": "blue"}));
    let empty = Patch::from_data_value("key empty", "").unwrap();
    assert_eq!((empty.text.as_str(), empty.target), ("", None));
}

#[test]
fn rejects_a_patches_from_value_that_is_no_entry() {
    for value in ["- a list", "patch: 5", "target: [kind]", "target: {kind: 5}", "{unclosed"] {
        let err = Patch::from_data_value("key bad", value).unwrap_err();
        assert!(matches!(err, PatchError::InvalidEntry { ref patch, .. } if patch == "key bad"), "{value}: {err}");
    }
}

#[test]
fn rejects_an_invalid_target_regex() {
    let target = Target { kind: Some("Deploy(".into()), ..Target::default() };
    let err = error(&deployment(), &[patch("- {op: add, path: /a, value: 1}", Some(target))]);
    assert!(matches!(err, PatchError::InvalidTarget { error: TargetError::Regex { field: "kind", .. }, .. }), "{err}");
}

#[test]
fn rejects_an_invalid_target_selector() {
    let target = Target { annotation_selector: Some("a in b".into()), ..Target::default() };
    let err = error(&deployment(), &[patch("- {op: add, path: /a, value: 1}", Some(target))]);
    assert!(matches!(err, PatchError::InvalidTarget { error: TargetError::Selector { field: "annotationSelector", .. }, .. }));
}

#[test]
fn rejects_a_text_that_is_no_patch() {
    for (text, expected) in [("  ", BodyError::Empty), ("null", BodyError::Both)] {
        let err = error(&deployment(), &[patch(text, kind("Deployment"))]);
        assert_eq!(
            err,
            PatchError::InvalidPatch {
                patch: "ClusterProfile/web spec.patches[0]".into(),
                object: "Deployment prod/web".into(),
                error: expected,
            }
        );
    }
    let err = error(&deployment(), &[patch("{not yaml", kind("Deployment"))]);
    assert!(matches!(err, PatchError::InvalidPatch { error: BodyError::Neither { .. }, .. }), "{err}");
    let err = error(&deployment(), &[patch("{}", kind("Deployment"))]);
    assert!(matches!(err, PatchError::InvalidPatch { error: BodyError::NoDocument, .. }), "{err}");
}

#[test]
fn every_prefix_of_a_patch_applies_or_fails_cleanly() {
    let texts = [
        concat!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, labels: {a: b}}\nspec:\n  template:\n    spec:\n",
            "      containers:\n      - name: app\n        image: x\n      - {name: b, $patch: delete}\n"
        ),
        concat!(
            "- {op: add, path: /metadata/labels/x, value: y}\n- op: move\n  from: /spec/replicas\n  path: /spec/r~1s\n",
            "- {op: test, path: /spec/r~1s, value: 2}\n"
        ),
        r#"[{"op": "copy", "from": "/spec/template", "path": "/spec/t"}, {"op": "remove", "path": "/spec/t/spec/containers/-1"}]"#,
    ];
    for text in texts {
        for end in (0..=text.len()).filter(|&end| text.is_char_boundary(end)) {
            let _ = apply(&deployment(), &[patch(&text[..end], kind("Deployment"))]);
        }
    }
    let selector = "app in (web, api),!gone,tier!=db,n>3";
    for end in 0..=selector.len() {
        let target = Target { label_selector: Some(selector[..end].into()), ..Target::default() };
        let _ = apply(&deployment(), &[patch("- {op: add, path: /metadata/labels/x, value: y}", Some(target))]);
    }
}

#[test]
fn rejects_a_json6902_patch_without_target() {
    let err = error(&deployment(), &[patch("- {op: add, path: /a, value: 1}", None)]);
    assert!(matches!(err, PatchError::Json6902WithoutTarget { .. }), "{err}");
}

#[test]
fn rejects_several_documents_with_a_target() {
    let text = "kind: Deployment\nmetadata: {name: a}\n---\nkind: Deployment\nmetadata: {name: b}";
    assert!(matches!(error(&deployment(), &[patch(text, kind("Deployment"))]), PatchError::SeveralDocuments { .. }));
}

#[test]
fn rejects_an_untargeted_patch_for_another_object() {
    let err = error(&deployment(), &[patch("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: prod}", None)]);
    assert_eq!(
        err,
        PatchError::OtherObject {
            patch: "ClusterProfile/web spec.patches[0]".into(),
            object: "Deployment prod/web".into(),
            wanted: "Deployment.v1.apps/api.prod".into(),
        }
    );
}

#[test]
fn rejects_a_failed_json6902_operation() {
    let err = error(&deployment(), &[patch("- {op: add, path: /metadata/annotations/x, value: y}", kind("Deployment"))]);
    let PatchError::Json6902 { error: OpError::Failed { index: 0, ref path, .. }, ref object, .. } = err else { panic!("{err}") };
    assert_eq!((path.as_str(), object.as_str()), ("/metadata/annotations/x", "Deployment prod/web"));
    let err = error(&deployment(), &[patch("- {op: move, path: /b}", kind("Deployment"))]);
    assert!(matches!(err, PatchError::Json6902 { error: OpError::MissingField { field: "from", .. }, .. }), "{err}");
    let err = error(&deployment(), &[patch("- {op: frobnicate, path: /b}", kind("Deployment"))]);
    assert!(matches!(err, PatchError::Json6902 { error: OpError::UnknownOp { .. }, .. }), "{err}");
}

#[test]
fn rejects_a_failed_test_operation() {
    let err = error(&deployment(), &[patch("- {op: test, path: /spec/replicas, value: 3}", kind("Deployment"))]);
    assert!(matches!(err, PatchError::Json6902 { error: OpError::TestFailed { index: 0, .. }, .. }), "{err}");
}

#[test]
fn rejects_a_failed_strategic_merge() {
    let smp =
        |spec: &str| patch(&format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: x}}\nspec: {spec}"), kind("Deployment"));
    let err = error(&deployment(), &[smp("{replicas: {a: 1}}")]);
    assert!(matches!(err, PatchError::StrategicMerge { error: MergeError::KindMismatch { ref path, .. }, .. } if path == "spec.replicas"));
    let err = error(&deployment(), &[smp("{template: {$patch: frobnicate}}")]);
    assert!(matches!(err, PatchError::StrategicMerge { error: MergeError::UnknownDirective { .. }, .. }), "{err}");
    let mut object = deployment();
    object["spec"]["template"]["spec"]["containers"] = json!(["app"]);
    let err = error(&object, &[smp("{template: {spec: {containers: [{name: b}]}}}")]);
    assert!(matches!(err, PatchError::StrategicMerge { error: MergeError::NotAMap { .. }, .. }), "{err}");
    let finalizers = patch("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, finalizers: [{a: 1}]}", kind("Deployment"));
    let mut object = deployment();
    object["metadata"]["finalizers"] = json!(["f"]);
    assert!(matches!(error(&object, &[finalizers]), PatchError::StrategicMerge { error: MergeError::NotAScalar { .. }, .. }));
}

#[test]
fn rejects_an_object_kustomize_cannot_load() {
    let mut object = deployment();
    object["metadata"].as_object_mut().unwrap().remove("name");
    let err = error(&object, &[patch("- {op: add, path: /a, value: 1}", kind("Deployment"))]);
    assert!(matches!(err, PatchError::InvalidObject { ref reason, .. } if reason == "no metadata.name"), "{err}");
}

#[test]
fn parsed_patches_can_be_shared_across_rendering_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<ParsedPatch>();
}

#[test]
fn parsed_patches_are_reused_across_objects() {
    let patches = ParsedPatch::all(&[Patch {
        source: "ClusterProfile/web spec.patches[0]".into(),
        text: "- {op: add, path: /metadata/labels/team, value: blue}".into(),
        target: Some(Target { kind: Some("Deployment|Service".into()), ..Target::default() }),
    }]);
    assert_eq!(patches[0].source(), "ClusterProfile/web spec.patches[0]");
    for name in ["a", "b"] {
        let mut object = deployment();
        object["metadata"]["name"] = json!(name);
        assert_eq!(applied(&object, &patches)["metadata"]["labels"]["team"], "blue");
    }
}

#[test]
fn rejects_a_strategic_merge_patch_with_a_kind_and_no_name() {
    let want = |api_version: &str, kind: &str| BodyError::StrategicWithoutName { api_version: api_version.into(), kind: kind.into() };
    let cases = [
        ("apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 1}", want("apps/v1", "Deployment")),
        ("kind: Deployment\nmetadata: {name: ''}", want("", "Deployment")),
        ("apiVersion: v1\nkind: ConfigMapList\nitems: []", want("v1", "ConfigMapList")),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {labels: {a: b}}\n---\nkind: Deployment\nmetadata: {name: web}",
            want("apps/v1", "Deployment"),
        ),
    ];
    for (text, expected) in cases {
        match error(&deployment(), &[patch(text, kind("Deployment"))]) {
            PatchError::InvalidPatch { error, .. } => assert_eq!(error, expected, "{text}"),
            other => panic!("{text}: {other}"),
        }
    }
    // A patch that targets nothing here is never checked, as Sveltos checks only what applies.
    assert!(apply(&deployment(), &[patch("kind: Deployment\nspec: {replicas: 1}", kind("Service"))]).is_ok());
    let message = error(&deployment(), &[patch("apiVersion: apps/v1\nkind: Deployment\nspec: {}", kind("Deployment"))]).to_string();
    assert!(message.contains("apps/v1/Deployment has no metadata.name") && message.contains("JSON 6902"), "{message}");
}

#[test]
fn dropped_operations_come_back_with_the_object_and_the_patch() {
    let object = deployment();
    let text = "- {op: remove, path: /spec/paused}\n- {op: remove, path: /spec/replicas}\n- {op: remove, path: /metadata/annotations}";
    let patched = apply(&object, &[patch(text, kind("Deployment"))]).unwrap();
    assert_eq!(patched.object["spec"].get("replicas"), None);
    let dropped: Vec<(usize, &str)> = patched.dropped.iter().map(|d| (d.index, d.path.as_str())).collect();
    assert_eq!(dropped, [(0, "/spec/paused"), (2, "/metadata/annotations")]);
    assert_eq!(
        patched.dropped[0].to_string(),
        "ClusterProfile/web spec.patches[0]: operation 0 (remove /spec/paused) dropped for Deployment prod/web, which has no such path; the patch's other operations apply"
    );
    // No operation left, or none to begin with: the patch does not apply, and the object
    // comes back as it was (kustomize would refuse `[]`, which reads as both kinds of patch).
    assert!(matches!(apply(&object, &[patch("[]", kind("Deployment"))]).unwrap().object, Cow::Borrowed(_)));
    let all_missing = apply(&object, &[patch("- {op: remove, path: /spec/paused}", kind("Deployment"))]).unwrap();
    assert!(matches!(all_missing.object, Cow::Borrowed(_)) && all_missing.dropped.len() == 1);
    // A target that does not match drops nothing.
    assert!(apply(&object, &[patch("- {op: remove, path: /spec/paused}", kind("Service"))]).unwrap().dropped.is_empty());
}
