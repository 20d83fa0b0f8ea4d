//! Sveltos's resource functions (addon-controller's template function map): `getResource`,
//! `copy`, `getField`, `setField`, `removeField`, `chainSetField`, `chainRemoveField`.
//! Entry point: [`funcs`].
//!
//! The first four take the `identifier` of a `templateResourceRefs` entry, as Sveltos's
//! documentation writes them (`{{ copy "ExternalSecret" }}`); newer Sveltos releases take
//! the object itself (`{{ copy (index .MgmtResources "ExternalSecret") }}`), which works
//! too. The chain functions take an object and return it changed, for the next call.
//! Field paths are dot-separated keys (`spec.template.spec.containers`).
//!
//! Like Sveltos, `getResource`, `copy`, `setField` and `removeField` drop what only the
//! management cluster's API server may set: `metadata.uid`, `metadata.resourceVersion`
//! and `metadata.managedFields`; `copy`, `setField` and `removeField` return the object
//! as YAML. A field path through something that is not a map, or an identifier no entry
//! declares, fails the render where Sveltos logs it and returns ""; an optional entry whose
//! object is missing gives nothing (nil or ""), as in Sveltos. Unlike Sveltos, which changes
//! the object in `.MgmtResources` in place, changes never leak into later calls.

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::{TemplateError, Value, ValueFunc};

use super::session::Session;
use super::sprig::args::{Map, failure, string_at, text, want, wrong_type};
use super::sprig::formats::yaml_text;
use super::values::to_json;

/// The `metadata` fields `resetFields` clears.
const SERVER_FIELDS: [&str; 3] = ["uid", "resourceVersion", "managedFields"];

pub(super) fn funcs(session: &Session) -> Vec<(String, ValueFunc)> {
    let with = |name: &'static str, f: fn(&str, &[Value], Map) -> gotmpl::Result<Value>| {
        let session = session.clone();
        let func: ValueFunc = Arc::new(move |a: &[Value]| {
            if a.is_empty() {
                return Err(TemplateError::ArgCount { name: name.to_string(), expected: 1, got: 0 });
            }
            let object = match &a[0] {
                Value::String(identifier) => match session.resource(name, identifier)? {
                    Some(object) => object,
                    None => return Ok(nothing(name)),
                },
                other => other.clone(),
            };
            match object {
                Value::Map(object) => f(name, a, object),
                other => Err(wrong_type(name, 0, "an identifier or an object", &other)),
            }
        });
        (name.to_string(), func)
    };
    vec![
        with("getResource", |name, a, object| {
            want(name, a, 1)?;
            Ok(Value::Map(reset(&object)))
        }),
        with("copy", |name, a, object| {
            want(name, a, 1)?;
            as_yaml(name, &reset(&object))
        }),
        with("getField", |name, a, object| {
            want(name, a, 2)?;
            let path = string_at(name, a, 1)?;
            Ok(field(&object, path).map_err(|why| failure(name, why))?.unwrap_or_else(|| text("")))
        }),
        with("setField", |name, a, object| {
            want(name, a, 3)?;
            let changed = set(&object, &keys(string_at(name, a, 1)?), &a[2]).map_err(|why| failure(name, why))?;
            as_yaml(name, &reset(&changed))
        }),
        with("removeField", |name, a, object| {
            want(name, a, 2)?;
            as_yaml(name, &reset(&remove(&object, &keys(string_at(name, a, 1)?))))
        }),
        with("chainSetField", |name, a, object| {
            want(name, a, 3)?;
            Ok(Value::Map(set(&object, &keys(string_at(name, a, 1)?), &a[2]).map_err(|why| failure(name, why))?))
        }),
        with("chainRemoveField", |name, a, object| {
            want(name, a, 2)?;
            Ok(Value::Map(remove(&object, &keys(string_at(name, a, 1)?))))
        }),
    ]
}

/// What `name` gives for an optional entry whose object is missing: Sveltos's functions
/// return nil where they return an object, "" where they return text.
fn nothing(name: &str) -> Value {
    match name {
        "getResource" | "chainSetField" | "chainRemoveField" => Value::Nil,
        _ => text(""),
    }
}

fn keys(path: &str) -> Vec<&str> {
    path.split('.').collect()
}

/// Sveltos's `resetFields`: the object without its server-set metadata.
fn reset(object: &Map) -> Map {
    let mut changed = object.clone();
    for key in SERVER_FIELDS {
        changed = remove(&changed, &["metadata", key]);
    }
    changed
}

fn as_yaml(name: &str, object: &Map) -> gotmpl::Result<Value> {
    let json = to_json(&Value::Map(object.clone())).map_err(|why| failure(name, why))?;
    yaml_text(name, &json)
}

/// The value at `path`, `None` when a key is missing; an error when the path runs
/// through something that is not a map (unstructured's `NestedFieldCopy`).
fn field(object: &Map, path: &str) -> Result<Option<Value>, String> {
    let mut current = object;
    let keys = keys(path);
    for (i, key) in keys.iter().enumerate() {
        let Some(value) = current.get(*key) else { return Ok(None) };
        if i + 1 == keys.len() {
            return Ok(Some(value.clone()));
        }
        current = match value {
            Value::Map(next) => next,
            other => {
                return Err(format!(
                    "{} accessor error: {} is a {}, expected a map",
                    keys[..=i].join("."),
                    keys[..=i].join("."),
                    other.type_name()
                ));
            }
        };
    }
    Ok(None)
}

/// `object` with `value` at `path`, making the maps on the way (unstructured's
/// `SetNestedField`); an error when the path runs through something that is not a map.
fn set(object: &Map, path: &[&str], value: &Value) -> Result<Map, String> {
    let Some((first, rest)) = path.split_first() else { return Ok(object.clone()) };
    let mut changed = (**object).clone();
    let inner = if rest.is_empty() {
        value.clone()
    } else {
        let nested = match changed.get(*first) {
            None => Arc::new(BTreeMap::new()),
            Some(Value::Map(nested)) => nested.clone(),
            Some(other) => return Err(format!("value cannot be set because {first} is a {}, not a map", other.type_name())),
        };
        Value::Map(set(&nested, rest, value)?)
    };
    changed.insert(Arc::from(*first), inner);
    Ok(Arc::new(changed))
}

/// `object` without the field at `path` (unstructured's `RemoveNestedField`); a path
/// that does not lead to a field changes nothing.
fn remove(object: &Map, path: &[&str]) -> Map {
    let Some((first, rest)) = path.split_first() else { return object.clone() };
    let replacement = match (rest.is_empty(), object.get(*first)) {
        (_, None) => return object.clone(),
        (true, Some(_)) => None,
        (false, Some(Value::Map(nested))) => Some(Value::Map(remove(nested, rest))),
        (false, Some(_)) => return object.clone(),
    };
    let mut changed = (**object).clone();
    match replacement {
        Some(inner) => changed.insert(Arc::from(*first), inner),
        None => changed.remove(*first),
    };
    Arc::new(changed)
}
