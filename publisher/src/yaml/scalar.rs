//! What an untagged scalar means, as serde_saphyr 2.2 resolves it into `serde_json::Value`
//! with legacy octal `0644` on and YAML 1.1's booleans (`yes`, `on`..., what Sveltos and
//! kubectl read in the publisher's inputs); everything else is YAML 1.2 core schema. [`checked_key`] says the same of a scalar as a mapping key.
//!
//! A scalar must mean here exactly what it means to serde_saphyr, which reads whatever the
//! fast paths leave; `testkit::yaml` compares the two on every spelling we could
//! think of. Where serde_saphyr refuses a scalar (non-finite floats) this module gives no
//! answer and the caller hands the whole stream to serde_saphyr, which then reports the
//! error in its own words.

use serde_json::{Map, Number, Value};

/// The value of an untagged scalar, plain or not (quoted, block), or `None` when only
/// serde_saphyr may say.
pub fn resolve(text: &str, plain: bool) -> Option<Value> {
    if !plain {
        return Some(Value::String(text.to_string()));
    }
    if is_null(text) {
        return Some(Value::Null);
    }
    let t = trim(text);
    if let Some(b) = boolean(t) {
        return Some(Value::Bool(b));
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    let numeric = unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    // `0X1F`, `0O17` and `0B1` stay strings: only lower-case radix prefixes are numbers.
    let upper_radix = matches!(unsigned.as_bytes(), [b'0', b'X' | b'O' | b'B', ..]);
    if !numeric || upper_radix || is_signed_nan(t) {
        return Some(Value::String(text.to_string()));
    }
    if let Some((negative, magnitude)) = integer(t) {
        let fits = if negative {
            i64::try_from(magnitude).ok().and_then(i64::checked_neg).or((magnitude == 1 << 63).then_some(i64::MIN)).map(Value::from)
        } else {
            u64::try_from(magnitude).ok().map(Value::from)
        };
        if fits.is_some() {
            return fits;
        }
    }
    match t.parse::<f64>() {
        Ok(f) if f.is_finite() => Number::from_f64(f).map(Value::Number),
        // `1e999`, and `.inf`/`.nan` below: serde_saphyr refuses non-finite numbers.
        Ok(_) => None,
        Err(_) if is_non_finite(unsigned) => None,
        Err(_) => Some(Value::String(text.to_string())),
    }
}

/// Whether a plain scalar is null: the empty scalar and the YAML 1.2 null spellings.
pub fn is_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// The integer a plain scalar spells, as sign and magnitude (`-0` is not negative), in
/// any radix serde_saphyr reads: `0x1F`, `0o17`, `0b11`, legacy octal `017`, decimal,
/// with single underscores between digits. Two mapping keys spelling the same integer
/// are duplicates to serde_saphyr however they are written.
pub fn integer(text: &str) -> Option<(bool, u128)> {
    let t = trim(text);
    let (negative, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let prefixed = |p: &str, q: &str| rest.strip_prefix(p).or_else(|| rest.strip_prefix(q));
    let (radix, digits) = if let Some(d) = prefixed("0x", "0X") {
        (16, d.strip_prefix('_').unwrap_or(d))
    } else if let Some(d) = prefixed("0o", "0O") {
        (8, d.strip_prefix('_').unwrap_or(d))
    } else if let Some(d) = prefixed("0b", "0B") {
        (2, d.strip_prefix('_').unwrap_or(d))
    } else if rest == "0" {
        (8, rest)
    } else if let Some(d) = rest.strip_prefix('0') {
        // Legacy octal, as Kubernetes reads file modes.
        (8, d.strip_prefix('_').unwrap_or(d))
    } else {
        (10, rest)
    };
    let magnitude = digits_value(digits, radix)?;
    if negative && magnitude > 1 << 127 {
        return None;
    }
    Some((negative && magnitude != 0, magnitude))
}

/// Digits in `radix` with single underscores between them, or `None`.
fn digits_value(digits: &str, radix: u32) -> Option<u128> {
    let bytes = digits.as_bytes();
    let mut value: u128 = 0;
    let mut any = false;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' {
            let between = i > 0 && bytes[i - 1] != b'_' && bytes.get(i + 1).is_some_and(|&n| n != b'_');
            if !between {
                return None;
            }
            continue;
        }
        let digit = (b as char).to_digit(radix)?;
        value = value.checked_mul(u128::from(radix))?.checked_add(u128::from(digit))?;
        any = true;
    }
    any.then_some(value)
}

/// The boolean a trimmed plain scalar spells, in YAML 1.1 and in any case.
fn boolean(t: &str) -> Option<bool> {
    let is = |words: [&str; 4]| words.iter().any(|w| t.eq_ignore_ascii_case(w));
    if is(["true", "yes", "y", "on"]) {
        Some(true)
    } else if is(["false", "no", "n", "off"]) {
        Some(false)
    } else {
        None
    }
}

/// `.inf`, `.nan` and their capitalised spellings, sign removed.
fn is_non_finite(unsigned: &str) -> bool {
    matches!(unsigned, ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN")
}

/// `+.nan` and `-.nan`, which the YAML 1.2 core schema leaves a string.
fn is_signed_nan(t: &str) -> bool {
    t.strip_prefix(['+', '-']).is_some_and(|u| matches!(u, ".nan" | ".NaN" | ".NAN"))
}

/// The padding serde_saphyr ignores around a scalar it converts.
fn trim(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\r', '\n'])
}

/// A mapping key as the string serde_json gets, unless serde_saphyr must judge it: a
/// merge key, a null key, or one that repeats another (by text, or by the integer two
/// plain keys spell: `1` and `0x1` are the same key). `integers` holds those the mapping's
/// plain keys spelt so far.
pub fn checked_key(text: &str, plain: bool, map: &Map<String, Value>, integers: &mut Vec<(bool, u128)>) -> Option<String> {
    if text == "<<" || map.contains_key(text) {
        return None;
    }
    if plain {
        if is_null(text) {
            return None;
        }
        if let Some(integer) = integer(text) {
            if integers.contains(&integer) {
                return None;
            }
            integers.push(integer);
        }
    }
    Some(text.to_string())
}
