//! A `HealthCheck`'s `evaluateHealth`, run as Sveltos's agent runs it: after the top-level
//! code, the global `resources` is set to the array of every object the selectors kept
//! and `evaluate` is called with it. It returns a table whose `resources` field (matched
//! as Go's JSON decoder matches field names; absent: nothing judged) is an array of
//! tables, each `{resource = <object>, status = "Healthy" | "Progressing" | "Degraded" |
//! "Suspended", message = <string, optional>}`. Sveltos unmarshals that into typed Go
//! fields, so a field of another type fails the whole evaluation, and so does it here.
//! Which status strings are valid is the caller's (the report's vocabulary); an object's
//! identity is read from the `resource` table the script returned.

use mlua::{Table, Value};

use super::args::type_name;
use super::budget::LuaBudget;
use super::error::{LuaError, LuaSource};
use super::go_runes;
use super::health::{Argument, Input, call};
use super::result::{Rejection, fields};

/// One entry the script returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub api_version: String,
    pub kind: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    pub status: String,
    pub message: String,
}

/// Runs `script` over `objects`; the entries its `evaluate` returned, in its order.
pub fn evaluate_statuses(
    source: &LuaSource<'_>,
    script: &str,
    objects: &[serde_json::Value],
    budget: &LuaBudget,
) -> Result<Vec<Judged>, LuaError> {
    let input = Input { metrics: None, global: "resources", argument: Argument::Many(objects) };
    call(source, script, input, budget, |returned| {
        let bad = |what: String| LuaError::BadStatuses { at: source.at(None), what };
        let list = match fields(returned, "resources")? {
            Ok(found) => found.into_iter().last().map(|(_, v)| v),
            Err(Rejection::NotATable { found }) => return Ok(Err(LuaError::NotATable { at: source.at(None), found })),
            Err(_) => return Ok(Err(bad("evaluate returned an array, not a table with a resources field".into()))),
        };
        let list = match list {
            None | Some(Value::Nil) => return Ok(Ok(Vec::new())),
            Some(Value::Table(t)) => t,
            Some(other) => return Ok(Err(bad(format!("field resources is a {}, not an array", type_name(&other))))),
        };
        let mut judged = Vec::new();
        for i in 1..=list.raw_len() {
            match entry(&list.raw_get::<Value>(i)?, i)? {
                Ok(j) => judged.push(j),
                Err(what) => return Ok(Err(bad(what))),
            }
        }
        Ok(Ok(judged))
    })
}

/// Entry `i` (1-based) of the returned array, or what is wrong with it.
fn entry(value: &Value, i: usize) -> mlua::Result<Result<Judged, String>> {
    let at = |field: &str| format!("resources[{i}].{field}");
    let Value::Table(table) = value else { return Ok(Err(format!("resources[{i}] is a {}, not a table", type_name(value)))) };
    let resource = match field(table, "resource")? {
        Value::Table(t) => t,
        other => return Ok(Err(format!("{} is a {}, not a table", at("resource"), type_name(&other)))),
    };
    let text = |table: &Table, name: &str, shown: String| -> mlua::Result<Result<String, String>> {
        Ok(match field(table, name)? {
            Value::Nil => Ok(String::new()),
            Value::String(s) => Ok(go_runes::lossy(&s.as_bytes())),
            other => Err(format!("{shown} is a {}, not a string", type_name(&other))),
        })
    };
    let metadata = match field(&resource, "metadata")? {
        Value::Table(t) => t,
        other => return Ok(Err(format!("{} is a {}, not a table", at("resource.metadata"), type_name(&other)))),
    };
    let fields = [
        (&resource, "apiVersion", at("resource.apiVersion")),
        (&resource, "kind", at("resource.kind")),
        (&metadata, "namespace", at("resource.metadata.namespace")),
        (&metadata, "name", at("resource.metadata.name")),
        (table, "status", at("status")),
        (table, "message", at("message")),
    ];
    let mut read = Vec::with_capacity(fields.len());
    for (table, name, shown) in fields {
        match text(table, name, shown)? {
            Ok(t) => read.push(t),
            Err(what) => return Ok(Err(what)),
        }
    }
    let [api_version, kind, namespace, name, status, message]: [String; 6] = read.try_into().expect("six fields read");
    Ok(Ok(Judged { api_version, kind, namespace, name, status, message }))
}

