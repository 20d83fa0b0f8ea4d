//! The scripts that judge what the puller reads of its cluster, run as libsveltos runs
//! them. A health check's script (Sveltos `validateHealths[].script` and the delete and
//! deploy checks alike): the global `metrics` is set to `query name → value` (an empty
//! table without queries) before the top-level code runs; then the global `obj` is set to
//! the object (or `nil` for a check on metrics alone), and `evaluate` is called with it;
//! the table it returns says `healthy`. An evaluation's script (a Classifier's
//! `resourceSelectors[].evaluate` and `aggregatedClassification`): after the top-level
//! code, the global `obj` is set to one object, or `resources` to the array of every
//! object kept, and `evaluate` is called with it; the table it returns says `matching`.
//! Either way the verdict field must be a boolean (absent counts as false, as Go's zero
//! value) and `message`, if any, a string; field names are matched as Go's JSON decoder
//! matches them. One runner for both, so they share the sandbox, the budget and the
//! errors.

use std::collections::BTreeMap;

use mlua::Value;
use mlua::chunk::ChunkMode;

use super::args::type_name;
use super::budget::LuaBudget;
use super::error::{LuaError, LuaSource};
use super::result::{Rejection, fields};
use super::{convert, go_runes, sandbox};

/// What a health script said about one object, or about the metrics alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub healthy: bool,
    pub message: String,
}

/// What an evaluation's script said about one object or about all those kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    pub matching: bool,
    pub message: String,
}

