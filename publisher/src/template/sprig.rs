//! The Sprig functions Sveltos templates use, with Sprig's names and argument order
//! (`replace old new s`, `trimPrefix prefix s`, ...) so a value piped in lands last.
//!
//! Go's builtins (`printf`, `print`, `len`, `index`, `eq`..`ge`, `and`, `or`, `not`) come
//! from gotmpl itself; every function here is bounded (`bounds`). Functions that take a `string` in Sprig reject other types, as Go
//! does when it converts call arguments.
//!
//! Departures from Sprig, all on bad input: Sprig's `b64dec`, `toYaml`, `toJson` and
//! `fromYaml` swallow errors into their output (an error string, an empty string, an
//! `Error` key), which would be published as part of a manifest; here they fail the render
//! with the reason instead.

use std::sync::Arc;

use base64::Engine as _;
use gotmpl::{FuncMap, TemplateError, Value, ValueFunc};
use sha2::{Digest as _, Sha256};

use super::bounds;

/// What `required` puts before its message; `render` turns such a failure into
/// `TemplateError::Required`.
pub(super) const REQUIRED_PREFIX: &str = "required: ";

type Call = gotmpl::Result<Value>;
type Func = fn(&[Value]) -> Call;

/// The functions of this module, by their template names.
pub(super) fn funcs() -> FuncMap {
    let table: [(&str, Func); 31] = [
        ("default", default),
        ("empty", |a| Ok(Value::Bool(is_empty(one("empty", a)?)))),
        ("coalesce", |a| Ok(a.iter().find(|v| !is_empty(v)).cloned().unwrap_or(Value::Nil))),
        ("quote", |a| Ok(joined(a, go_quote))),
        ("squote", |a| Ok(joined(a, |s| format!("'{s}'")))),
        ("upper", |a| Ok(text(str_arg("upper", a, 1, 0)?.to_uppercase()))),
        ("lower", |a| Ok(text(str_arg("lower", a, 1, 0)?.to_lowercase()))),
        ("title", |a| Ok(text(title(str_arg("title", a, 1, 0)?)))),
        ("trim", |a| Ok(text(str_arg("trim", a, 1, 0)?.trim()))),
        ("trimPrefix", |a| {
            let (prefix, s) = (str_arg("trimPrefix", a, 2, 0)?, str_arg("trimPrefix", a, 2, 1)?);
            Ok(text(s.strip_prefix(prefix).unwrap_or(s)))
        }),
        ("trimSuffix", |a| {
            let (suffix, s) = (str_arg("trimSuffix", a, 2, 0)?, str_arg("trimSuffix", a, 2, 1)?);
            Ok(text(s.strip_suffix(suffix).unwrap_or(s)))
        }),
        ("replace", replace),
        ("contains", |a| Ok(Value::Bool(str_arg("contains", a, 2, 1)?.contains(str_arg("contains", a, 2, 0)?)))),
        ("hasPrefix", |a| Ok(Value::Bool(str_arg("hasPrefix", a, 2, 1)?.starts_with(str_arg("hasPrefix", a, 2, 0)?)))),
        ("hasSuffix", |a| Ok(Value::Bool(str_arg("hasSuffix", a, 2, 1)?.ends_with(str_arg("hasSuffix", a, 2, 0)?)))),
        ("toYaml", to_yaml),
        ("toJson", to_json_text),
        ("fromYaml", from_yaml),
        ("indent", |a| Ok(text(indent("indent", int_arg("indent", a, 2, 0)?, str_arg("indent", a, 2, 1)?)?))),
        ("nindent", |a| Ok(text(format!("\n{}", indent("nindent", int_arg("nindent", a, 2, 0)?, str_arg("nindent", a, 2, 1)?)?)))),
        ("b64enc", |a| Ok(text(base64::engine::general_purpose::STANDARD.encode(str_arg("b64enc", a, 1, 0)?)))),
        ("b64dec", b64dec),
        ("required", required),
        ("ternary", ternary),
        ("list", |a| Ok(Value::List(a.into()))),
        ("dict", |a| Ok(dict(a))),
        ("join", |a| {
            want("join", a, 2)?;
            Ok(text(strings_of(&a[1]).join(str_arg("join", a, 2, 0)?)))
        }),
        ("split", split),
        ("int", |a| Ok(Value::Int(to_int(one("int", a)?)))),
        ("toString", |a| Ok(text(strval(one("toString", a)?)))),
        ("sha256sum", |a| Ok(text(hex::encode(Sha256::digest(str_arg("sha256sum", a, 1, 0)?))))),
    ];
    bounds::bounded(table.into_iter().map(|(name, f)| (name.to_string(), Arc::new(f) as ValueFunc)).collect())
}

