//! Sprig's reflection functions (`typeOf`, `typeIs`, `typeIsLike`, `kindOf`, `kindIs`,
//! `deepEqual`) and the deep equality `has`, `without` and `uniq` use.
//!
//! Go tells `int` from `int64`; a template value here has one integer type, named
//! `int64` as in the cluster data and Sprig's math results, and `typeIs`/`kindIs` accept
//! `int` for it too. Lists are `[]interface {}` and dictionaries
//! `map[string]interface {}`, whichever Sprig function made them.

use std::fmt::Write as _;

use gotmpl::Value;

use super::args::{Func, failure, str_arg, table, text, want};
use crate::render::template::bounds::MAX_VALUE_BYTES;

/// Comparisons one deep equality may make: shared sub-lists let a small value stand for
/// an exponentially large tree.
const COMPARISONS: usize = 1 << 24;

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["typeOf"], |a| {
            want("typeOf", a, 1)?;
            Ok(text(type_name(&a[0])))
        }),
        (&["kindOf"], |a| {
            want("kindOf", a, 1)?;
            Ok(text(kind_name(&a[0])))
        }),
        (&["typeIs"], |a| Ok(Value::Bool(names_match(str_arg("typeIs", a, 2, 0)?, type_name(&a[1]))))),
        (&["typeIsLike"], |a| {
            let wanted = str_arg("typeIsLike", a, 2, 0)?;
            let actual = type_name(&a[1]);
            Ok(Value::Bool(names_match(wanted, actual) || names_match(wanted.strip_prefix('*').unwrap_or(""), actual)))
        }),
        (&["kindIs"], |a| Ok(Value::Bool(names_match(str_arg("kindIs", a, 2, 0)?, kind_name(&a[1]))))),
        (&["deepEqual"], |a| {
            want("deepEqual", a, 2)?;
            Ok(Value::Bool(deep_equal_within(&a[0], &a[1]).map_err(|why| failure("deepEqual", why))?))
        }),
    ])
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "<nil>",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int64",
        Value::Uint(_) => "uint64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => "map[string]interface {}",
        _ => "func([]interface {}) (interface {}, error)",
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Bool(_) | Value::Int(_) | Value::Uint(_) | Value::Float(_) | Value::String(_) => type_name(v),
        _ => "func",
    }
}

/// `wanted` names `actual`, where `int` also names the one integer type.
fn names_match(wanted: &str, actual: &str) -> bool {
    wanted == actual || (wanted == "int" && actual == "int64")
}

/// Go's `reflect.DeepEqual` for template values, failing when the comparison would take
/// more than [`COMPARISONS`] steps.
pub(super) fn deep_equal_within(a: &Value, b: &Value) -> Result<bool, String> {
    let mut budget = COMPARISONS;
    equal(a, b, &mut budget).ok_or_else(|| "the values are too large to compare".to_string())
}

fn equal(a: &Value, b: &Value, budget: &mut usize) -> Option<bool> {
    *budget = budget.checked_sub(1)?;
    Some(match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Uint(x), Value::Uint(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        // Go's DeepEqual too takes the same backing array or map as equal.
        (Value::List(x), Value::List(y)) if std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len() => true,
        (Value::Map(x), Value::Map(y)) if std::sync::Arc::ptr_eq(x, y) => true,
        (Value::List(x), Value::List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for (p, q) in x.iter().zip(y.iter()) {
                if !equal(p, q, budget)? {
                    return Some(false);
                }
            }
            true
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for ((kx, p), (ky, q)) in x.iter().zip(y.iter()) {
                if kx != ky || !equal(p, q, budget)? {
                    return Some(false);
                }
            }
            true
        }
        _ => false,
    })
}

/// A key equal for deeply equal values and different otherwise (NaN aside), for `uniq`;
/// `None` when it would pass the value bound.
pub(super) fn identity(v: &Value) -> Option<String> {
    let mut out = String::new();
    write_identity(&mut out, v).then_some(out)
}

fn write_identity(out: &mut String, v: &Value) -> bool {
    if out.len() > MAX_VALUE_BYTES {
        return false;
    }
    let _ = match v {
        Value::Nil => write!(out, "n"),
        Value::Bool(b) => write!(out, "b{}", u8::from(*b)),
        Value::Int(n) => write!(out, "i{n};"),
        Value::Uint(n) => write!(out, "u{n};"),
        Value::Float(f) => write!(out, "f{};", f.to_bits()),
        Value::String(s) => write!(out, "s{}:{s}", s.len()),
        Value::List(items) => {
            out.push('[');
            if !items.iter().all(|item| write_identity(out, item)) {
                return false;
            }
            write!(out, "]")
        }
        Value::Map(entries) => {
            out.push('{');
            for (k, item) in entries.iter() {
                let _ = write!(out, "{}:{k}", k.len());
                if !write_identity(out, item) {
                    return false;
                }
            }
            write!(out, "}}")
        }
        _ => write!(out, "?{:p};", v as *const Value),
    };
    true
}
