//! A health check's script (Sveltos `validateHealths[].script` and the delete and
//! deploy checks alike), run as libsveltos runs it: the global `metrics` is set to
//! `query name → value` (an empty table without queries) before the top-level code
//! runs; then the global `obj` is set to the object (or `nil` for a check on metrics
//! alone), and `evaluate` is called with it. It must return a table whose `healthy`
//! field is a boolean (absent counts as false, as Go's zero value) and whose `message`,
//! if any, is a string; field names are matched as Go's JSON decoder matches them.

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

/// Runs the health `script` on `object` (`None`: a check on metrics alone).
pub fn evaluate_health(
    source: &LuaSource<'_>,
    script: &str,
    object: Option<&serde_json::Value>,
    metrics: &BTreeMap<String, f64>,
    budget: &LuaBudget,
) -> Result<Health, LuaError> {
    let (lua, meter) = sandbox::new_state(budget, source.to_string()).map_err(|err| source.error(&err, None, budget))?;
    let fail = |err: mlua::Error| source.error(&err, Some(&meter), budget);

    let globals = lua.globals();
    let table = lua.create_table_with_capacity(0, metrics.len()).map_err(fail)?;
    for (name, value) in metrics {
        table.raw_set(name.as_str(), *value).map_err(fail)?;
    }
    globals.raw_set("metrics", table).map_err(fail)?;
    let chunk = lua.load(script).set_name(format!("={}", sandbox::SCRIPT_CHUNK)).set_mode(ChunkMode::Text).into_function().map_err(fail)?;
    chunk.call::<()>(()).map_err(fail)?;
    let argument = match object {
        Some(object) => convert::entry(&lua, object).map_err(fail)?,
        None => Value::Nil,
    };
    globals.raw_set("obj", &argument).map_err(fail)?;
    let evaluate = match globals.get::<Value>("evaluate").map_err(fail)? {
        Value::Function(function) => function,
        other => return Err(LuaError::NoEvaluate { at: source.at(None), found: type_name(&other) }),
    };
    let returned = evaluate.call::<Value>(argument).map_err(fail)?;
    meter.check().map_err(fail)?;
    health(&returned).map_err(fail)?.map_err(|rejection| match rejection {
        Rejection::NotATable { found } => LuaError::NotATable { at: source.at(None), found },
        Rejection::Array => LuaError::HealthIsArray { at: source.at(None) },
        Rejection::NotAString { field, found } => LuaError::MessageNotString { at: source.at(None), field, found },
        Rejection::NotABool { field, found } => LuaError::HealthyNotBool { at: source.at(None), field, found },
    })
}

/// Whether `script` parses as Lua, without running it: a check whose script cannot run
/// refuses its bundle before anything is applied.
pub fn check_health_syntax(source: &LuaSource<'_>, script: &str, budget: &LuaBudget) -> Result<(), LuaError> {
    let (lua, _) = sandbox::new_state(budget, source.to_string()).map_err(|err| source.error(&err, None, budget))?;
    lua.load(script)
        .set_name(format!("={}", sandbox::SCRIPT_CHUNK))
        .set_mode(ChunkMode::Text)
        .into_function()
        .map_err(|err| source.error(&err, None, budget))?;
    Ok(())
}

fn health(returned: &Value) -> mlua::Result<Result<Health, Rejection>> {
    let mut health = Health { healthy: false, message: String::new() };
    let healthy = match fields(returned, "healthy")? {
        Ok(found) => found,
        Err(rejection) => return Ok(Err(rejection)),
    };
    for (name, value) in healthy {
        match value {
            Value::Boolean(b) => health.healthy = b,
            Value::Nil => {}
            other => return Ok(Err(Rejection::NotABool { field: go_runes::lossy(&name), found: type_name(&other) })),
        }
    }
    for (name, value) in fields(returned, "message")?.unwrap_or_default() {
        match value {
            Value::String(s) => health.message = go_runes::lossy(&s.as_bytes()),
            Value::Nil => {}
            other => return Ok(Err(Rejection::NotAString { field: go_runes::lossy(&name), found: type_name(&other) })),
        }
    }
    Ok(Ok(health))
}