fn text(s: impl Into<Arc<str>>) -> Value {
    Value::String(s.into())
}

fn failure(name: &str, why: impl std::fmt::Display) -> TemplateError {
    TemplateError::Exec(format!("error calling {name}: {why}"))
}

fn want(name: &str, args: &[Value], expected: usize) -> gotmpl::Result<()> {
    if args.len() == expected { Ok(()) } else { Err(TemplateError::ArgCount { name: name.to_string(), expected, got: args.len() }) }
}

fn one<'a>(name: &str, args: &'a [Value]) -> gotmpl::Result<&'a Value> {
    want(name, args, 1)?;
    Ok(&args[0])
}

/// Argument `index` of a call taking exactly `count` arguments, which must be a string.
fn str_arg<'a>(name: &str, args: &'a [Value], count: usize, index: usize) -> gotmpl::Result<&'a str> {
    want(name, args, count)?;
    args[index].as_str().ok_or_else(|| failure(name, format!("argument {} must be a string, got {}", index + 1, args[index].type_name())))
}

fn int_arg(name: &str, args: &[Value], count: usize, index: usize) -> gotmpl::Result<usize> {
    want(name, args, count)?;
    match &args[index] {
        Value::Int(n) if *n >= 0 => Ok(*n as usize),
        Value::Uint(n) => Ok(*n as usize),
        other => Err(failure(name, format!("argument {} must be a non-negative int, got {other}", index + 1))),
    }
}

/// Go's "empty" (Sprig `empty`, and what `default` and `coalesce` skip): nil, false, 0,
/// "", and empty lists and maps.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(n) => *n == 0,
        Value::Uint(n) => *n == 0,
        Value::Float(f) => *f == 0.0,
        Value::String(s) => s.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        _ => false,
    }
}

/// Sprig's `default DEFAULT GIVEN`: GIVEN unless it is empty.
fn default(args: &[Value]) -> Call {
    match args {
        [] => Err(TemplateError::ArgCount { name: "default".into(), expected: 1, got: 0 }),
        [_, given, ..] if !is_empty(given) => Ok(given.clone()),
        [fallback, ..] => Ok(fallback.clone()),
    }
}

/// Sprig's `strval`: strings as they are, anything else as Go's `%v` prints it.
fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        other => other.to_string(),
    }
}

/// `quote` and `squote`: each non-nil argument stringified and wrapped, space-separated.
fn joined(args: &[Value], wrap: impl Fn(&str) -> String) -> Value {
    let parts: Vec<String> = args.iter().filter(|v| !matches!(v, Value::Nil)).map(|v| wrap(&strval(v))).collect();
    text(parts.join(" "))
}

/// Go's `strconv.Quote`, which Sprig's `quote` uses through `%q`.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c == ' ' || !(c.is_control() || c.is_whitespace()) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `strings.Title`: upper-case the first letter of each word.
fn title(s: &str) -> String {
    let mut prev_separator = true;
    s.chars()
        .map(|c| {
            let out = if prev_separator { c.to_uppercase().next().unwrap_or(c) } else { c };
            prev_separator = if c.is_ascii() { !(c.is_ascii_alphanumeric() || c == '_') } else { c.is_whitespace() };
            out
        })
        .collect()
}

/// `spaces` before every line of `s`; the size is checked before anything is allocated.
fn indent(name: &str, spaces: usize, s: &str) -> gotmpl::Result<String> {
    let lines = s.matches('\n').count() + 1;
    bounds::check(name, spaces.saturating_mul(lines).saturating_add(s.len()))?;
    let pad = " ".repeat(spaces);
    Ok(format!("{pad}{}", s.replace('\n', &format!("\n{pad}"))))
}

/// Sprig's `replace OLD NEW S`; the size is checked before anything is allocated
/// (`replace "" NEW S` inserts NEW around every character).
fn replace(args: &[Value]) -> Call {
    let (old, new, s) = (str_arg("replace", args, 3, 0)?, str_arg("replace", args, 3, 1)?, str_arg("replace", args, 3, 2)?);
    let hits = if old.is_empty() { s.chars().count() + 1 } else { s.matches(old).count() };
    bounds::check("replace", hits.saturating_mul(new.len()).saturating_add(s.len()))?;
    Ok(text(s.replace(old, new)))
}

