//! Sveltos's Lua, for both of its uses. The publisher's: one data value of a ConfigMap or
//! Secret annotated `projectsveltos.io/lua`, run as a Lua program that returns manifests
//! ([`evaluate`], a pure function of the script, the `templateResourceRefs` objects and a
//! [`LuaBudget`]). The puller's: a health check's script, which judges one object of the
//! managed cluster ([`evaluate_health`]), and a Classifier's, which judges one object or
//! all those kept ([`evaluate_match`]), both in module `health`, and a HealthCheck's, which
//! gives each object kept a health status ([`evaluate_statuses`]). A new Lua state per call, so
//! either runs on any thread; the rest of this page is about instantiation.
//!
//! It does not decide which resources are Lua (nor that a `projectsveltos.io/template`
//! annotation wins over this one), gather the objects, or split and parse the text it
//! returns; the caller does, as for any manifest. Sveltos's `--lua-methods` prelude is
//! the caller's to prepend too.
//!
//! As addon-controller runs it (`instantiateWithLuaScript`): an empty script yields
//! nothing; the top-level code runs first, without `resources`; then the global
//! `resources` is set to `identifier → object` and the global function `evaluate` is
//! called with that same table as its one argument. It must return a table whose
//! `resources` field is a string of YAML or JSON manifests; without that field the
//! script deploys nothing, which is no error ([`result`] has the details).
//!
//! Where Sveltos's conversions lose or bend data, Airlock reproduces it: what Sveltos
//! deploys is what a pull-mode cluster must get, and a script tuned against Sveltos
//! counts on it. So integers, nested lists and `null`s vanish from lists in `resources`
//! ([`convert`]), and `json.encode` refuses a table it meets twice ([`json`]). Lua 5.1
//! has only doubles, as gopher-lua: integers beyond 2^53 round, and `json.encode` writes
//! numbers as Go writes a `float64` (`3`, `1e+21`). One difference stays: Lua's own
//! number-to-string conversion (`..`, `tostring`) is C Lua's `%.14g`, where gopher-lua
//! prints Go's shortest form, so integers of 15 or more digits and non-integers with
//! more than 14 significant digits print differently; converting them with
//! `string.format` gives the same text under both.
//!
//! Unlike Sveltos, the script runs in a sandbox ([`sandbox`]) and under a budget
//! ([`budget`]): the publisher holds signing keys, and a profile's author must be able
//! neither to read its files or environment nor to stall it.
//!
//! Engine: `mlua` with a vendored PUC Lua 5.1, the version gopher-lua implements (its
//! `setfenv`, `unpack`, `#` and pattern rules), built without LuaJIT, whose JIT-compiled
//! loops would escape the instruction hook.
// The overview names private modules; `cargo doc --document-private-items` renders them.
#![allow(rustdoc::private_intra_doc_links)]

mod args;
mod budget;
mod case;
mod convert;
mod error;
mod globals;
mod go_runes;
mod health;
mod json;
mod result;
mod runes;
mod sandbox;
mod selection;
mod statuses;
mod strings;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use mlua::Value;
use mlua::chunk::ChunkMode;

pub use budget::LuaBudget;
pub use error::{LuaError, LuaSource};
pub use health::{Health, MatchInput, Matched, check_health_syntax, evaluate_health, evaluate_match};
use result::Rejection;
pub use selection::{Selected, evaluate_selection};
pub use statuses::{Judged, evaluate_statuses};

/// Runs `script` with `resources` (`identifier → object`) and returns the manifest text of
/// the `resources` field of what its `evaluate` returns: empty when there is none.
pub fn evaluate(
    source: &LuaSource<'_>,
    script: &str,
    resources: &BTreeMap<String, serde_json::Value>,
    budget: &LuaBudget,
) -> Result<String, LuaError> {
    if script.is_empty() {
        return Ok(String::new());
    }
    let (lua, meter) = sandbox::new_state(budget, source.to_string()).map_err(|err| source.error(&err, None, budget))?;
    let fail = |err: mlua::Error| source.error(&err, Some(&meter), budget);

    let chunk = lua.load(script).set_name(format!("={}", sandbox::SCRIPT_CHUNK)).set_mode(ChunkMode::Text).into_function().map_err(fail)?;
    chunk.call::<()>(()).map_err(fail)?;
    let globals = lua.globals();
    let table = convert::resources(&lua, resources).map_err(fail)?;
    globals.raw_set("resources", &table).map_err(fail)?;
    let evaluate = match globals.get::<Value>("evaluate").map_err(fail)? {
        Value::Function(function) => function,
        other => return Err(LuaError::NoEvaluate { at: source.at(None), found: args::type_name(&other) }),
    };
    let returned = evaluate.call::<Value>(table).map_err(fail)?;
    meter.check().map_err(fail)?;

    let text = result::manifests(&returned).map_err(fail)?.map_err(|rejection| match rejection {
        Rejection::NotATable { found } => LuaError::NotATable { at: source.at(None), found },
        Rejection::Array => LuaError::ResultIsArray { at: source.at(None) },
        Rejection::NotAString { field, found } | Rejection::NotABool { field, found } => {
            LuaError::ResourcesNotString { at: source.at(None), field, found }
        }
    })?;
    if text.len() > budget.output_bytes {
        return Err(LuaError::OutputTooLarge { at: source.at(None), actual_bytes: text.len(), limit_bytes: budget.output_bytes });
    }
    Ok(text)
}
