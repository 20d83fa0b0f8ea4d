//! [`evaluate_health`](crate::evaluate_health): Sveltos's documented health scripts, the
//! `metrics` global, and the results that are refused.

use std::collections::BTreeMap;

use serde_json::json;

use crate::{Health, LuaBudget, LuaError, LuaSource, check_health_syntax, evaluate_health};

const SOURCE: LuaSource<'static> = LuaSource { profile: "web", resource: "validateHealths \"ready\"", key: "script" };

/// The deployment check of Sveltos's documentation: healthy once every replica is available.
const DEPLOYMENT_READY: &str = r#"
function evaluate()
  hs = {}
  hs.healthy = false
  hs.message = "available replicas not matching requested replicas"
  if obj.status ~= nil then
    if obj.status.availableReplicas ~= nil then
      if obj.status.availableReplicas == obj.spec.replicas then
        hs.healthy = true
      end
    end
  end
  return hs
end
"#;

fn check(script: &str, object: Option<serde_json::Value>, metrics: &[(&str, f64)]) -> Result<Health, LuaError> {
    let metrics: BTreeMap<String, f64> = metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    evaluate_health(&SOURCE, script, object.as_ref(), &metrics, &LuaBudget::DEFAULT)
}

#[test]
fn judges_an_object_by_the_documented_script() {
    let deployment = |available: u32| json!({"kind": "Deployment", "spec": {"replicas": 2}, "status": {"availableReplicas": available}});
    assert!(check(DEPLOYMENT_READY, Some(deployment(2)), &[]).unwrap().healthy);
    let unhealthy = check(DEPLOYMENT_READY, Some(deployment(1)), &[]).unwrap();
    assert_eq!(unhealthy, Health { healthy: false, message: "available replicas not matching requested replicas".into() });
}

#[test]
fn the_object_is_also_the_argument_and_metrics_are_a_global() {
    let script = r#"
        local limit = metrics["errorRate"]
        function evaluate(o)
          return {healthy = (o == nil or o.kind == obj.kind) and limit < 0.05, Message = "rate " .. limit}
        end"#;
    assert_eq!(check(script, None, &[("errorRate", 0.01)]).unwrap(), Health { healthy: true, message: "rate 0.01".into() });
    assert!(!check(script, Some(json!({"kind": "Pod"})), &[("errorRate", 0.5)]).unwrap().healthy);
    let no_queries = check("function evaluate() return {healthy = next(metrics) == nil} end", None, &[]).unwrap();
    assert!(no_queries.healthy, "an empty metrics table without queries");
}

#[test]
fn a_missing_healthy_field_is_unhealthy() {
    assert_eq!(check("function evaluate() return {} end", None, &[]).unwrap(), Health { healthy: false, message: String::new() });
}

#[test]
fn refuses_results_that_are_not_a_health_table() {
    for (script, needle) in [
        ("function evaluate() return {healthy = \"yes\"} end", "field \"healthy\" of the returned table is a string, not a boolean"),
        (
            "function evaluate() return {healthy = true, message = 3} end",
            "field \"message\" of the returned table is a number, not a string",
        ),
        ("function evaluate() return {true} end", "an array, not a table with a healthy field"),
        ("function evaluate() return 1 end", "not a table"),
        ("x = 1", "defines no function evaluate"),
        ("function evaluate() return os.exit(1) end", "os"),
        ("function evaluate() while true do end end", "instruction budget exceeded"),
    ] {
        let message = check(script, Some(json!({})), &[]).unwrap_err().to_string();
        assert!(message.contains(needle) && message.contains(r#"validateHealths "ready""#), "{script}: {message}");
    }
}

#[test]
fn syntax_is_checked_without_running_the_script() {
    assert_eq!(check_health_syntax(&SOURCE, "error('never run')", &LuaBudget::DEFAULT), Ok(()));
    let err = check_health_syntax(&SOURCE, "function evaluate(", &LuaBudget::DEFAULT).unwrap_err().to_string();
    assert!(err.contains("syntax error") && err.contains("line 1"), "{err}");
}