fn b64dec(args: &[Value]) -> Call {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(str_arg("b64dec", args, 1, 0)?)
        .map_err(|e| failure("b64dec", format!("invalid base64: {e}")))?;
    String::from_utf8(bytes).map(text).map_err(|_| failure("b64dec", "the decoded bytes are not UTF-8 text"))
}

/// Sprig's `required MSG VALUE`: VALUE, unless it is nil or "".
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

/// Sprig's `dict k1 v1 k2 v2 ...`; a key without a value maps to "".
fn dict(args: &[Value]) -> Value {
    let entries = args.chunks(2).map(|pair| {
        let value = pair.get(1).cloned().unwrap_or_else(|| text(""));
        (Arc::from(strval(&pair[0])), value)
    });
    Value::Map(Arc::new(entries.collect()))
}

/// Sprig's `strslice`, what `join` accepts: a list's non-nil items, or one value.
fn strings_of(v: &Value) -> Vec<String> {
    match v {
        Value::List(items) => items.iter().filter(|i| !matches!(i, Value::Nil)).map(strval).collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// Sprig's `split SEP S`: a map `_0`, `_1`, ... of the pieces (`splitList` gives a list).
fn split(args: &[Value]) -> Call {
    let (sep, s) = (str_arg("split", args, 2, 0)?, str_arg("split", args, 2, 1)?);
    let pieces = s.split(sep).enumerate().map(|(i, piece)| (Arc::from(format!("_{i}")), text(piece)));
    Ok(Value::Map(Arc::new(pieces.collect())))
}

/// Sprig's `int` (spf13/cast `ToInt`): numbers truncated, bools 0/1, strings parsed as Go
/// integer literals (`0x1f`, `0o17`, `017`, a `.0` tail allowed), and 0 for anything else.
fn to_int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        Value::Uint(n) => *n as i64,
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => parse_go_int(s).unwrap_or(0),
        _ => 0,
    }
}

fn parse_go_int(s: &str) -> Option<i64> {
    let s = match s.split_once('.') {
        Some((whole, zeros)) if !zeros.is_empty() && zeros.bytes().all(|b| b == b'0') => whole,
        _ => s,
    };
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let digits = digits.replace('_', "");
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(hex) = lower.strip_prefix("0x") {
        (16, hex)
    } else if let Some(bin) = lower.strip_prefix("0b") {
        (2, bin)
    } else if let Some(oct) = lower.strip_prefix("0o") {
        (8, oct)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    let magnitude = i64::from_str_radix(body, radix).ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

fn to_yaml(args: &[Value]) -> Call {
    let json = super::to_json(one("toYaml", args)?).map_err(|e| failure("toYaml", e))?;
    let yaml = serde_saphyr::to_string(&json).map_err(|e| failure("toYaml", e))?;
    // Sprig trims the one newline a YAML document ends with, so `nindent` composes.
    Ok(text(yaml.strip_suffix('\n').unwrap_or(&yaml)))
}

fn to_json_text(args: &[Value]) -> Call {
    let json = super::to_json(one("toJson", args)?).map_err(|e| failure("toJson", e))?;
    let encoded = serde_json::to_string(&json).map_err(|e| failure("toJson", e))?;
    // Go's encoding/json escapes these inside strings (they never occur outside one), and
    // identical bytes keep bundle digests stable for templates moved over from Sveltos.
    Ok(text(
        encoded
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029"),
    ))
}

fn from_yaml(args: &[Value]) -> Call {
    let source = str_arg("fromYaml", args, 1, 0)?;
    // Sveltos decodes with yaml.v3: YAML 1.2 booleans (`y` and `yes` stay strings) and
    // `0644` as an octal integer. The default budget bounds depth and alias expansion.
    let options = serde_saphyr::options! { strict_booleans: true, legacy_octal_numbers: true };
    let parsed: serde_json::Value =
        serde_saphyr::from_str_with_options(source, options).map_err(|e| failure("fromYaml", format!("invalid YAML: {e}")))?;
    match parsed {
        // An empty document is an empty map in Go's yaml.Unmarshal.
        serde_json::Value::Null => Ok(Value::Map(Arc::default())),
        serde_json::Value::Object(_) => Ok(super::from_json(&parsed)),
        other => Err(failure("fromYaml", format!("expected a YAML mapping, got {}", json_kind(&other)))),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a bool",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a sequence",
        serde_json::Value::Object(_) => "a mapping",
    }
}
