//! The Lua state a script runs in: Lua 5.1's base, `string`, `table` and `math`
//! libraries without what reaches outside the state or escapes the budget, plus the
//! helpers libsveltos registers and the three modules `require` may load.
//!
//! Sveltos opens every gopher-lua library, `os` and `io` included. Airlock's publisher
//! holds signing keys, so a profile's script must not read its files or environment:
//! there is no `os`, `io`, `debug` or `package`, no `dofile`, `loadfile`, `load` or
//! `loadstring` (nor bytecode), and `require` knows only `json`, `strings` and `runes`.
//! Also gone, for the budget: `coroutine` (a coroutine could catch the budget error) and
//! `newproxy` (its finalizers run with hooks off). Gone for determinism, since a render
//! must come out the same every time: `math.random` and `math.randomseed`. `print` goes
//! to the publisher's debug log. `pcall` and `xpcall` re-raise once a budget has run out.

use std::rc::Rc;

use mlua::chunk::ChunkMode;
use mlua::{Lua, LuaOptions, StdLib, Table, Value};

use super::args::{Helper, register};
use super::budget::{self, LuaBudget, Meter};
use super::{globals, json, runes, strings};

/// The chunk name of the script, which Lua puts before every position: `script:3:`.
pub(super) const SCRIPT_CHUNK: &str = "script";

const REMOVED: &[&str] = &["coroutine", "dofile", "load", "loadfile", "loadstring", "newproxy"];

/// Modules loaded so far, by name, so that every `require` of one returns the same table.
const LOADED: &str = "airlock.lua.loaded";

/// Wraps `pcall`, `xpcall` and `print`; run with the meter's check and the log function.
const PRELUDE: &str = r##"
local check, log = ...
local pcall, xpcall, select, tostring, concat = pcall, xpcall, select, tostring, table.concat
local function settled(...)
  check()
  return ...
end
function _G.pcall(f, ...)
  return settled(pcall(f, ...))
end
function _G.xpcall(f, handler)
  return settled(xpcall(f, handler))
end
function _G.print(...)
  local parts = {}
  for i = 1, select("#", ...) do
    parts[i] = tostring((select(i, ...)))
  end
  log(concat(parts, "\t"))
end
"##;

/// A fresh state under `budget`; `source` names the script in `print`'s log lines.
pub(super) fn new_state(budget: &LuaBudget, source: String) -> mlua::Result<(Lua, Rc<Meter>)> {
    let lua = Lua::new_with(StdLib::STRING | StdLib::TABLE | StdLib::MATH, LuaOptions::default())?;
    let meter = budget::install(&lua, budget, SCRIPT_CHUNK)?;
    let globals = lua.globals();
    for name in REMOVED {
        globals.raw_set(*name, Value::Nil)?;
    }
    let math: Table = globals.raw_get("math")?;
    math.raw_set("random", Value::Nil)?;
    math.raw_set("randomseed", Value::Nil)?;
    globals::register_all(&lua, &globals)?;
    lua.set_named_registry_value(LOADED, lua.create_table()?)?;
    register(&lua, &globals, &[("require", REQUIRE)])?;

    let checked = meter.clone();
    let check = lua.create_function(move |_, ()| checked.check())?;
    let log = lua.create_function(move |_, line: mlua::LuaString| {
        tracing::debug!(script = %source, "lua print: {}", line.to_string_lossy());
        Ok(())
    })?;
    lua.load(PRELUDE).set_name("=airlock").set_mode(ChunkMode::Text).call::<()>((check, log))?;
    Ok((lua, meter))
}

const REQUIRE: Helper = |a| {
    let name = a.string(1)?;
    let loaded: Table = a.lua.named_registry_value(LOADED)?;
    if let Value::Table(module) = loaded.raw_get::<Value>(&name)? {
        return a.ret(module);
    }
    let module = match &*name.as_bytes() {
        b"json" => json::module(a.lua)?,
        b"strings" => strings::module(a.lua)?,
        b"runes" => runes::module(a.lua)?,
        _ => {
            let name = name.to_string_lossy();
            return Err(mlua::Error::runtime(format!("module {name:?} not found: Airlock's Lua offers json, strings and runes")));
        }
    };
    loaded.raw_set(&name, &module)?;
    a.ret(module)
};
