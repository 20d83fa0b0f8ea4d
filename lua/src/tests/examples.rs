//! The Lua examples of Sveltos's documentation and functional tests, with what Sveltos
//! deploys for them (notes: lua.md §A–C, doc-examples E14, E15).

use serde_json::json;

use super::{run, show_with};

/// docs/template/lua.md: the Secret is copied without its `type`, which the script does
/// not carry over. JSON text is fine: the caller's splitter reads YAML or JSON.
#[test]
fn replicates_a_secret_without_its_type() {
    let script = r#"
local json = require("json")
function evaluate()
  local secret = getResource(resources, "ExternalSecret")
  local out = { apiVersion = "v1", kind = "Secret",
    metadata = { name = secret.metadata.name, namespace = secret.metadata.namespace },
    data = secret.data }
  return { resources = json.encode(out) }
end
"#;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "imported-secret", "namespace": "default"},
        "data": {"password": "cGFzcw=="}, "type": "Opaque"});
    let text = run(script, json!({"ExternalSecret": secret})).unwrap();
    assert_eq!(
        text,
        r#"{"apiVersion":"v1","data":{"password":"cGFzcw=="},"kind":"Secret","metadata":{"name":"imported-secret","namespace":"default"}}"#
    );
}

/// test/fv/lua_instantiation_test.go: a Namespace named after a management Namespace,
/// with its `env` label, written as YAML with long brackets.
#[test]
fn builds_a_namespace_from_a_management_namespace() {
    let script = r#"
function evaluate()
  local namespace = getResource(resources, "Namespace")
  local hs = {}
  hs.resources = [[
apiVersion: v1
kind: Namespace
metadata:
  name: ]] .. namespace.metadata.name .. [[

  labels:
    env: ]] .. getLabel(namespace, "env")
  return hs
end
"#;
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops-x", "labels": {"env": "blue"}}});
    let text = run(script, json!({"Namespace": namespace})).unwrap();
    assert_eq!(text, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ops-x\n  labels:\n    env: blue");
}

/// docs/template/lua.md's helper examples, printed there, returned here.
#[test]
fn string_helpers_give_the_documented_values() {
    let secret = json!({"metadata": {"name": "imported-secret", "namespace": "default"}});
    let shown = show_with(
        r#"strings.ToUpper(getResource(resources, "ExternalSecret").metadata.name),
           strings.Split("imported-secret", "-"), base64Encode("imported-secret")"#,
        json!({"ExternalSecret": secret}),
    )
    .unwrap();
    assert_eq!(shown, "'IMPORTED-SECRET' {'imported','secret'} 'aW1wb3J0ZWQtc2VjcmV0'");
}
