//! [`evaluate_match`](crate::evaluate_match): the Classifier scripts of Sveltos's
//! documentation, one object at a time (`obj`) and all together (`resources`).

use serde_json::json;

use crate::{LuaBudget, LuaError, LuaSource, MatchInput, Matched, evaluate_match};

const SOURCE: LuaSource<'static> = LuaSource { profile: "Classifier acme", resource: "resourceSelectors[0]", key: "evaluate" };

/// The ClusterIssuer selector of Sveltos's classifier documentation.
const ACME_STAGING: &str = r#"
function evaluate()
  hs = {}
  hs.matching = false
  hs.message = ""
  if obj.spec.acme ~= nil then
    if string.find(obj.spec.acme.server, "acme-staging-v02.api.letsencrypt.org", 1, true) then
      hs.matching = true
    end
  end
  return hs
end
"#;

/// An aggregate over every object kept: more than two namespaces.
const MANY_NAMESPACES: &str = r#"
function evaluate()
  local hs = {matching = false, message = ""}
  local count = 0
  for _, resource in ipairs(resources) do
    if resource.kind == "Namespace" then count = count + 1 end
  end
  if count > 2 then hs.matching = true end
  hs.message = count .. " namespaces"
  return hs
end
"#;

fn one(script: &str, object: serde_json::Value) -> Result<Matched, LuaError> {
    evaluate_match(&SOURCE, script, MatchInput::Object(&object), &LuaBudget::DEFAULT)
}

#[test]
fn judges_one_object_by_the_documented_script() {
    let issuer = |server: &str| json!({"kind": "ClusterIssuer", "spec": {"acme": {"server": server}}});
    assert!(one(ACME_STAGING, issuer("https://acme-staging-v02.api.letsencrypt.org/directory")).unwrap().matching);
    assert!(!one(ACME_STAGING, issuer("https://acme-v02.api.letsencrypt.org/directory")).unwrap().matching);
    assert!(!one(ACME_STAGING, json!({"kind": "ClusterIssuer", "spec": {}})).unwrap().matching);
}

#[test]
fn judges_every_object_kept_together() {
    let namespaces: Vec<serde_json::Value> = (0..3).map(|i| json!({"kind": "Namespace", "metadata": {"name": format!("n{i}")}})).collect();
    let all = evaluate_match(&SOURCE, MANY_NAMESPACES, MatchInput::Objects(&namespaces), &LuaBudget::DEFAULT).unwrap();
    assert_eq!(all, Matched { matching: true, message: "3 namespaces".into() });
    let two = evaluate_match(&SOURCE, MANY_NAMESPACES, MatchInput::Objects(&namespaces[..2]), &LuaBudget::DEFAULT).unwrap();
    assert!(!two.matching);
}

#[test]
fn rejects_a_verdict_that_is_not_a_boolean_or_an_array() {
    let err = one("function evaluate() return {matching = 'yes'} end", json!({})).unwrap_err();
    assert!(matches!(err, LuaError::VerdictNotBool { .. }), "{err}");
    let err = one("function evaluate() return {true} end", json!({})).unwrap_err();
    assert!(err.to_string().contains("not a table with a matching field"), "{err}");
}

#[test]
fn an_endless_script_runs_out_of_budget() {
    let err = one("function evaluate() while true do end end", json!({})).unwrap_err();
    assert!(err.to_string().contains("budget"), "{err}");
}