/// What an evaluation's script is given.
#[derive(Debug, Clone, Copy)]
pub enum MatchInput<'a> {
    /// One listed object, as the global `obj`.
    Object(&'a serde_json::Value),
    /// Every object the selectors kept, as the global `resources`, an array.
    Objects(&'a [serde_json::Value]),
}

/// Runs the health `script` on `object` (`None`: a check on metrics alone).
pub fn evaluate_health(
    source: &LuaSource<'_>,
    script: &str,
    object: Option<&serde_json::Value>,
    metrics: &BTreeMap<String, f64>,
    budget: &LuaBudget,
) -> Result<Health, LuaError> {
    let input = Input { metrics: Some(metrics), global: "obj", argument: object.map_or(Argument::Nil, Argument::One) };
    let (healthy, message) = judge(source, script, input, "healthy", budget)?;
    Ok(Health { healthy, message })
}

/// Runs an evaluation's `script` on `input`.
pub fn evaluate_match(source: &LuaSource<'_>, script: &str, input: MatchInput<'_>, budget: &LuaBudget) -> Result<Matched, LuaError> {
    let input = match input {
        MatchInput::Object(object) => Input { metrics: None, global: "obj", argument: Argument::One(object) },
        MatchInput::Objects(objects) => Input { metrics: None, global: "resources", argument: Argument::Many(objects) },
    };
    let (matching, message) = judge(source, script, input, "matching", budget)?;
    Ok(Matched { matching, message })
}

/// Whether `script` parses as Lua, without running it: a check or an evaluation whose
/// script cannot run refuses its bundle before anything is applied.
pub fn check_health_syntax(source: &LuaSource<'_>, script: &str, budget: &LuaBudget) -> Result<(), LuaError> {
    let (lua, _) = sandbox::new_state(budget, source.to_string()).map_err(|err| source.error(&err, None, budget))?;
    lua.load(script)
        .set_name(format!("={}", sandbox::SCRIPT_CHUNK))
        .set_mode(ChunkMode::Text)
        .into_function()
        .map_err(|err| source.error(&err, None, budget))?;
    Ok(())
}

pub(super) enum Argument<'a> {
    Nil,
    One(&'a serde_json::Value),
    Many(&'a [serde_json::Value]),
}

/// The globals a judging script sees: `metrics` when set, before its top-level code, and
/// `global`, after it, holding the argument `evaluate` is called with.
pub(super) struct Input<'a> {
    pub(super) metrics: Option<&'a BTreeMap<String, f64>>,
    pub(super) global: &'static str,
    pub(super) argument: Argument<'a>,
}

/// Runs `script` on `input`; the verdict field `verdict` and the message it returned.
fn judge(
    source: &LuaSource<'_>,
    script: &str,
    input: Input<'_>,
    verdict: &'static str,
    budget: &LuaBudget,
) -> Result<(bool, String), LuaError> {
    call(source, script, input, budget, |returned| {
        Ok(read_verdict(returned, verdict)?.map_err(|rejection| match rejection {
            Rejection::NotATable { found } => LuaError::NotATable { at: source.at(None), found },
            Rejection::Array => LuaError::VerdictIsArray { at: source.at(None), verdict },
            Rejection::NotAString { field, found } => LuaError::MessageNotString { at: source.at(None), field, found },
            Rejection::NotABool { field, found } => LuaError::VerdictNotBool { at: source.at(None), field, found },
        }))
    })
}

/// Runs `script` on `input` in a fresh sandbox and gives what its `evaluate` returned to
/// `read`, while the state that holds it lives.
pub(super) fn call<T>(
    source: &LuaSource<'_>,
    script: &str,
    input: Input<'_>,
    budget: &LuaBudget,
    read: impl FnOnce(&Value) -> mlua::Result<Result<T, LuaError>>,
) -> Result<T, LuaError> {
    let (lua, meter) = sandbox::new_state(budget, source.to_string()).map_err(|err| source.error(&err, None, budget))?;
    let fail = |err: mlua::Error| source.error(&err, Some(&meter), budget);

    let globals = lua.globals();
    if let Some(metrics) = input.metrics {
        let table = lua.create_table_with_capacity(0, metrics.len()).map_err(fail)?;
        for (name, value) in metrics {
            table.raw_set(name.as_str(), *value).map_err(fail)?;
        }
        globals.raw_set("metrics", table).map_err(fail)?;
    }
    let chunk = lua.load(script).set_name(format!("={}", sandbox::SCRIPT_CHUNK)).set_mode(ChunkMode::Text).into_function().map_err(fail)?;
    chunk.call::<()>(()).map_err(fail)?;
    let argument = match input.argument {
        Argument::Nil => Value::Nil,
        Argument::One(object) => convert::entry(&lua, object).map_err(fail)?,
        Argument::Many(objects) => {
            let table = lua.create_table_with_capacity(objects.len(), 0).map_err(fail)?;
            for object in objects {
                table.raw_push(convert::entry(&lua, object).map_err(fail)?).map_err(fail)?;
            }
            Value::Table(table)
        }
    };
    globals.raw_set(input.global, &argument).map_err(fail)?;
    let evaluate = match globals.get::<Value>("evaluate").map_err(fail)? {
        Value::Function(function) => function,
        other => return Err(LuaError::NoEvaluate { at: source.at(None), found: type_name(&other) }),
    };
    let returned = evaluate.call::<Value>(argument).map_err(fail)?;
    meter.check().map_err(fail)?;
    read(&returned).map_err(fail)?
}

fn read_verdict(returned: &Value, verdict: &str) -> mlua::Result<Result<(bool, String), Rejection>> {
    let (mut said, mut message) = (false, String::new());
    let found = match fields(returned, verdict)? {
        Ok(found) => found,
        Err(rejection) => return Ok(Err(rejection)),
    };
    for (name, value) in found {
        match value {
            Value::Boolean(b) => said = b,
            Value::Nil => {}
            other => return Ok(Err(Rejection::NotABool { field: go_runes::lossy(&name), found: type_name(&other) })),
        }
    }
    for (name, value) in fields(returned, "message")?.unwrap_or_default() {
        match value {
            Value::String(s) => message = go_runes::lossy(&s.as_bytes()),
            Value::Nil => {}
            other => return Ok(Err(Rejection::NotAString { field: go_runes::lossy(&name), found: type_name(&other) })),
        }
    }
    Ok(Ok((said, message)))
}
