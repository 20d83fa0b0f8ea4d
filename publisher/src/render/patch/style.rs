//! Which strings go.yaml.in/yaml v3 writes quoted, and what a plain scalar reads back as.
//!
//! Sveltos hands kustomize each object as YAML written by yaml.v3, and kustomize keeps a
//! node's quoting when a patch replaces its value: an unquoted `8080` in a patch that
//! replaces a value written `"80"` comes out as the string `"8080"`, over `image: nginx`
//! as the number. So the merge needs to know which of an object's strings yaml.v3 quotes:
//! those that would read back as something else (a number, a boolean, null, a timestamp,
//! YAML 1.1's `yes`/`no`/`on`/`off`, base-60 `1:20`), hold a line break, or cannot stand
//! plain (libyaml's scalar analysis: indicators, `: `, ` #`, edge spaces, tabs).

use serde_json::Value;

/// Whether yaml.v3 writes the string `s` as a value in any style but plain.
pub(super) fn quoted(s: &str) -> bool {
    s.contains('\n') || !resolves_to_string(s) || is_base60_float(s) || is_old_bool(s) || !plain_allowed(s)
}

/// What a scalar written plain with text `text` reads back as (YAML 1.1, as Sveltos reads
/// kustomize's output): text that cannot stand plain is written quoted and stays a string.
pub(super) fn plain_value(text: &str) -> Value {
    if !plain_allowed(text) {
        return Value::String(text.to_string());
    }
    match crate::yaml::parse_documents(text).ok().and_then(|docs| docs.into_iter().next()) {
        Some(value @ (Value::Bool(_) | Value::Number(_) | Value::String(_))) => value,
        None if text.is_empty() => Value::Null,
        _ => Value::String(text.to_string()),
    }
}

/// yaml.v3's `resolve`: whether a plain scalar with this text is a string.
fn resolves_to_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
        "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<",
    ];
    let Some(&first) = s.as_bytes().first() else { return false };
    let hinted = matches!(first, b'+' | b'-' | b'0'..=b'9' | b'.' | b'<' | b'y' | b'Y' | b'n' | b'N' | b't' | b'T')
        || matches!(first, b'f' | b'F' | b'o' | b'O' | b'~');
    if !hinted {
        return true;
    }
    if SPECIAL.contains(&s) {
        return false;
    }
    match first {
        b'.' => s.parse::<f64>().is_err(),
        b'+' | b'-' | b'0'..=b'9' => {
            let plain = s.replace('_', "");
            !(is_timestamp(s) || is_go_integer(&plain) || is_yaml_float(&plain))
        }
        _ => true,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` syntax (range aside): a sign, then `0x`/`0o`/`0b`
/// digits, a leading-zero octal, or decimal.
fn is_go_integer(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    let all = |rest: &str, ok: fn(u8) -> bool| !rest.is_empty() && rest.bytes().all(ok);
    let lower = digits.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        all(hex, |b| b.is_ascii_hexdigit())
    } else if let Some(octal) = lower.strip_prefix("0o") {
        all(octal, |b| (b'0'..=b'7').contains(&b))
    } else if let Some(binary) = lower.strip_prefix("0b") {
        all(binary, |b| b == b'0' || b == b'1')
    } else if digits.starts_with('0') {
        all(digits, |b| (b'0'..=b'7').contains(&b))
    } else {
        all(digits, |b| b.is_ascii_digit())
    }
}

/// yaml.v3's float pattern `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => digits(whole) && (fraction.is_empty() || digits(fraction)),
        None => digits(mantissa),
    };
    mantissa_ok && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
}

/// yaml.v3's timestamps: `YYYY-M-D`, optionally with a time (`T`, `t` or space).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let number = |t: &str, max: usize| !t.is_empty() && t.len() <= max && t.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = date.split('-').collect();
    if parts.len() != 3 || !number(parts[1], 2) || !number(parts[2], 2) {
        return false;
    }
    let Some(time) = time else { return true };
    let zone_at = time.find(['Z', '+', '-']).unwrap_or(time.len());
    let (clock, zone) = time.split_at(zone_at);
    let clock = clock.split_once('.').map_or(clock, |(c, fraction)| if number(fraction, 9) { c } else { "" });
    let fields: Vec<&str> = clock.split(':').collect();
    let zone_ok = zone.is_empty() || zone == "Z" || (zone.len() == 6 && zone.as_bytes()[3] == b':');
    fields.len() == 3 && fields.iter().all(|f| number(f, 2)) && zone_ok
}

