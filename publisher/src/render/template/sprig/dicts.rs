//! Sprig's dictionary functions: `dict`, `get`, `set`, `unset`, `hasKey`, `pluck`,
//! `dig`, `merge`, `mergeOverwrite`, `keys`, `values`, `pick`, `omit`, `deepCopy` and the
//! `must*` twins (the same here).
//!
//! Departure: template values are immutable, so `set`, `unset`, `merge` and
//! `mergeOverwrite` return the changed dictionary and leave the one passed in as it was;
//! Go changes it in place. Helm's idiom `{{ $_ := set $d "k" "v" }}` then does nothing:
//! write `{{ $d = set $d "k" "v" }}`. `keys` and `values` come in key order, one of the
//! orders Go's random map iteration may give.

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use super::args::{Call, Func, Map, failure, map, map_at, string_at, strings, table, text, want, want_at_least, wrong_type};
use super::cast::{is_empty, strval};
use crate::render::template::bounds;

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["dict"], |a| Ok(dict(a))),
        (&["get"], |a| {
            want("get", a, 2)?;
            Ok(map_at("get", a, 0)?.get(string_at("get", a, 1)?).cloned().unwrap_or_else(|| text("")))
        }),
        (&["set"], |a| {
            want("set", a, 3)?;
            let mut entries = (**map_at("set", a, 0)?).clone();
            entries.insert(Arc::from(string_at("set", a, 1)?), a[2].clone());
            Ok(map(entries))
        }),
        (&["unset"], |a| {
            want("unset", a, 2)?;
            let mut entries = (**map_at("unset", a, 0)?).clone();
            entries.remove(string_at("unset", a, 1)?);
            Ok(map(entries))
        }),
        (&["hasKey"], |a| {
            want("hasKey", a, 2)?;
            Ok(Value::Bool(map_at("hasKey", a, 0)?.contains_key(string_at("hasKey", a, 1)?)))
        }),
        (&["pluck"], |a| {
            want_at_least("pluck", a, 1)?;
            let key = string_at("pluck", a, 0)?;
            let dicts: Vec<&Map> = (1..a.len()).map(|i| map_at("pluck", a, i)).collect::<Result<_, _>>()?;
            Ok(Value::List(dicts.iter().filter_map(|d| d.get(key).cloned()).collect()))
        }),
        (&["dig"], dig),
        (&["merge", "mustMerge"], |a| merged("merge", a, false)),
        (&["mergeOverwrite", "mustMergeOverwrite"], |a| merged("mergeOverwrite", a, true)),
        (&["keys"], |a| {
            let dicts: Vec<&Map> = (0..a.len()).map(|i| map_at("keys", a, i)).collect::<Result<_, _>>()?;
            bounds::check_items("keys", dicts.iter().map(|d| d.len()).sum())?;
            Ok(strings(dicts.iter().flat_map(|d| d.keys().cloned())))
        }),
        (&["values"], |a| {
            want("values", a, 1)?;
            Ok(Value::List(map_at("values", a, 0)?.values().cloned().collect()))
        }),
        (&["pick"], |a| {
            want_at_least("pick", a, 1)?;
            let from = map_at("pick", a, 0)?;
            let keys: Vec<&str> = (1..a.len()).map(|i| string_at("pick", a, i)).collect::<Result<_, _>>()?;
            Ok(map(keys.into_iter().filter_map(|k| from.get_key_value(k).map(|(k, v)| (k.clone(), v.clone()))).collect()))
        }),
        (&["omit"], |a| {
            want_at_least("omit", a, 1)?;
            let from = map_at("omit", a, 0)?;
            let keys: Vec<&str> = (1..a.len()).map(|i| string_at("omit", a, i)).collect::<Result<_, _>>()?;
            Ok(map(from.iter().filter(|(k, _)| !keys.contains(&&***k)).map(|(k, v)| (k.clone(), v.clone())).collect()))
        }),
        // Values are immutable, so a copy is the value itself.
        (&["deepCopy", "mustDeepCopy"], |a| {
            want("deepCopy", a, 1)?;
            Ok(a[0].clone())
        }),
    ])
}

/// Sprig's `dict k1 v1 k2 v2 ...`; keys are stringified, a key without a value maps to "".
fn dict(args: &[Value]) -> Value {
    let entries = args.chunks(2).map(|pair| {
        let value = pair.get(1).cloned().unwrap_or_else(|| text(""));
        (Arc::from(strval(&pair[0])), value)
    });
    map(entries.collect())
}

/// Sprig's `dig K1 K2 ... DEFAULT DICT`: the value at the path of keys, or DEFAULT where
/// a key is missing.
fn dig(args: &[Value]) -> Call {
    want_at_least("dig", args, 3)?;
    let (keys, rest) = args.split_at(args.len() - 2);
    let fallback = &rest[0];
    let mut current = map_at("dig", args, args.len() - 1)?;
    for (i, key) in keys.iter().enumerate() {
        let key = key.as_str().ok_or_else(|| wrong_type("dig", i, "a string", key))?;
        let Some(step) = current.get(key) else { return Ok(fallback.clone()) };
        if i + 1 == keys.len() {
            return Ok(step.clone());
        }
        current = match step {
            Value::Map(next) => next,
            other => return Err(failure("dig", format!("the value at {key:?} is a {}, not a map", other.type_name()))),
        };
    }
    Ok(fallback.clone())
}

/// `merge DST SRC...` (DST wins) and `mergeOverwrite DST SRC...` (each SRC wins), as
/// mergo merges maps: nested maps merge key by key, nil in a source is skipped, and an
/// empty value in DST is filled even without overwrite.
fn merged(name: &str, args: &[Value], overwrite: bool) -> Call {
    want_at_least(name, args, 1)?;
    let mut out = (**map_at(name, args, 0)?).clone();
    for i in 1..args.len() {
        merge_into(&mut out, map_at(name, args, i)?, overwrite, 0).map_err(|why| failure(name, why))?;
    }
    Ok(map(out))
}

fn merge_into(dst: &mut BTreeMap<Arc<str>, Value>, src: &BTreeMap<Arc<str>, Value>, overwrite: bool, depth: usize) -> Result<(), String> {
    if depth > bounds::MAX_DEPTH {
        return Err(format!("maps nest deeper than {} levels", bounds::MAX_DEPTH));
    }
    for (key, incoming) in src {
        if matches!(incoming, Value::Nil) {
            continue;
        }
        match dst.get_mut(key) {
            Some(Value::Map(existing)) if matches!(incoming, Value::Map(_)) => {
                let Value::Map(incoming) = incoming else { continue };
                let mut nested = (**existing).clone();
                merge_into(&mut nested, incoming, overwrite, depth + 1)?;
                *existing = Arc::new(nested);
            }
            Some(existing) if overwrite || is_empty(existing) => *existing = incoming.clone(),
            Some(_) => {}
            None => {
                dst.insert(key.clone(), incoming.clone());
            }
        }
    }
    Ok(())
}
