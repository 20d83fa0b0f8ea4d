//! Reading a template function's arguments the way Go's `text/template` converts them for
//! a Sprig function's parameters, and the errors when they do not fit.
//!
//! A `string` parameter takes only a string, as in Go. An `int` parameter takes any
//! integer: Go tells `int` from `int64` and refuses one for the other, but a template
//! value here has one integer type. Parameters Sprig declares `interface{}` take anything
//! and convert it themselves (`cast`).

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::{TemplateError, Value};

pub(crate) type Call = gotmpl::Result<Value>;
pub(crate) type Func = fn(&[Value]) -> Call;
pub(crate) type Map = Arc<BTreeMap<Arc<str>, Value>>;

pub(crate) fn text(s: impl Into<Arc<str>>) -> Value {
    Value::String(s.into())
}

pub(crate) fn strings(items: impl IntoIterator<Item = impl Into<Arc<str>>>) -> Value {
    Value::List(items.into_iter().map(|s| Value::String(s.into())).collect())
}

pub(crate) fn map(entries: BTreeMap<Arc<str>, Value>) -> Value {
    Value::Map(Arc::new(entries))
}

pub(crate) fn failure(name: &str, why: impl std::fmt::Display) -> TemplateError {
    TemplateError::Exec(format!("error calling {name}: {why}"))
}

pub(crate) fn want(name: &str, args: &[Value], expected: usize) -> gotmpl::Result<()> {
    if args.len() == expected { Ok(()) } else { Err(TemplateError::ArgCount { name: name.to_string(), expected, got: args.len() }) }
}

/// At least `min` arguments, for Sprig's variadic functions.
pub(crate) fn want_at_least(name: &str, args: &[Value], min: usize) -> gotmpl::Result<()> {
    if args.len() >= min { Ok(()) } else { Err(TemplateError::ArgCount { name: name.to_string(), expected: min, got: args.len() }) }
}

pub(crate) fn one<'a>(name: &str, args: &'a [Value]) -> gotmpl::Result<&'a Value> {
    want(name, args, 1)?;
    Ok(&args[0])
}

/// Argument `index` of a call taking exactly `count` arguments, which must be a string.
pub(crate) fn str_arg<'a>(name: &str, args: &'a [Value], count: usize, index: usize) -> gotmpl::Result<&'a str> {
    want(name, args, count)?;
    string_at(name, args, index)
}

/// Argument `index`, or an argument-count error when the call has fewer: a call's
/// arguments may be read before its count is checked.
pub(crate) fn arg<'a>(name: &str, args: &'a [Value], index: usize) -> gotmpl::Result<&'a Value> {
    args.get(index).ok_or_else(|| TemplateError::ArgCount { name: name.to_string(), expected: index + 1, got: args.len() })
}

/// Argument `index`, which must be a string.
pub(crate) fn string_at<'a>(name: &str, args: &'a [Value], index: usize) -> gotmpl::Result<&'a str> {
    let value = arg(name, args, index)?;
    value.as_str().ok_or_else(|| wrong_type(name, index, "a string", value))
}

/// Argument `index` of a call taking exactly `count` arguments, which must be an integer.
pub(crate) fn int_arg(name: &str, args: &[Value], count: usize, index: usize) -> gotmpl::Result<i64> {
    want(name, args, count)?;
    int_at(name, args, index)
}

/// Argument `index`, which must be an integer (Go's `int`).
pub(crate) fn int_at(name: &str, args: &[Value], index: usize) -> gotmpl::Result<i64> {
    match arg(name, args, index)? {
        Value::Int(n) => Ok(*n),
        Value::Uint(n) => i64::try_from(*n).map_err(|_| failure(name, format!("argument {} is out of range: {n}", index + 1))),
        other => Err(wrong_type(name, index, "an integer", other)),
    }
}

/// Argument `index`, an integer that counts something, so at least 0.
pub(crate) fn count_at(name: &str, args: &[Value], index: usize) -> gotmpl::Result<usize> {
    let n = int_at(name, args, index)?;
    usize::try_from(n).map_err(|_| failure(name, format!("argument {} must not be negative, got {n}", index + 1)))
}

/// Argument `index`, which must be a list.
pub(crate) fn list_at<'a>(name: &str, args: &'a [Value], index: usize) -> gotmpl::Result<&'a [Value]> {
    match arg(name, args, index)? {
        Value::List(items) => Ok(items),
        other => Err(wrong_type(name, index, "a list", other)),
    }
}

/// Argument `index`, which must be a map (Go's `map[string]interface{}`).
pub(crate) fn map_at<'a>(name: &str, args: &'a [Value], index: usize) -> gotmpl::Result<&'a Map> {
    match arg(name, args, index)? {
        Value::Map(entries) => Ok(entries),
        other => Err(wrong_type(name, index, "a map", other)),
    }
}

pub(crate) fn wrong_type(name: &str, index: usize, expected: &str, got: &Value) -> TemplateError {
    failure(name, format!("argument {} must be {expected}, got {}", index + 1, got.type_name()))
}

/// The functions of one group, each under its template names: a function Sprig lists
/// twice (`append` and `push`) is one entry with two names.
pub(crate) fn table(entries: &[(&[&'static str], Func)]) -> Vec<(&'static str, Func)> {
    entries.iter().flat_map(|(names, f)| names.iter().map(move |name| (*name, *f))).collect()
}
