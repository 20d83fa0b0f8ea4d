//! Plain YAML text of a JSON value, byte for byte what serde_saphyr 2.2 writes, for the
//! values nearly every manifest consists of.
//!
//! serde_saphyr weighs every string against YAML 1.1 and 1.2 resolution, block scalars
//! and folding, which is costly across a fleet's rendered objects. [`write()`]
//! handles block mappings and sequences of null, booleans, integers and strings that are
//! safe as plain scalars by a narrow rule (`plain`), and gives up (`None`) on anything
//! else (floats, quoting, multi-line or long strings, a sequence directly inside a
//! sequence), for which the caller asks serde_saphyr. Published bytes therefore do not
//! depend on which path wrote them; `super::tests` compares the two.

use serde_json::Value;

/// Longest string written here: serde_saphyr folds longer plain strings (from 80
/// characters) into `>` block scalars.
const MAX_PLAIN: usize = 64;

/// The document as serde_saphyr writes it, or `None` when it must write it.
pub(super) fn write(value: &Value) -> Option<String> {
    let mut out = String::with_capacity(256);
    match value {
        Value::Object(map) if !map.is_empty() => mapping(&mut out, map, 0, false)?,
        Value::Array(items) if !items.is_empty() => sequence(&mut out, items, 0)?,
        scalar => inline(&mut out, scalar)?,
    }
    Some(out)
}

/// Entries of a non-empty mapping, one per line at `indent`; the first one on the current
/// line when `continues` (after a sequence's `- `).
fn mapping(out: &mut String, map: &serde_json::Map<String, Value>, indent: usize, continues: bool) -> Option<()> {
    for (i, (key, value)) in map.iter().enumerate() {
        if !plain(key, false) {
            return None;
        }
        if i > 0 || !continues {
            pad(out, indent);
        }
        out.push_str(key);
        out.push(':');
        entry_value(out, value, indent)?;
    }
    Some(())
}

/// What follows `key:` or `- `: a scalar on the same line, or a collection below it.
/// Sequences in a mapping are not indented further (serde_saphyr's compact lists).
fn entry_value(out: &mut String, value: &Value, indent: usize) -> Option<()> {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            mapping(out, map, indent + 2, false)
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            sequence(out, items, indent)
        }
        scalar => {
            out.push(' ');
            inline(out, scalar)
        }
    }
}

/// Items of a non-empty sequence, each after `- ` at `indent`; a mapping item starts on
/// the dash's line and continues two columns in.
fn sequence(out: &mut String, items: &[Value], indent: usize) -> Option<()> {
    for item in items {
        pad(out, indent);
        out.push_str("- ");
        match item {
            Value::Object(map) if !map.is_empty() => mapping(out, map, indent + 2, true)?,
            Value::Array(items) if !items.is_empty() => return None,
            scalar => inline(out, scalar)?,
        }
    }
    Some(())
}

/// A scalar or an empty collection, and the end of its line.
fn inline(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_i64() || n.is_u64() => out.push_str(&n.to_string()),
        Value::String(s) if plain(s, true) => out.push_str(s),
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        _ => return None,
    }
    out.push('\n');
    Some(())
}

/// Whether a string may be written plain here: short; letters, digits and `-._/` (and
/// `=` and `:` in values, as in `--listen=:8080` and `image:1.2`); starting with a
/// letter, or with `--` and a letter as command-line flags do, or a quantity such as
/// `250m`; not ending with `:`; and no word YAML 1.1 or 1.2 reads as null, a boolean or a
/// non-finite number.
fn plain(s: &str, value: bool) -> bool {
    let b = s.as_bytes();
    let start = match b {
        [first, ..] if first.is_ascii_alphabetic() => true,
        [b'-', b'-', third, ..] => third.is_ascii_alphabetic(),
        [first, ..] if first.is_ascii_digit() => quantity(s),
        _ => false,
    };
    let allowed = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'/') || (value && matches!(c, b'=' | b':'));
    const WORDS: [&str; 11] = ["null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf"];
    start && s.len() <= MAX_PLAIN && b.iter().all(allowed) && !s.ends_with(':') && !WORDS.iter().any(|w| s.eq_ignore_ascii_case(w))
}

/// Digits, maybe a fraction, then a unit of letters that cannot make a number of it (no
/// exponent `e`, no radix `x`, `o` or `b`): `250m`, `1.5Gi`, `30s`.
fn quantity(s: &str) -> bool {
    let unit = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let number = &s[..s.len() - unit.len()];
    let one_point = number.split('.').all(|d| !d.is_empty()) && number.matches('.').count() <= 1;
    one_point
        && unit.bytes().all(|c| c.is_ascii_alphabetic())
        && unit.bytes().next().is_some_and(|c| !matches!(c.to_ascii_lowercase(), b'e' | b'x' | b'o' | b'b'))
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}
