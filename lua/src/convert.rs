//! The `resources` table, built from the management objects as libsveltos's `MapToTable`
//! builds it from Kubernetes' unstructured content, where a JSON integer is an `int64`
//! and any other number a `float64`.
//!
//! In an object, `null` is dropped (Lua cannot hold it) and everything else converted.
//! In a list only objects, strings, booleans and non-integer numbers are kept: integers,
//! nested lists and `null`s are dropped and the list closes up, so `ports: [80, 443]`
//! arrives as an empty table and `args: ["a", null, "b"]` as `{"a", "b"}`. That loss is
//! kept: Airlock renders what Sveltos deploys, and a script written against Sveltos has
//! only ever seen the shortened lists.

use std::collections::BTreeMap;

use mlua::{Lua, Table, Value};
use serde_json::Value as Json;

/// `identifier → object` for every entry of `resources`.
pub(super) fn resources(lua: &Lua, resources: &BTreeMap<String, Json>) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, resources.len())?;
    for (identifier, object) in resources {
        table.raw_set(identifier.as_str(), entry(lua, object)?)?;
    }
    Ok(table)
}

/// A value held by an object's field: `nil` for `null`. A health check's object arrives
/// as this too, as libsveltos's `MapToTable` converts it.
pub(super) fn entry(lua: &Lua, value: &Json) -> mlua::Result<Value> {
    Ok(match value {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Boolean(*b),
        Json::Number(n) => Value::Number(n.as_f64().unwrap_or_default()),
        Json::String(s) => Value::String(lua.create_string(s)?),
        Json::Array(items) => Value::Table(list(lua, items)?),
        Json::Object(fields) => {
            let table = lua.create_table_with_capacity(0, fields.len())?;
            for (key, value) in fields {
                table.raw_set(key.as_str(), entry(lua, value)?)?;
            }
            Value::Table(table)
        }
    })
}

fn list(lua: &Lua, items: &[Json]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(items.len(), 0)?;
    for item in items {
        let kept = match item {
            Json::Null | Json::Array(_) => continue,
            Json::Number(n) if n.as_i64().is_some() => continue,
            Json::Number(_) | Json::Bool(_) | Json::String(_) | Json::Object(_) => entry(lua, item)?,
        };
        table.raw_push(kept)?;
    }
    Ok(table)
}
