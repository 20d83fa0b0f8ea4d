//! Semantic comparison of two JSON values, as readable differences: each names the JSON
//! pointer where they part and both sides. Map order never matters and numbers compare by
//! value (a template's 5 and a Lua script's 5.0 are the same replica count). `exact`
//! wants the same keys on both sides; `within` lets the actual side hold more keys, for
//! objects read back from an apiserver, which adds defaults and status, and lack the keys
//! of empty values, which it leaves out (`hostNetwork: false`, as the puller's drift
//! detection judges it).

use airlock_puller::engine::testing::is_zero;
use serde_json::Value;

/// How many differences one comparison reports before it says "and N more".
const SHOWN: usize = 6;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Exact,
    Within,
}

/// Every difference between `expected` and `actual`.
pub fn exact(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(expected, actual, "", Mode::Exact, &mut out);
    out
}

/// The differences that matter when `actual` may carry more fields than `expected`.
pub fn within(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(expected, actual, "", Mode::Within, &mut out);
    out
}

/// Differences joined into one table cell, the first few only.
pub fn summary(diffs: &[String]) -> String {
    let mut shown: Vec<&str> = diffs.iter().take(SHOWN).map(String::as_str).collect();
    let more = diffs.len().saturating_sub(SHOWN);
    let tail = format!("and {more} more");
    if more > 0 {
        shown.push(&tail);
    }
    shown.join("; ")
}

/// A value on one line, shortened when long.
pub fn short(v: &Value) -> String {
    const MAX: usize = 120;
    let text = match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    if text.chars().count() > MAX { format!("{}…", text.chars().take(MAX).collect::<String>()) } else { text }
}

fn walk(expected: &Value, actual: &Value, at: &str, mode: Mode, out: &mut Vec<String>) {
    let here = if at.is_empty() { "/" } else { at };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match a.get(k) {
                    Some(av) => walk(ev, av, &path, mode, out),
                    None if mode == Mode::Within && is_zero(ev) => {}
                    None => out.push(format!("{path}: missing (expected {})", short(ev))),
                }
            }
            if mode == Mode::Exact {
                for (k, av) in a.iter().filter(|(k, _)| !e.contains_key(*k)) {
                    let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    out.push(format!("{path}: unexpected {}", short(av)));
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                out.push(format!("{here}: {} items, expected {} (got {})", a.len(), e.len(), short(actual)));
                return;
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                walk(ev, av, &format!("{at}/{i}"), mode, out);
            }
        }
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => {}
        (e, a) if e == a => {}
        (e, a) => out.push(format!("{here}: expected {}, got {}", short(e), short(a))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_every_difference_with_its_pointer() {
        let e = json!({"data": {"a": "1", "b/c": 2}, "list": [1, 2]});
        let a = json!({"data": {"a": "2", "b/c": 2.0, "x": true}, "list": [1]});
        assert_eq!(
            exact(&e, &a),
            ["/data/a: expected \"1\", got \"2\"", "/data/x: unexpected true", "/list: 1 items, expected 2 (got [1])"]
        );
        assert_eq!(within(&json!({"data": {"b/c": 2}}), &a), Vec::<String>::new());
        assert_eq!(within(&json!({"spec": {"x": 1}}), &a), ["/spec: missing (expected {\"x\":1})"]);
        let empties = json!({"spec": {}, "off": false, "none": [], "zero": 0, "text": ""});
        assert_eq!(within(&empties, &a), Vec::<String>::new(), "an apiserver leaves empty values out");
        assert_eq!(exact(&json!({"off": false}), &json!({})), ["/off: missing (expected false)"]);
    }
}
