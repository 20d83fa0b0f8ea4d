//! Sprig's functions between strings and lists of strings: `split`, `splitn`,
//! `splitList`, `join`, `toStrings` and `sortAlpha`, with Go's `strings.Split` rules (an
//! empty separator splits into characters).

use std::sync::Arc;

use gotmpl::Value;

use super::args::{Call, Func, int_at, map, str_arg, string_at, strings, table, text, want};
use super::cast::strval;
use crate::render::template::bounds;

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["split"], |a| {
            let (sep, s) = (str_arg("split", a, 2, 0)?, string_at("split", a, 1)?);
            numbered("split", go_split(s, sep, -1))
        }),
        (&["splitn"], |a| {
            let (sep, n, s) = (str_arg("splitn", a, 3, 0)?, int_at("splitn", a, 1)?, string_at("splitn", a, 2)?);
            numbered("splitn", go_split(s, sep, n))
        }),
        (&["splitList"], |a| {
            let (sep, s) = (str_arg("splitList", a, 2, 0)?, string_at("splitList", a, 1)?);
            let pieces = go_split(s, sep, -1);
            bounds::check_items("splitList", pieces.len())?;
            Ok(strings(pieces))
        }),
        (&["join"], |a| {
            want("join", a, 2)?;
            let sep = string_at("join", a, 0)?;
            Ok(text(strslice(&a[1]).join(sep)))
        }),
        (&["toStrings"], |a| {
            want("toStrings", a, 1)?;
            Ok(strings(strslice(&a[0])))
        }),
        (&["sortAlpha"], sort_alpha),
    ])
}

/// Go's `strings.SplitN(s, sep, n)`: all pieces for a negative `n`, none for 0, else at
/// most `n` with the rest of `s` in the last.
fn go_split<'a>(s: &'a str, sep: &str, n: i64) -> Vec<&'a str> {
    let limit = match usize::try_from(n) {
        Ok(0) => return Vec::new(),
        Ok(n) => n,
        Err(_) => usize::MAX,
    };
    if sep.is_empty() {
        // Into characters, the last piece holding what is left.
        let mut pieces = Vec::new();
        let mut rest = s;
        while let Some(c) = rest.chars().next() {
            if pieces.len() + 1 == limit {
                break;
            }
            pieces.push(&rest[..c.len_utf8()]);
            rest = &rest[c.len_utf8()..];
        }
        if !rest.is_empty() {
            pieces.push(rest);
        }
        return pieces;
    }
    s.splitn(limit, sep).collect()
}

/// Sprig's map of pieces `_0`, `_1`, ... that `split` and `splitn` return.
fn numbered(name: &str, pieces: Vec<&str>) -> Call {
    bounds::check_items(name, pieces.len())?;
    Ok(map(pieces.into_iter().enumerate().map(|(i, piece)| (Arc::from(format!("_{i}")), text(piece))).collect()))
}

/// Sprig's `strslice`, what `join` and `toStrings` accept: a list's non-nil items as
/// strings, nothing for nil, or one value.
pub(super) fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(items) => items.iter().filter(|i| !matches!(i, Value::Nil)).map(strval).collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// Sprig's `sortAlpha`: a list's items as strings, in byte order; anything else, itself
/// as a string.
fn sort_alpha(args: &[Value]) -> Call {
    want("sortAlpha", args, 1)?;
    match &args[0] {
        Value::List(_) => {
            let mut items = strslice(&args[0]);
            items.sort_unstable();
            Ok(strings(items))
        }
        other => Ok(strings([strval(other)])),
    }
}
