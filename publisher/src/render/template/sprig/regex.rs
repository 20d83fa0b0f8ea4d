//! Sprig's regular-expression functions (`regexMatch`, `regexFind`, `regexFindAll`,
//! `regexReplaceAll`, `regexReplaceAllLiteral`, `regexSplit`, `regexQuoteMeta` and the
//! `must*` twins, which behave the same here: a bad pattern fails the render).
//!
//! Go's `regexp` and the `regex` crate both implement RE2 syntax; where they differ, the
//! pattern is rewritten to Go's meaning before compiling: `\d`, `\w`, `\s` and `\b` are
//! ASCII-only in Go, `[` inside a class is a literal, `\Q...\E` quotes, and octal escapes
//! are allowed. Go's rule that an empty match right after a match does not count is
//! applied by hand.

use std::cell::RefCell;
use std::collections::HashMap;

use gotmpl::Value;
use regex::{Captures, Regex, RegexBuilder, Replacer};

use super::args::{Call, Func, failure, int_at, str_arg, string_at, strings, table, text, want};
use crate::render::template::bounds::{self, MAX_VALUE_BYTES};

/// The largest compiled program a pattern may make, in bytes: patterns come from
/// templates, and a short one (`(a{1000}){1000}`) can ask for gigabytes.
const PROGRAM_BYTES: usize = 4 << 20;

/// Compiled patterns kept per thread; templates call them in loops.
const CACHED_PATTERNS: usize = 64;

thread_local! {
    static COMPILED: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
}

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["regexMatch", "mustRegexMatch"], |a| {
            let re = pattern("regexMatch", str_arg("regexMatch", a, 2, 0)?)?;
            Ok(Value::Bool(re.is_match(string_at("regexMatch", a, 1)?)))
        }),
        (&["regexFind", "mustRegexFind"], |a| {
            let re = pattern("regexFind", str_arg("regexFind", a, 2, 0)?)?;
            Ok(text(re.find(string_at("regexFind", a, 1)?).map_or("", |m| m.as_str())))
        }),
        (&["regexFindAll", "mustRegexFindAll"], |a| {
            want("regexFindAll", a, 3)?;
            let re = pattern("regexFindAll", string_at("regexFindAll", a, 0)?)?;
            let s = string_at("regexFindAll", a, 1)?;
            let found = matches(&re, s, int_at("regexFindAll", a, 2)?);
            Ok(strings(found.into_iter().map(|(start, end)| &s[start..end])))
        }),
        (&["regexReplaceAll", "mustRegexReplaceAll"], |a| replace_all("regexReplaceAll", a, true)),
        (&["regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"], |a| replace_all("regexReplaceAllLiteral", a, false)),
        (&["regexSplit", "mustRegexSplit"], |a| {
            want("regexSplit", a, 3)?;
            let re = pattern("regexSplit", string_at("regexSplit", a, 0)?)?;
            let pieces = split(&re, string_at("regexSplit", a, 1)?, int_at("regexSplit", a, 2)?);
            Ok(strings(pieces))
        }),
        (&["regexQuoteMeta"], |a| Ok(text(quote_meta(str_arg("regexQuoteMeta", a, 1, 0)?)))),
    ])
}

/// `source` compiled with Go's meaning, from this thread's cache when it was before.
fn pattern(name: &str, source: &str) -> gotmpl::Result<Regex> {
    if let Some(re) = COMPILED.with_borrow(|c| c.get(source).cloned()) {
        return Ok(re);
    }
    let re = RegexBuilder::new(&go_syntax(source))
        .octal(true)
        .size_limit(PROGRAM_BYTES)
        .dfa_size_limit(PROGRAM_BYTES)
        .build()
        .map_err(|e| failure(name, format!("invalid regular expression {source:?}: {e}")))?;
    COMPILED.with_borrow_mut(|c| {
        if c.len() >= CACHED_PATTERNS {
            c.clear();
        }
        c.insert(source.to_string(), re.clone());
    });
    Ok(re)
}