/// yaml.v3's `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (s, fraction) = s.split_once('.').unwrap_or((s, ""));
    let mut groups = s.split(':');
    let head = groups.next().unwrap_or("");
    let head_ok = head.starts_with(|c: char| c.is_ascii_digit()) && head.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    let rest: Vec<&str> = groups.collect();
    let sexagesimal = |g: &&str| matches!(g.as_bytes(), [d] | [b'0'..=b'5', d] if d.is_ascii_digit());
    head_ok && !rest.is_empty() && rest.iter().all(sexagesimal) && fraction.bytes().all(|b| b.is_ascii_digit() || b == b'_')
}

/// yaml.v3's `isOldBool`: YAML 1.1 booleans it quotes for older readers.
fn is_old_bool(s: &str) -> bool {
    matches!(s, "y" | "Y" | "yes" | "Yes" | "YES" | "n" | "N" | "no" | "No" | "NO" | "on" | "On" | "ON" | "off" | "Off" | "OFF")
}

/// libyaml's analysis of a block-context value: whether it may be written plain.
fn plain_allowed(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    if b[0] == b' ' || b[b.len() - 1] == b' ' || !s.chars().all(printable) {
        return false;
    }
    let blank_after = |i: usize| matches!(b.get(i + 1), None | Some(b' ' | b'\t' | b'\n' | b'\r'));
    for (i, &c) in b.iter().enumerate() {
        let indicator = if i == 0 {
            matches!(c, b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\'' | b'"')
                || matches!(c, b'%' | b'@' | b'`')
                || (matches!(c, b'?' | b':' | b'-') && blank_after(i))
        } else {
            (c == b':' && blank_after(i)) || (c == b'#' && matches!(b[i - 1], b' ' | b'\t'))
        };
        if indicator {
            return false;
        }
    }
    true
}

/// libyaml's `is_printable`, which leaves out tabs and control characters.
fn printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..) && c != '\u{feff}'
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What kustomize made of an unquoted `1` replacing each of these strings (a string or
    /// the number), measured with kustomize v5.5 behind `kubectl kustomize`.
    #[test]
    fn quoting_matches_yaml_v3_on_measured_strings() {
        let quoted_strings = [
            "a: b",
            "x\ny",
            "",
            "yes",
            "2001-12-14",
            "1:20",
            " lead",
            "- x",
            "#x",
            "x #y",
            "0x1F",
            "1_000",
            "true",
            "y",
            "on",
            "null",
            "~",
            "1e3",
            ".5",
            "0o17",
            "017",
            "+1",
            "*a",
            "&a",
            "!a",
            "%a",
            "@a",
            "`a",
            "[a",
            "{a",
            "? a",
            "|a",
            ">a",
            "'a",
            "\"a",
            "a:",
            "trail ",
            "\ttab",
            "08",
            "0b101",
            ".inf",
            "0.",
            "1.",
            "-.5e3",
            "12:30:00",
            "2001-12-14t21:59:43.10-05:00",
            "Yes",
            "NO",
            "Off",
            "n",
        ];
        let plain_strings = ["a b", "-x", "abc", "a]", "a,b", "?a", "a:b", "é", "NaN", "1e"];
        for s in quoted_strings {
            assert!(quoted(s), "yaml.v3 quotes {s:?}");
        }
        for s in plain_strings {
            assert!(!quoted(s), "yaml.v3 writes {s:?} plain");
        }
    }

    #[test]
    fn plain_text_reads_back_as_yaml_1_1() {
        assert_eq!(plain_value("80"), Value::from(80));
        assert_eq!(plain_value("yes"), Value::Bool(true));
        assert_eq!(plain_value("a: b"), Value::from("a: b"));
        assert_eq!(plain_value("web"), Value::from("web"));
    }
}
