//! Sveltos's resource functions over `.MgmtResources`, by identifier and by object.

use super::*;

fn resources() -> serde_json::Value {
    json!({
        "Cluster": {"metadata": {"name": "edge-1", "namespace": "fleet"}},
        "MgmtResources": {
            "Deploy": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "nginx", "namespace": "default", "uid": "u-1", "resourceVersion": "42", "generation": 3,
                    "managedFields": [{"manager": "kubectl"}], "labels": {"app": "nginx"}
                },
                "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}}
            }
        }
    })
}

fn render_resources(text: &str) -> Result<String, TemplateError> {
    render(&SOURCE, text, &resources())
}

fn ok_resources(text: &str) -> String {
    render_resources(text).unwrap_or_else(|err| panic!("{text:?} failed: {err}"))
}

const COPIED: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
    generation: 3
    labels:
        app: nginx
    name: nginx
    namespace: default
spec:";

#[test]
fn fn_copy_and_get_resource_drop_server_fields() {
    let copied = ok_resources(r#"{{ copy "Deploy" }}"#);
    assert!(copied.starts_with(COPIED), "{copied}");
    assert!(!copied.contains("uid") && !copied.contains("resourceVersion") && !copied.contains("managedFields"), "{copied}");
    assert_eq!(ok_resources(r#"{{ copy (index .MgmtResources "Deploy") }}"#), copied);
    assert_eq!(
        ok_resources(r#"{{ $d := getResource "Deploy" }}{{ $d.metadata.name }} {{ hasKey $d.metadata "uid" }} {{ $d.spec.replicas }}"#),
        "nginx false 3"
    );
}

#[test]
fn fn_get_field_reads_dotted_paths() {
    assert_eq!(
        ok_resources(
            r#"{{ getField "Deploy" "spec.replicas" }} {{ getField "Deploy" "metadata.labels.app" }}|{{ getField "Deploy" "spec.missing.deeper" }}|"#
        ),
        "3 nginx||"
    );
    assert_eq!(ok_resources(r#"{{ range getField "Deploy" "spec.template.spec.containers" }}{{ .image }}{{ end }}"#), "nginx:latest");
}

#[test]
fn fn_set_and_remove_field_return_yaml_without_changing_the_source() {
    let set = ok_resources(r#"{{ setField "Deploy" "spec.replicas" (int64 5) }}"#);
    assert!(set.contains("replicas: 5") && set.starts_with(COPIED), "{set}");
    let nested = ok_resources(r#"{{ setField "Deploy" "spec.strategy.type" "Recreate" }}"#);
    assert!(nested.contains("strategy:\n        type: Recreate"), "{nested}");
    let removed = ok_resources(r#"{{ removeField "Deploy" "spec.replicas" }}"#);
    assert!(!removed.contains("replicas") && removed.contains("template"), "{removed}");
    assert_eq!(ok_resources(r#"{{ removeField "Deploy" "spec.nothing.here" }}"#), ok_resources(r#"{{ copy "Deploy" }}"#));
    assert_eq!(ok_resources(r#"{{ $_ := setField "Deploy" "spec.replicas" 9 }}{{ getField "Deploy" "spec.replicas" }}"#), "3");
}

#[test]
fn fn_chain_functions_as_in_sveltos_docs() {
    let text = r#"{{ $depl := (getResource "Deploy") }}{{ $depl := (chainSetField $depl "spec.replicas" (int64 1)) }}{{ $depl := (chainSetField $depl "metadata.namespace" .Cluster.metadata.namespace) }}{{ $depl := (chainSetField $depl "spec.paused" true) }}{{ $depl := chainRemoveField $depl "metadata.labels" }}{{ toYaml $depl.metadata }}|{{ $depl.spec.replicas }} {{ $depl.spec.paused }}"#;
    assert_eq!(ok_resources(text), "generation: 3\nname: nginx\nnamespace: fleet|1 true");
    let containers = r#"{{ $mod := list }}{{ range $c := getField "Deploy" "spec.template.spec.containers" }}{{ $mod = append $mod (chainSetField $c "image" "nginx:1.13") }}{{ end }}{{ setField "Deploy" "spec.template.spec.containers" $mod }}"#;
    assert!(ok_resources(containers).contains("image: nginx:1.13"));
}

#[test]
fn rejects_unknown_identifiers_and_paths_through_non_maps() {
    for (text, needle) in [
        (r#"{{ copy "Nope" }}"#, "no templateResourceRefs entry has the identifier \"Nope\""),
        (r#"{{ getField "Deploy" "spec.replicas.count" }}"#, "spec.replicas accessor error"),
        (r#"{{ setField "Deploy" "spec.replicas.count" 1 }}"#, "cannot be set because replicas is a int"),
        (r#"{{ chainSetField "x" "a" 1 }}"#, "no templateResourceRefs entry"),
        (r#"{{ chainSetField (list) "a" 1 }}"#, "must be an identifier or an object"),
        (r#"{{ getResource }}"#, "getResource expects 1, got 0"),
        (r#"{{ getField "Deploy" 3 }}"#, "argument 2 must be a string"),
    ] {
        let err = render_resources(text).expect_err(text);
        assert!(matches!(&err, TemplateError::Execution { message, .. } if message.contains(needle)), "{text}: {err}");
    }
}

#[test]
fn fn_resources_of_a_skipped_optional_entry_give_nothing() {
    let env = RenderEnv { absent: ["Maybe".to_string()].into(), ..RenderEnv::default() };
    let text = r#"{{ with getResource "Maybe" }}{{ .data.token }}{{ else }}none{{ end }}|{{ copy "Maybe" }}|{{ getField "Maybe" "data" }}|{{ setField "Maybe" "a" 1 }}|{{ chainSetField "Maybe" "a" 1 }}"#;
    assert_eq!(render_with(&SOURCE, text, &resources(), &env).unwrap(), "none||||<no value>");
    let err = render_with(&SOURCE, r#"{{ getResource "Other" }}"#, &resources(), &env).unwrap_err();
    assert!(err.to_string().contains("no templateResourceRefs entry has the identifier \"Other\""), "{err}");
}