/// A Go pattern rewritten so the `regex` crate reads it as Go does.
fn go_syntax(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + 16);
    let mut chars = source.chars().peekable();
    // Inside a bracketed class, and whether its first member is still to come (where a
    // `]` is a literal).
    let mut in_class = false;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(escaped) = chars.next() else {
                    out.push('\\');
                    break;
                };
                class_start = false;
                if escaped == 'Q' {
                    let mut quoted = String::new();
                    while let Some(q) = chars.next() {
                        if q == '\\' && chars.peek() == Some(&'E') {
                            chars.next();
                            break;
                        }
                        quoted.push(q);
                    }
                    out.push_str(&if in_class {
                        quoted.chars().map(|q| format!("\\x{{{:x}}}", q as u32)).collect()
                    } else {
                        regex::escape(&quoted)
                    });
                    continue;
                }
                out.push_str(&match (escaped, in_class) {
                    ('d', false) => "[0-9]".into(),
                    ('D', _) => "[^0-9]".into(),
                    ('w', false) => "[0-9A-Za-z_]".into(),
                    ('W', _) => "[^0-9A-Za-z_]".into(),
                    ('s', false) => "[\\t\\n\\f\\r ]".into(),
                    ('S', _) => "[^\\t\\n\\f\\r ]".into(),
                    ('d', true) => "0-9".into(),
                    ('w', true) => "0-9A-Za-z_".into(),
                    ('s', true) => "\\t\\n\\f\\r ".into(),
                    ('b', false) => "(?-u:\\b)".into(),
                    ('B', false) => "(?-u:\\B)".into(),
                    (other, _) => format!("\\{other}"),
                });
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class such as [:alpha:], copied through its closing :].
                out.push('[');
                for p in chars.by_ref() {
                    out.push(p);
                    if p == ']' {
                        break;
                    }
                }
                class_start = false;
            }
            ']' if in_class && class_start => {
                out.push_str("\\]");
                class_start = false;
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            // Literal in Go; nesting and set operators in the regex crate.
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
                class_start = false;
            }
            other => {
                out.push(other);
                class_start = false;
            }
        }
    }
    out
}

/// Where `re` matches `s`, at most `limit` times (all when negative), skipping an empty
/// match that starts where the previous match ended, as Go does.
fn matches(re: &Regex, s: &str, limit: i64) -> Vec<(usize, usize)> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut found = Vec::new();
    let mut previous_end = None;
    for m in re.find_iter(s) {
        if found.len() >= limit {
            break;
        }
        if m.is_empty() && previous_end == Some(m.start()) {
            continue;
        }
        previous_end = Some(m.end());
        found.push((m.start(), m.end()));
    }
    found
}

/// Go's `Regexp.Split(s, n)`.
fn split<'a>(re: &Regex, s: &'a str, n: i64) -> Vec<&'a str> {
    if n == 0 {
        return Vec::new();
    }
    if !re.as_str().is_empty() && s.is_empty() {
        return vec![""];
    }
    let mut pieces = Vec::new();
    let (mut begin, mut end) = (0, 0);
    for (start, stop) in matches(re, s, n) {
        if n > 0 && pieces.len() as i64 == n - 1 {
            break;
        }
        end = start;
        if stop != 0 {
            pieces.push(&s[begin..end]);
        }
        begin = stop;
    }
    if end != s.len() {
        pieces.push(&s[begin..]);
    }
    pieces
}

/// Appends each match's replacement until the result would pass the value bound.
struct Capped<'r> {
    replacement: &'r str,
    expand: bool,
    overflowed: bool,
}

impl Replacer for Capped<'_> {
    fn replace_append(&mut self, caps: &Captures<'_>, dst: &mut String) {
        if self.overflowed {
            return;
        }
        let before = dst.len();
        if self.expand {
            caps.expand(self.replacement, dst);
        } else {
            dst.push_str(self.replacement);
        }
        if dst.len() > MAX_VALUE_BYTES {
            dst.truncate(before);
            self.overflowed = true;
        }
    }
}

fn replace_all(name: &str, args: &[Value], expand: bool) -> Call {
    want(name, args, 3)?;
    let re = pattern(name, string_at(name, args, 0)?)?;
    let (s, replacement) = (string_at(name, args, 1)?, string_at(name, args, 2)?);
    let mut capped = Capped { replacement, expand, overflowed: false };
    let replaced = re.replace_all(s, capped.by_ref()).into_owned();
    if capped.overflowed {
        bounds::check(name, MAX_VALUE_BYTES + 1)?;
    }
    Ok(text(replaced))
}

/// Go's `regexp.QuoteMeta`: a backslash before each of `\.+*?()|[]{}^$`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_go_only_syntax() {
        let go = |p: &str| pattern("t", p).unwrap();
        assert!(!go(r"^\d$").is_match("٣"), "\\d is ASCII in Go");
        assert!(go(r"^[\d_]+$").is_match("1_2"));
        assert!(go(r"^[a[]+$").is_match("a[a"));
        assert!(go(r"^[]a]+$").is_match("]a"));
        assert!(go(r"^\Q1.5*\E$").is_match("1.5*"));
        assert!(go(r"^[[:alpha:]]+$").is_match("abc"));
        assert!(go(r"\bé").is_match("xé"), "\\b is an ASCII word boundary in Go");
    }

    #[test]
    fn skips_empty_matches_after_a_match_as_go_does() {
        let re = pattern("t", "a*").unwrap();
        assert_eq!(matches(&re, "baaa", -1), vec![(0, 0), (1, 4)]);
        assert_eq!(split(&pattern("t", "z+").unwrap(), "pizza", -1), vec!["pi", "a"]);
        assert_eq!(split(&pattern("t", "z+").unwrap(), "pizza", 1), vec!["pizza"]);
        assert_eq!(split(&pattern("t", "a").unwrap(), "", -1), vec![""]);
    }
}
