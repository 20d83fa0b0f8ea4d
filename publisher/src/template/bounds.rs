//! The bound on every string a Sprig function builds. The render's output cap counts bytes
//! as they are written, but a function builds its whole result first: without this bound
//! `{{ indent 99999999999 "x" }}` asks for 100 GB in one call and `replace "" $a $a` fed
//! its own result squares it per step, so the publisher dies of memory before the output
//! cap sees a byte (found with the `template` fuzz target).
//!
//! No value over a bundle file's size could be published anyway. Functions whose result
//! holds all their string arguments (`quote`, `squote`, `join`) are checked before they
//! run; every function's result after, which stops growth by repeated calls within one
//! step. `indent` and `replace`, which multiply, check their own estimate first.
//!
//! Not covered: gotmpl's own `print`, `printf` and `println`, which it does not export
//! to wrap; `printf "%s%s" $a $a` in a loop still doubles without bound.

use std::sync::Arc;

use airlock_bundle::Limits;
use gotmpl::{FuncMap, TemplateError, Value, ValueFunc};

/// The longest string a template function may return: a bundle file's limit.
pub(super) const MAX_VALUE_BYTES: usize = Limits::SPEC.file_bytes as usize;

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

fn capped(name: String, f: ValueFunc) -> ValueFunc {
    let concatenating = CONCATENATING.contains(&name.as_str());
    Arc::new(move |args: &[Value]| {
        if concatenating {
            check(&name, args.iter().map(string_bytes).fold(0, usize::saturating_add))?;
        }
        let value = f(args)?;
        if let Value::String(s) = &value {
            check(&name, s.len())?;
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
