//! An event source's aggregated selection (Sveltos `EventSource.spec.aggregatedSelection`),
//! run as sveltos-agent runs it: after the top-level code, the global `resources` is set
//! to the array of every object the resource selectors kept and `evaluate` is called
//! with it; the table it returns carries `resources`, the objects that make the event, and
//! `message`, a string. Field names are matched as Go's JSON decoder matches them.
//!
//! Sveltos takes the returned objects as they are. Airlock takes each as the name of an
//! object the selectors kept (`apiVersion`, `kind`, `metadata.namespace`,
//! `metadata.name`) and reports that object as it was read: a script cannot report an
//! object the cluster does not hold, nor change one. An entry that names no kept
//! object is left out.

use mlua::{Table, Value};

use super::args::type_name;
use super::budget::LuaBudget;
use super::error::{LuaError, LuaSource};
use super::go_runes;
use super::health::{Argument, Input, call};
use super::result::{Rejection, fields};

/// What an aggregated selection kept: indexes into the objects it was given, ascending,
/// without repeats, and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    pub kept: Vec<usize>,
    pub message: String,
}

/// Runs the aggregated selection `script` over `objects`.
pub fn evaluate_selection(
    source: &LuaSource<'_>,
    script: &str,
    objects: &[serde_json::Value],
    budget: &LuaBudget,
) -> Result<Selected, LuaError> {
    let input = Input { metrics: None, global: "resources", argument: Argument::Many(objects) };
    call(source, script, input, budget, |returned| {
        let rejected = |rejection| match rejection {
            Rejection::NotATable { found } => LuaError::NotATable { at: source.at(None), found },
            Rejection::Array => LuaError::VerdictIsArray { at: source.at(None), verdict: "resources" },
            Rejection::NotAString { field, found } => LuaError::MessageNotString { at: source.at(None), field, found },
            Rejection::NotABool { field, found } => LuaError::VerdictNotBool { at: source.at(None), field, found },
        };
        let not_a_list = |field: &[u8], found| LuaError::SelectionNotList { at: source.at(None), field: go_runes::lossy(field), found };
        let mut message = String::new();
        match fields(returned, "message")? {
            Err(rejection) => return Ok(Err(rejected(rejection))),
            Ok(found) => {
                for (name, value) in found {
                    match value {
                        Value::String(s) => message = go_runes::lossy(&s.as_bytes()),
                        Value::Nil => {}
                        other => {
                            return Ok(Err(rejected(Rejection::NotAString { field: go_runes::lossy(&name), found: type_name(&other) })));
                        }
                    }
                }
            }
        }
        let mut kept = Vec::new();
        for (name, value) in fields(returned, "resources")?.unwrap_or_default() {
            let list = match value {
                Value::Nil => continue,
                Value::Table(list) => list,
                other => return Ok(Err(not_a_list(&name, type_name(&other)))),
            };
            kept.clear();
            for entry in list.sequence_values::<Value>() {
                let Value::Table(entry) = entry? else {
                    return Ok(Err(not_a_list(&name, "list holding a non-table")));
                };
                if let Some(at) = identity(&entry)?.and_then(|id| objects.iter().position(|o| identity_of(o) == Some(id.clone()))) {
                    kept.push(at);
                }
            }
        }
        kept.sort_unstable();
        kept.dedup();
        Ok(Ok(Selected { kept, message }))
    })
}

/// `apiVersion`, `kind`, namespace (empty when none) and name of an object.
type Identity = (String, String, String, String);

fn identity(entry: &Table) -> mlua::Result<Option<Identity>> {
    let text = |table: &Table, key: &str| -> mlua::Result<String> {
        Ok(match table.raw_get::<Value>(key)? {
            Value::String(s) => go_runes::lossy(&s.as_bytes()),
            _ => String::new(),
        })
    };
    let Value::Table(metadata) = entry.raw_get::<Value>("metadata")? else { return Ok(None) };
    let id = (text(entry, "apiVersion")?, text(entry, "kind")?, text(&metadata, "namespace")?, text(&metadata, "name")?);
    Ok((!id.3.is_empty()).then_some(id))
}

fn identity_of(object: &serde_json::Value) -> Option<Identity> {
    let text = |pointer: &str| object.pointer(pointer).and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
    let id = (text("/apiVersion"), text("/kind"), text("/metadata/namespace"), text("/metadata/name"));
    (!id.3.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SOURCE: LuaSource<'static> = LuaSource { profile: "EventSource \"e\"", resource: "aggregate", key: "script" };

    fn services() -> Vec<serde_json::Value> {
        ["a", "b", "c"]
            .iter()
            .map(|n| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "web", "name": n}, "spec": {"type": if *n == "b" { "ClusterIP" } else { "LoadBalancer" }}}))
            .collect()
    }

    #[test]
    fn keeps_the_objects_the_script_returns_by_name() {
        let script = r#"function evaluate()
            local hs = {resources = {}, message = "load balancers"}
            for _, r in ipairs(resources) do
                if r.spec.type == "LoadBalancer" then table.insert(hs.resources, r) end
            end
            table.insert(hs.resources, {apiVersion = "v1", kind = "Service", metadata = {namespace = "web", name = "invented"}})
            table.insert(hs.resources, resources[1])
            return hs
        end"#;
        let selected = evaluate_selection(&SOURCE, script, &services(), &LuaBudget::DEFAULT).unwrap();
        assert_eq!(selected, Selected { kept: vec![0, 2], message: "load balancers".into() });
    }

    #[test]
    fn nothing_returned_keeps_nothing() {
        let selected = evaluate_selection(&SOURCE, "function evaluate() return {} end", &services(), &LuaBudget::DEFAULT).unwrap();
        assert!(selected.kept.is_empty() && selected.message.is_empty());
    }

    #[test]
    fn rejects_resources_that_are_not_a_list_of_objects() {
        for script in ["function evaluate() return {resources = 3} end", "function evaluate() return {resources = {1}} end"] {
            let err = evaluate_selection(&SOURCE, script, &services(), &LuaBudget::DEFAULT).unwrap_err();
            assert!(matches!(err, LuaError::SelectionNotList { .. }), "{script}: {err}");
            assert!(err.to_string().contains("EventSource"), "{err}");
        }
        let err =
            evaluate_selection(&SOURCE, "function evaluate() return {message = {}} end", &services(), &LuaBudget::DEFAULT).unwrap_err();
        assert!(matches!(err, LuaError::MessageNotString { .. }), "{err}");
    }

    #[test]
    fn a_runaway_script_is_stopped_by_the_budget() {
        let err = evaluate_selection(&SOURCE, "function evaluate() while true do end end", &services(), &LuaBudget::DEFAULT).unwrap_err();
        assert!(matches!(err, LuaError::InstructionBudget { .. } | LuaError::TimeBudget { .. }), "{err}");
    }
}
