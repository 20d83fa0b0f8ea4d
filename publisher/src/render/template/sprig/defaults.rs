//! Sprig's functions about defaults and flow: `default`, `empty`, `coalesce`, `all`,
//! `any`, `ternary`, `fail`, and Helm's `required`.

use gotmpl::{TemplateError, Value};

use super::args::{Call, Func, failure, str_arg, table, want};
use super::cast::{is_empty, strval};

/// What `required` puts before its message; `render` turns such a failure into
/// `TemplateError::Required`.
pub(crate) const REQUIRED_PREFIX: &str = "required: ";

/// What `fail` puts before its message; `render` turns such a failure into
/// `TemplateError::Failed`.
pub(crate) const FAIL_PREFIX: &str = "fail: ";

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["default"], default),
        (&["empty"], |a| {
            want("empty", a, 1)?;
            Ok(Value::Bool(is_empty(&a[0])))
        }),
        (&["coalesce"], |a| Ok(a.iter().find(|v| !is_empty(v)).cloned().unwrap_or(Value::Nil))),
        (&["all"], |a| Ok(Value::Bool(a.iter().all(|v| !is_empty(v))))),
        (&["any"], |a| Ok(Value::Bool(a.iter().any(|v| !is_empty(v))))),
        (&["ternary"], ternary),
        (&["required"], required),
        (&["fail"], |a| Err(TemplateError::Exec(format!("{FAIL_PREFIX}{}", str_arg("fail", a, 1, 0)?)))),
    ])
}

/// Sprig's `default DEFAULT GIVEN`: GIVEN unless it is empty.
fn default(args: &[Value]) -> Call {
    match args {
        [] => Err(TemplateError::ArgCount { name: "default".into(), expected: 1, got: 0 }),
        [_, given, ..] if !is_empty(given) => Ok(given.clone()),
        [fallback, ..] => Ok(fallback.clone()),
    }
}

/// Helm's `required MSG VALUE`: VALUE, unless it is nil or "".
fn required(args: &[Value]) -> Call {
    want("required", args, 2)?;
    match &args[1] {
        Value::Nil => Err(TemplateError::Exec(format!("{REQUIRED_PREFIX}{}", strval(&args[0])))),
        Value::String(s) if s.is_empty() => Err(TemplateError::Exec(format!("{REQUIRED_PREFIX}{}", strval(&args[0])))),
        value => Ok(value.clone()),
    }
}

/// Sprig's `ternary IF_TRUE IF_FALSE CONDITION`.
fn ternary(args: &[Value]) -> Call {
    want("ternary", args, 3)?;
    match &args[2] {
        Value::Bool(condition) => Ok(if *condition { args[0].clone() } else { args[1].clone() }),
        other => Err(failure("ternary", format!("argument 3 must be a bool, got {}", other.type_name()))),
    }
}