/// The value of the field of `table` named `name` as Go's decoder finds it (the last of
/// those equal but for ASCII case, in byte order), `nil` when none.
fn field(table: &Table, name: &str) -> mlua::Result<Value> {
    let exact = table.raw_get::<Value>(name)?;
    if !matches!(exact, Value::Nil) {
        return Ok(exact);
    }
    Ok(match fields(&Value::Table(table.clone()), name)? {
        Ok(found) => found.into_iter().last().map_or(Value::Nil, |(_, v)| v),
        Err(_) => Value::Nil,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SOURCE: LuaSource<'static> = LuaSource { profile: "HealthCheck \"deployments\"", resource: "aggregate", key: "script" };

    /// Sveltos's own example: replicas available, or not.
    const REPLICAS: &str = r#"
function evaluate()
  local statuses = {}
  for _, resource in ipairs(resources) do
    local status = "Healthy"
    local message = ""
    if resource.status.availableReplicas ~= resource.spec.replicas then
      status = "Degraded"
      message = "expected replicas: " .. resource.spec.replicas
    end
    table.insert(statuses, {resource = resource, status = status, message = message})
  end
  local hs = {}
  if #statuses > 0 then hs.resources = statuses end
  return hs
end"#;

    fn deployment(name: &str, replicas: u64, available: u64) -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "web"},
            "spec": {"replicas": replicas}, "status": {"availableReplicas": available}})
    }

    #[test]
    fn judges_every_object_as_sveltos_example_does() {
        let objects = [deployment("a", 2, 2), deployment("b", 3, 1)];
        let judged = evaluate_statuses(&SOURCE, REPLICAS, &objects, &LuaBudget::DEFAULT).unwrap();
        assert_eq!(judged.len(), 2);
        assert_eq!((judged[0].name.as_str(), judged[0].status.as_str(), judged[0].message.as_str()), ("a", "Healthy", ""));
        assert_eq!((judged[1].namespace.as_str(), judged[1].status.as_str()), ("web", "Degraded"));
        assert_eq!(judged[1].message, "expected replicas: 3");
        assert_eq!((judged[1].api_version.as_str(), judged[1].kind.as_str()), ("apps/v1", "Deployment"));
        assert_eq!(evaluate_statuses(&SOURCE, REPLICAS, &[], &LuaBudget::DEFAULT).unwrap(), vec![], "no resources field: nothing judged");
    }

    #[test]
    fn rejects_statuses_of_the_wrong_shape_naming_the_field() {
        let cases = [
            ("return {resources = 3}", "field resources is a number, not an array"),
            ("return {resources = {5}}", "resources[1] is a number, not a table"),
            ("return {resources = {{status = 'Healthy'}}}", "resources[1].resource is a nil, not a table"),
            ("return {resources = {{resource = resources[1], status = 1}}}", "resources[1].status is a number, not a string"),
            ("return {resources = {{resource = resources[1], status = 'Healthy', message = {}}}}", "resources[1].message is a table"),
        ];
        for (body, expected) in cases {
            let script = format!("function evaluate() {body} end");
            let err = evaluate_statuses(&SOURCE, &script, &[deployment("a", 1, 1)], &LuaBudget::DEFAULT).unwrap_err().to_string();
            assert!(err.contains(expected) && err.contains("HealthCheck"), "{body}: {err}");
        }
        let err = evaluate_statuses(&SOURCE, "function evaluate() return 1 end", &[], &LuaBudget::DEFAULT).unwrap_err();
        assert!(matches!(err, LuaError::NotATable { .. }), "{err}");
    }

    #[test]
    fn a_script_that_loops_is_stopped_by_the_budget() {
        let err = evaluate_statuses(&SOURCE, "function evaluate() while true do end end", &[], &LuaBudget::DEFAULT).unwrap_err();
        assert!(matches!(err, LuaError::InstructionBudget { .. } | LuaError::TimeBudget { .. }), "{err}");
    }

    #[test]
    fn field_names_match_as_go_decodes_them() {
        let script = "function evaluate() return {Resources = {{Resource = resources[1], Status = 'Suspended'}}} end";
        let judged = evaluate_statuses(&SOURCE, script, &[deployment("a", 1, 1)], &LuaBudget::DEFAULT).unwrap();
        assert_eq!(judged[0].status, "Suspended");
    }
}
