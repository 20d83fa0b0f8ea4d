//! Tests of [`evaluate`](super::evaluate): the documented Sveltos examples, each helper,
//! each conversion quirk Airlock keeps, and every way a script is refused.

mod examples;
mod globals;
mod health;
mod json;
mod matching;
mod quirks;
mod rejects;
mod runes;
mod sandbox;
mod strings;

use std::collections::BTreeMap;

use super::{LuaBudget, LuaError, LuaSource, evaluate};

const SOURCE: LuaSource<'static> = LuaSource { profile: "web", resource: "ConfigMap default/lua", key: "lua.yaml" };

/// Runs `script` with `resources` under the default budget.
fn run(script: &str, resources: serde_json::Value) -> Result<String, LuaError> {
    run_within(script, resources, &LuaBudget::DEFAULT)
}

fn run_within(script: &str, resources: serde_json::Value, budget: &LuaBudget) -> Result<String, LuaError> {
    let resources: BTreeMap<String, serde_json::Value> = serde_json::from_value(resources).expect("resources are an object");
    evaluate(&SOURCE, script, &resources, budget)
}

/// Prints the values of a Lua expression list: strings in single quotes, arrays in
/// braces, the rest with `tostring`, separated by spaces.
const SHOW: &str = r##"
local json, strings, runes = require("json"), require("strings"), require("runes")
local function show(v)
  if type(v) == "string" then return "'" .. v .. "'" end
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  for i = 1, #v do parts[i] = show(v[i]) end
  return "{" .. table.concat(parts, ",") .. "}"
end
local function all(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = show((select(i, ...))) end
  return table.concat(parts, " ")
end
"##;

/// What [`SHOW`] prints for `expressions`, evaluated inside `evaluate` with `resources`.
fn show_with(expressions: &str, resources: serde_json::Value) -> Result<String, LuaError> {
    let script = format!("{SHOW}\nfunction evaluate()\n  return {{ resources = all({expressions}) }}\nend\n");
    run(&script, resources)
}

fn show(expressions: &str) -> String {
    show_with(expressions, serde_json::json!({})).unwrap_or_else(|err| panic!("{expressions}: {err}"))
}

/// The error of evaluating `expressions`.
fn show_err(expressions: &str) -> LuaError {
    match show_with(expressions, serde_json::json!({})) {
        Ok(text) => panic!("{expressions}: expected an error, got {text}"),
        Err(err) => err,
    }
}
