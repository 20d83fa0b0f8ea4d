//! Sprig's string functions that trim, cut, test, quote and pad, with Go's `strings`
//! semantics: lengths and offsets (`substr`, `trunc`) count bytes, as in Go, and a cut
//! that would split a character fails instead of producing invalid UTF-8.

use gotmpl::Value;

use super::args::{Call, Func, count_at, failure, int_arg, int_at, str_arg, string_at, table, text, want};
use super::cast::{go_display, strval};
use crate::render::template::bounds;

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["hello"], |a| {
            want("hello", a, 0)?;
            Ok(text("Hello!"))
        }),
        (&["trim"], |a| Ok(text(str_arg("trim", a, 1, 0)?.trim()))),
        (&["trimAll", "trimall"], |a| {
            let (cutset, s) = (str_arg("trimAll", a, 2, 0)?, str_arg("trimAll", a, 2, 1)?);
            Ok(text(s.trim_matches(|c| cutset.contains(c))))
        }),
        (&["trimPrefix"], |a| {
            let (prefix, s) = (str_arg("trimPrefix", a, 2, 0)?, str_arg("trimPrefix", a, 2, 1)?);
            Ok(text(s.strip_prefix(prefix).unwrap_or(s)))
        }),
        (&["trimSuffix"], |a| {
            let (suffix, s) = (str_arg("trimSuffix", a, 2, 0)?, str_arg("trimSuffix", a, 2, 1)?);
            Ok(text(s.strip_suffix(suffix).unwrap_or(s)))
        }),
        (&["upper"], |a| Ok(text(map_chars(str_arg("upper", a, 1, 0)?, char::to_uppercase)))),
        (&["lower"], |a| Ok(text(map_chars(str_arg("lower", a, 1, 0)?, char::to_lowercase)))),
        (&["title"], |a| Ok(text(title(str_arg("title", a, 1, 0)?)))),
        (&["repeat"], repeat),
        (&["substr"], substr),
        (&["trunc"], trunc),
        (&["contains"], |a| Ok(Value::Bool(str_arg("contains", a, 2, 1)?.contains(str_arg("contains", a, 2, 0)?)))),
        (&["hasPrefix"], |a| Ok(Value::Bool(str_arg("hasPrefix", a, 2, 1)?.starts_with(str_arg("hasPrefix", a, 2, 0)?)))),
        (&["hasSuffix"], |a| Ok(Value::Bool(str_arg("hasSuffix", a, 2, 1)?.ends_with(str_arg("hasSuffix", a, 2, 0)?)))),
        (&["quote"], |a| Ok(joined(a, |v| go_quote(&strval(v))))),
        (&["squote"], |a| Ok(joined(a, |v| format!("'{}'", go_display(v))))),
        (&["cat"], |a| Ok(joined(a, go_display))),
        (&["indent"], |a| Ok(text(indent("indent", count_at("indent", a, 0)?, str_arg("indent", a, 2, 1)?)?))),
        (&["nindent"], |a| Ok(text(format!("\n{}", indent("nindent", count_at("nindent", a, 0)?, str_arg("nindent", a, 2, 1)?)?)))),
        (&["replace"], replace),
        (&["plural"], |a| {
            let (one, many) = (str_arg("plural", a, 3, 0)?, string_at("plural", a, 1)?);
            Ok(text(if int_at("plural", a, 2)? == 1 { one } else { many }))
        }),
        (&["toString"], |a| {
            want("toString", a, 1)?;
            Ok(text(strval(&a[0])))
        }),
    ])
}

/// Go's per-character case mapping: a character whose mapping is several characters
/// (`ß` upper-cased) stays as it is, as `strings.ToUpper` leaves it.
fn map_chars<I: Iterator<Item = char> + ExactSizeIterator>(s: &str, f: impl Fn(char) -> I) -> String {
    s.chars()
        .map(|c| {
            let mut mapped = f(c);
            if mapped.len() == 1 { mapped.next().unwrap_or(c) } else { c }
        })
        .collect()
}

/// Go's `strings.Title`: upper-case the first letter of each word.
pub(super) fn title(s: &str) -> String {
    let mut prev_separator = true;
    s.chars()
        .map(|c| {
            let out = if prev_separator { c.to_uppercase().next().unwrap_or(c) } else { c };
            prev_separator = if c.is_ascii() { !(c.is_ascii_alphanumeric() || c == '_') } else { c.is_whitespace() };
            out
        })
        .collect()
}

/// `quote`, `squote` and `cat`: each non-nil argument formatted, space-separated.
fn joined(args: &[Value], format: impl Fn(&Value) -> String) -> Value {
    let parts: Vec<String> = args.iter().filter(|v| !matches!(v, Value::Nil)).map(format).collect();
    text(parts.join(" "))
}

/// Go's `strconv.Quote`, which Sprig's `quote` uses through `%q`.
pub(super) fn go_quote(s: &str) -> String {
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

/// Sprig's `repeat COUNT S`; the size is checked before anything is allocated.
fn repeat(args: &[Value]) -> Call {
    let (count, s) = (count_at("repeat", args, 0)?, str_arg("repeat", args, 2, 1)?);
    bounds::check("repeat", count.saturating_mul(s.len()))?;
    Ok(text(s.repeat(count)))
}

/// `s[start..end]` by bytes, as Go slices a string, refusing to split a character.
fn byte_slice<'a>(name: &str, s: &'a str, start: usize, end: usize) -> gotmpl::Result<&'a str> {
    if start > end || end > s.len() {
        return Err(failure(name, format!("slice bounds out of range [{start}:{end}] of a string of {} bytes", s.len())));
    }
    s.get(start..end).ok_or_else(|| failure(name, format!("bytes {start}..{end} would split a character")))
}

/// Sprig's `substr START END S`: `S[:END]` for a negative START, `S[START:]` for a
/// negative END or one past the end, else `S[START:END]`.
fn substr(args: &[Value]) -> Call {
    let (start, end, s) = (int_at("substr", args, 0)?, int_arg("substr", args, 3, 1)?, string_at("substr", args, 2)?);
    let index = |n: i64| usize::try_from(n).map_err(|_| failure("substr", format!("slice index {n} out of range")));
    let piece = if start < 0 {
        byte_slice("substr", s, 0, index(end)?)?
    } else if end < 0 || end as u64 > s.len() as u64 {
        byte_slice("substr", s, index(start)?, s.len())?
    } else {
        byte_slice("substr", s, index(start)?, index(end)?)?
    };
    Ok(text(piece))
}

/// Sprig's `trunc N S`: the first N bytes, or for a negative N the last -N.
fn trunc(args: &[Value]) -> Call {
    let (n, s) = (int_arg("trunc", args, 2, 0)?, str_arg("trunc", args, 2, 1)?);
    let len = s.len() as i64;
    let piece = if n < 0 && len + n > 0 {
        byte_slice("trunc", s, (len + n) as usize, s.len())?
    } else if n >= 0 && len > n {
        byte_slice("trunc", s, 0, n as usize)?
    } else {
        s
    };
    Ok(text(piece))
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
