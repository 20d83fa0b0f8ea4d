//! Go's view of a template value: how `fmt`'s `%v` prints it (Sprig's `toString`, `cat`,
//! `join`), what counts as empty, and spf13/cast's conversions behind Sprig's `int`,
//! `int64`, `float64` and the math functions (`"42"`, `"0x1f"`, `3.9`, `true`).
//!
//! Conversions never fail: as in Sprig, what cannot be converted is 0.

use std::fmt::Write as _;

use gotmpl::Value;

use crate::render::template::bounds::MAX_VALUE_BYTES;

/// Sprig's `strval`: a string as it is, anything else as Go's `%v` prints it.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        other => go_display(other),
    }
}

/// Go's `fmt.Sprint(v)` for the values a template holds.
pub(crate) fn go_display(v: &Value) -> String {
    let mut out = String::new();
    write_go(&mut out, v);
    out
}

fn write_go(out: &mut String, v: &Value) {
    // Values nest without bound only in memory already paid for; the output bound of
    // every function stops the text from growing past it.
    if out.len() > MAX_VALUE_BYTES {
        return;
    }
    match v {
        Value::Nil => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Uint(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(f) => out.push_str(&go_float(*f)),
        Value::String(s) => out.push_str(s),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go(out, item);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push_str("map[");
            for (i, (k, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_go(out, item);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Go's `%v` of a float64 (strconv's shortest `'g'`): the shortest digits that read back
/// the same, in exponent form below 1e-4 and from 1e6 up (`1e+06` for a million).
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Rust's `{:e}` gives the shortest round-tripping digits: "1.2345e6".
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let (esign, eabs) = if exponent < 0 { ('-', -exponent) } else { ('+', exponent) };
        return format!("{sign}{first}{fraction}e{esign}{eabs:02}");
    }
    let point = exponent + 1;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    };
    format!("{sign}{body}")
}

/// Go's "empty" (Sprig `empty`, and what `default`, `coalesce` and `compact` skip): nil,
/// false, 0, "", and empty lists and maps.
pub(crate) fn is_empty(v: &Value) -> bool {
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

/// spf13/cast `ToInt64`: numbers truncated, bools 0/1, strings parsed as Go integer
/// literals (`0x1f`, `0o17`, `017`, `1_000`, a `.0` tail allowed), and 0 otherwise.
pub(crate) fn to_int64(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        Value::Uint(n) => *n as i64,
        Value::Float(f) => go_float_to_int(*f),
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => parse_go_int(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// Go's `int64(f)` on amd64, where the publisher runs Sveltos's templates: truncated, and
/// the minimum for NaN and anything out of range (Rust would saturate instead).
fn go_float_to_int(f: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) { i64::MIN } else { f as i64 }
}

/// spf13/cast `ToFloat64`: numbers widened, bools 0/1, strings by Go's `ParseFloat`, and
/// 0 otherwise.
pub(crate) fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(n) => *n as f64,
        Value::Uint(n) => *n as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => parse_go_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// cast's `trimZeroDecimal`: "7.00" is "7", but "7." and "7.5" stay as they are.
fn trim_zero_decimal(s: &str) -> &str {
    match s.rsplit_once('.') {
        Some((whole, zeros)) if !zeros.is_empty() && zeros.bytes().all(|b| b == b'0') => whole,
        _ => s,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`: a sign, then a base prefix (`0x`, `0o`, `0b`, or a
/// leading `0` for octal) and digits with optional `_` between them.
pub(crate) fn parse_go_int(s: &str) -> Option<i64> {
    let (negative, unsigned) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = unsigned.to_ascii_lowercase();
    let (radix, body, prefixed) = if let Some(hex) = lower.strip_prefix("0x") {
        (16, hex, true)
    } else if let Some(bin) = lower.strip_prefix("0b") {
        (2, bin, true)
    } else if let Some(oct) = lower.strip_prefix("0o") {
        (8, oct, true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..], true)
    } else {
        (10, lower.as_str(), false)
    };
    let digits = underscored_digits(body, prefixed)?;
    let magnitude = i128::from(u64::from_str_radix(&digits, radix).ok()?);
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// `body` without its `_` separators, which Go allows only between digits (or after a
/// base prefix).
fn underscored_digits(body: &str, prefixed: bool) -> Option<String> {
    if body.is_empty() || body.ends_with('_') || body.contains("__") || (!prefixed && body.starts_with('_')) {
        return None;
    }
    Some(body.replace('_', ""))
}

/// Go's `strconv.ParseFloat(s, 64)` for decimal forms, `inf`/`infinity`/`nan` in any
/// case, and integers with a base prefix.
pub(crate) fn parse_go_float(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if matches!(unsigned, "inf" | "infinity" | "nan") && lower.len() - unsigned.len() <= 1 {
        return lower.parse().ok().or(Some(if lower.starts_with('-') { f64::NEG_INFINITY } else { f64::INFINITY }));
    }
    if unsigned.starts_with("0x") {
        return parse_go_int(s).map(|n| n as f64);
    }
    let digits = if lower.contains('_') { underscored_digits(&lower, false)? } else { lower };
    if !digits.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-')) {
        return None;
    }
    digits.parse().ok()
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, nothing else.
pub(crate) fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_float_prints_like_fmt_v() {
        for (f, expected) in [
            (1.5, "1.5"),
            (3.0, "3"),
            (100000.0, "100000"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e6, "1e+06"),
            (1e21, "1e+21"),
            (123456789.0, "1.23456789e+08"),
            (-2.25, "-2.25"),
            (f64::INFINITY, "+Inf"),
        ] {
            assert_eq!(go_float(f), expected, "{f}");
        }
    }

    #[test]
    fn parses_go_integer_literals() {
        for (s, expected) in [("42", Some(42)), ("-0x1F", Some(-31)), ("0o17", Some(15)), ("017", Some(15)), ("1_000", Some(1000))] {
            assert_eq!(parse_go_int(s), expected, "{s}");
        }
        for s in ["", "1_", "_1", "0x", "1.5", "abc", "99999999999999999999"] {
            assert_eq!(parse_go_int(s), None, "{s}");
        }
    }
}
