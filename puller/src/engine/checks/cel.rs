//! `evaluateCEL`, as libsveltos evaluates it: each rule sees the object as `resource`,
//! and the object passes when one rule returns true. A rule that fails to evaluate
//! (a missing field, a non-boolean result) counts as false and the next is tried.
//! Rules are compiled when the bundle is read, so one that does not parse refuses it.

use airlock_bundle::statement::CelRule;
use cel::{Context, Program, Value};

/// The rules of one check, compiled.
pub struct Rules(Vec<(String, Program)>);

impl Rules {
    pub fn compile(rules: &[CelRule]) -> Result<Rules, String> {
        let compiled =
            rules.iter().map(|r| Program::compile(&r.rule).map(|p| (r.name.clone(), p)).map_err(|e| format!("CEL rule {:?}: {e}", r.name)));
        Ok(Rules(compiled.collect::<Result<_, _>>()?))
    }

    /// The name of the first rule true of `object`, if one is.
    pub fn matched(&self, object: &serde_json::Value) -> Option<&str> {
        let mut context = Context::default();
        context.add_variable("resource", object).ok()?;
        self.0.iter().find(|(_, program)| program.execute(&context) == Ok(Value::Bool(true))).map(|(name, _)| name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(rules: &[(&str, &str)]) -> Rules {
        Rules::compile(&rules.iter().map(|(name, rule)| CelRule { name: name.to_string(), rule: rule.to_string() }).collect::<Vec<_>>())
            .unwrap()
    }

    #[test]
    fn an_object_passes_when_one_rule_is_true() {
        let ready = rules(&[
            ("replicas", "resource.status.readyReplicas == resource.spec.replicas"),
            ("paused", "has(resource.spec.paused) && resource.spec.paused"),
        ]);
        assert_eq!(ready.matched(&json!({"spec": {"replicas": 2}, "status": {"readyReplicas": 2}})), Some("replicas"));
        assert_eq!(ready.matched(&json!({"spec": {"replicas": 2, "paused": true}, "status": {"readyReplicas": 0}})), Some("paused"));
        assert_eq!(ready.matched(&json!({"spec": {"replicas": 2}, "status": {"readyReplicas": 1}})), None);
    }

    #[test]
    fn a_rule_that_fails_or_is_not_boolean_is_false() {
        let odd = rules(&[("missing", "resource.status.phase == 'Running'"), ("string", "'yes'"), ("last", "resource.kind == 'Pod'")]);
        assert_eq!(odd.matched(&json!({"kind": "Pod"})), Some("last"));
        assert_eq!(odd.matched(&json!({"kind": "Service"})), None);
    }

    #[test]
    fn a_rule_that_does_not_parse_is_refused_by_name() {
        let err = Rules::compile(&[CelRule { name: "broken".into(), rule: "resource.(".into() }]).err().unwrap();
        assert!(err.contains("CEL rule \"broken\""), "{err}");
    }
}
