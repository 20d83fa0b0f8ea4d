//! Comparing manifests with live objects: [`first_drift`] asks whether every field the
//! bundle sets still has its value on the live object (drift detection), [`diff`] lists
//! every field a server-side dry-run would change (plan, DryRun profiles).
//!
//! Both ignore what the API server owns or fills in: status, bookkeeping metadata, and
//! Airlock's per-version annotations. Drift tolerates the server's normal forms: a field
//! set to its zero value may be absent, `0.5` CPU reads back as `500m`, and a list whose
//! elements have names is matched by name (other managers may add elements).

use std::fmt;

use serde_json::Value;

use crate::engine::parse::manifest::VOLATILE_ANNOTATIONS;

/// Metadata the API server writes on every object.
const BOOKKEEPING: [&str; 6] = ["managedFields", "resourceVersion", "generation", "creationTimestamp", "uid", "selfLink"];
/// Lines of a rendered diff; the rest is counted.
const MAX_DIFF_LINES: usize = 20;
/// Characters of one rendered value.
const MAX_VALUE_CHARS: usize = 80;

/// One field that differs: where, and its value on each side (None: absent).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub path: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} → {}", self.path, render(self.old.as_ref()), render(self.new.as_ref()))
    }
}

impl Change {
    /// For drift, where old is the bundle's value and new the live one.
    pub(crate) fn as_drift(&self) -> String {
        format!("{}: the bundle has {}, the live object {}", self.path, render(self.old.as_ref()), render(self.new.as_ref()))
    }
}

fn render(value: Option<&Value>) -> String {
    let Some(value) = value else { return "(absent)".into() };
    let text = value.to_string();
    if text.chars().count() <= MAX_VALUE_CHARS {
        return text;
    }
    format!("{}…", text.chars().take(MAX_VALUE_CHARS).collect::<String>())
}

/// Renders changes one per line, at most [`MAX_DIFF_LINES`].
pub(crate) fn render_changes(changes: &[Change]) -> String {
    let mut lines: Vec<String> = changes.iter().take(MAX_DIFF_LINES).map(Change::to_string).collect();
    if changes.len() > MAX_DIFF_LINES {
        lines.push(format!("… and {} more", changes.len() - MAX_DIFF_LINES));
    }
    lines.join("\n")
}

/// Whether the field at `path` (from the object's root) is the server's, not the bundle's,
/// or identity that was matched already (list items carry no apiVersion and kind).
fn ignored(path: &[String]) -> bool {
    match path {
        [a] => ["status", "apiVersion", "kind"].contains(&a.as_str()),
        [a, b] => a == "metadata" && BOOKKEEPING.contains(&b.as_str()),
        [a, b, c] => a == "metadata" && b == "annotations" && VOLATILE_ANNOTATIONS.contains(&c.as_str()),
        _ => false,
    }
}

/// `spec.ports[0].port`, `spec.containers[name=web].image`.
fn join(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if !segment.starts_with('[') && !out.is_empty() {
            out.push('.');
        }
        out.push_str(segment);
    }
    out
}

/// The first field of `desired` whose live value differs: old is the desired value (what
/// was applied), new is what the live object has now.
pub(crate) fn first_drift(desired: &Value, live: &Value) -> Option<Change> {
    drift(desired, Some(live), &mut Vec::new())
}

fn drift(want: &Value, got: Option<&Value>, path: &mut Vec<String>) -> Option<Change> {
    if is_zero(want) && got.is_none_or(is_zero) {
        return None;
    }
    let mut inside = |segment: String, want: &Value, got: Option<&Value>| {
        path.push(segment);
        let found = if ignored(path) { None } else { drift(want, got, path) };
        path.pop();
        found
    };
    match (want, got) {
        (Value::Object(want), Some(Value::Object(got))) => want.iter().find_map(|(key, value)| inside(key.clone(), value, got.get(key))),
        (Value::Array(want), Some(Value::Array(got))) => match named(want) {
            Some(names) => names.into_iter().zip(want).find_map(|(name, item)| {
                let live = got.iter().find(|g| g.get("name").and_then(Value::as_str) == Some(name));
                inside(format!("[name={name}]"), item, live)
            }),
            None if want.len() == got.len() => {
                want.iter().zip(got).enumerate().find_map(|(i, (w, g))| inside(format!("[{i}]"), w, Some(g)))
            }
            None => Some(Change { path: join(path), old: Some(Value::Array(want.clone())), new: Some(Value::Array(got.clone())) }),
        },
        (want, Some(got)) if scalar_equal(want, got) => None,
        _ => Some(Change { path: join(path), old: Some(want.clone()), new: got.cloned() }),
    }
}

/// The elements' names, when every element is a mapping with a distinct `name`.
fn named(items: &[Value]) -> Option<Vec<&str>> {
    let names: Vec<&str> = items.iter().map(|i| i.get("name").and_then(Value::as_str)).collect::<Option<_>>()?;
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    (!names.is_empty() && sorted.len() == names.len()).then_some(names)
}

/// Values Go's `omitempty` drops, so the live object may lack them.
pub fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

fn scalar_equal(want: &Value, got: &Value) -> bool {
    if want == got {
        return true;
    }
    let text = |v: &Value| match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    };
    match (text(want), text(got)) {
        (Some(a), Some(b)) => {
            matches!((quantity(&a), quantity(&b)), (Some(x), Some(y)) if (x - y).abs() <= 1e-9 * x.abs().max(y.abs()))
        }
        _ => false,
    }
}

/// The value of a Kubernetes quantity (`500m`, `1Gi`, `1e3`, `0.5`), when `s` is one.
fn quantity(s: &str) -> Option<f64> {
    const SUFFIXES: [(&str, f64); 15] = [
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let (number, factor) = SUFFIXES.iter().find_map(|(suffix, factor)| s.strip_suffix(suffix).map(|n| (n, *factor))).unwrap_or((s, 1.0));
    let plain = number.bytes().all(|b| b.is_ascii_digit() || b".+-eE".contains(&b));
    if number.is_empty() || !plain || !number.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse::<f64>().ok().map(|n| n * factor).filter(|v| v.is_finite())
}

/// Every field that differs between the live object and what it would become.
pub(crate) fn diff(old: &Value, new: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    walk_diff(Some(old), Some(new), &mut Vec::new(), &mut out);
    out
}

fn walk_diff(old: Option<&Value>, new: Option<&Value>, path: &mut Vec<String>, out: &mut Vec<Change>) {
    if old == new || ignored(path) {
        return;
    }
    let mut inside = |segment: String, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Change>| {
        path.push(segment);
        walk_diff(old, new, path, out);
        path.pop();
    };
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                inside(key.clone(), a.get(key), b.get(key), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                inside(format!("[{i}]"), Some(x), Some(y), out);
            }
        }
        _ => out.push(Change { path: join(path), old: old.cloned(), new: new.cloned() }),
    }
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
