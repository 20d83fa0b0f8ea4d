//! The bounds on every value a template function builds. The render's output cap counts
//! bytes as they are written, but a function builds its whole result first: without
//! these bounds `{{ indent 99999999999 "x" }}` asks for 100 GB in one call,
//! `replace "" $a $a` fed its own result squares it per step, and `until 9999999999`
//! builds ten billion numbers, so the publisher dies of memory before the output cap
//! sees a byte (found with the `template` fuzz target).
//!
//! No string over a bundle file's size could be published anyway, and no loop may run
//! more than the render's range limit, which is also the longest list. Functions whose
//! result holds all their string arguments (`quote`, `squote`, `join`) are checked before
//! they run; every function's result after, which stops growth by repeated calls within
//! one step. Functions that multiply (`indent`, `replace`, `repeat`, `until`, ...)
//! check their own estimate first. Nesting is bounded too: printing, encoding and
//! comparing values recurse.
//!
//! Not covered: gotmpl's own `print`, `printf` and `println`, which it does not export
//! to wrap; `printf "%s%s" $a $a` in a loop still doubles without bound.

use std::collections::HashMap;
use std::sync::Arc;

use airlock_bundle::Limits;
use gotmpl::{FuncMap, TemplateError, Value, ValueFunc};

/// The longest string a template function may return: a bundle file's limit.
pub(super) const MAX_VALUE_BYTES: usize = Limits::SPEC.file_bytes as usize;

/// The most items a list or dictionary a function returns may hold: a list longer than
/// the render's loop limit could not be ranged over anyway.
pub(super) const MAX_ITEMS: usize = 1_000_000;

/// The deepest a value a function returns may nest. Kubernetes objects and chart values
/// nest a few dozen levels at most.
pub(super) const MAX_DEPTH: usize = 100;

/// Functions whose result contains every string argument (lists one level deep).
const CONCATENATING: [&str; 3] = ["quote", "squote", "join"];

/// `funcs`, each bounded.
pub(super) fn bounded(funcs: FuncMap) -> FuncMap {
    funcs.into_iter().map(|(name, f)| (name.clone(), capped(name, f))).collect()
}

/// `Err` naming `function` when a result of `bytes` would exceed the bound.
pub(super) fn check(function: &str, bytes: usize) -> gotmpl::Result<()> {
    if bytes <= MAX_VALUE_BYTES {
        return Ok(());
    }
    Err(TemplateError::Exec(format!(
        "error calling {function}: its result of {bytes} bytes would exceed the {MAX_VALUE_BYTES}-byte limit of a value"
    )))
}

/// `Err` naming `function` when a result of `items` would exceed the bound.
pub(super) fn check_items(function: &str, items: usize) -> gotmpl::Result<()> {
    if items <= MAX_ITEMS {
        return Ok(());
    }
    Err(TemplateError::Exec(format!(
        "error calling {function}: its result of {items} items would exceed the {MAX_ITEMS}-item limit of a value"
    )))
}

fn capped(name: String, f: ValueFunc) -> ValueFunc {
    let concatenating = CONCATENATING.contains(&name.as_str());
    Arc::new(move |args: &[Value]| {
        if concatenating {
            check(&name, args.iter().map(string_bytes).fold(0, usize::saturating_add))?;
        }
        let value = f(args)?;
        match &value {
            Value::String(s) => check(&name, s.len())?,
            Value::List(items) => check_items(&name, items.len())?,
            Value::Map(entries) => check_items(&name, entries.len())?,
            _ => {}
        }
        if matches!(value, Value::List(_) | Value::Map(_)) && height(&value, &mut HashMap::new(), 0) > MAX_DEPTH {
            return Err(TemplateError::Exec(format!(
                "error calling {name}: its result nests deeper than the {MAX_DEPTH}-level limit of a value"
            )));
        }
        Ok(value)
    })
}

fn string_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::List(items) => items.iter().map(|v| if let Value::String(s) = v { s.len() } else { 0 }).fold(0, usize::saturating_add),
        _ => 0,
    }
}

/// How many container levels `value` has, counting up to just past [`MAX_DEPTH`] from
/// `depth`. Lists and dictionaries shared within the value are measured once.
fn height(value: &Value, seen: &mut HashMap<usize, usize>, depth: usize) -> usize {
    let (key, children): (usize, Box<dyn Iterator<Item = &Value>>) = match value {
        Value::List(items) => (items.as_ptr() as usize, Box::new(items.iter())),
        Value::Map(entries) => (Arc::as_ptr(entries) as usize, Box::new(entries.values())),
        _ => return 0,
    };
    if let Some(known) = seen.get(&key) {
        return *known;
    }
    if depth > MAX_DEPTH {
        return 1;
    }
    let mut tallest = 0;
    for child in children {
        tallest = tallest.max(height(child, seen, depth + 1));
        if depth + tallest > MAX_DEPTH {
            break;
        }
    }
    seen.insert(key, tallest + 1);
    tallest + 1
}
