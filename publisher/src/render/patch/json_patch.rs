//! JSON 6902 patches as kustomize applies them, with evanphx/json-patch v4's semantics.
//!
//! RFC 6902's six operations over RFC 6901 pointers (`~1` is `/`, `~0` is `~`, `-` appends),
//! with v4's departures, which decide what Sveltos deploys: `replace` of a missing map key
//! adds it; negative indices count from the end (`-1` in `add` appends); a leading zero is
//! an index (`01` is 1); a null value is a missing one to `replace`, `test` and the
//! pointer's walk; `add` without a value adds null; a path without its leading `/` loses
//! its first segment. The root cannot be a target. Operations are checked as they run, so
//! an unknown one fails only when reached. kustomize reads the result back through Go's
//! float64, so integral numbers come out as integers.

use serde_json::{Number, Value};

/// Why an operation failed; `index` counts from 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    #[error("operation {index}: unknown operation `{op}`")]
    UnknownOp { index: usize, op: String },
    #[error("operation {index} ({op}): no `{field}` string")]
    MissingField { index: usize, op: String, field: &'static str },
    #[error("operation {index} ({op} `{path}`): {reason}")]
    Failed { index: usize, op: String, path: String, reason: &'static str },
    #[error("operation {index} (test `{path}`): the value differs")]
    TestFailed { index: usize, path: String },
}

/// Applies the operations in order to `doc`; on an error, `doc` may hold the earlier ones.
pub(super) fn apply(doc: &mut Value, ops: &[Value]) -> Result<(), OpError> {
    for (index, op) in ops.iter().enumerate() {
        let name = op.get("op").and_then(Value::as_str).unwrap_or("unknown");
        let field =
            |field: &'static str| op.get(field).and_then(Value::as_str).ok_or(OpError::MissingField { index, op: name.to_string(), field });
        let value = || op.get("value").cloned().unwrap_or(Value::Null);
        let fail = |path: &str, reason| OpError::Failed { index, op: name.to_string(), path: path.to_string(), reason };
        match name {
            "add" => {
                let path = field("path")?;
                let (parent, key) = parent(doc, path).ok_or_else(|| fail(path, "the path's parent is missing"))?;
                add(parent, &key, value()).map_err(|reason| fail(path, reason))?;
            }
            "remove" => {
                let path = field("path")?;
                let (parent, key) = parent(doc, path).ok_or_else(|| fail(path, "the path's parent is missing"))?;
                remove(parent, &key).map_err(|reason| fail(path, reason))?;
            }
            "replace" => {
                let path = field("path")?;
                let (parent, key) = parent(doc, path).ok_or_else(|| fail(path, "the path's parent is missing"))?;
                get(parent, &key).map_err(|reason| fail(path, reason))?;
                set(parent, &key, value()).map_err(|reason| fail(path, reason))?;
            }
            "move" | "copy" => {
                let from = field("from")?;
                let (parent_from, key) = parent(doc, from).ok_or_else(|| fail(from, "the `from` parent is missing"))?;
                let moved = get(parent_from, &key).map_err(|reason| fail(from, reason))?.cloned().unwrap_or(Value::Null);
                if name == "move" {
                    remove(parent_from, &key).map_err(|reason| fail(from, reason))?;
                }
                let path = field("path")?;
                let (parent, key) = parent(doc, path).ok_or_else(|| fail(path, "the path's parent is missing"))?;
                add(parent, &key, moved).map_err(|reason| fail(path, reason))?;
            }
            "test" => {
                let path = field("path")?;
                let (parent, key) = parent(doc, path).ok_or_else(|| fail(path, "the path's parent is missing"))?;
                let found = get(parent, &key).map_err(|reason| fail(path, reason))?;
                let same = match (found, value()) {
                    (None, expected) => expected.is_null(),
                    (Some(_), Value::Null) => false,
                    (Some(found), expected) => equal(found, &expected),
                };
                if !same {
                    return Err(OpError::TestFailed { index, path: path.to_string() });
                }
            }
            other => return Err(OpError::UnknownOp { index, op: other.to_string() }),
        }
    }
    normalize_numbers(doc);
    Ok(())
}

/// RFC 6901 unescaping in one pass, so `~01` is `~1`.
fn unescape(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    let mut chars = segment.chars().peekable();
    while let Some(c) = chars.next() {
        let escaped = match (c, chars.peek()) {
            ('~', Some('1')) => '/',
            ('~', Some('0')) => '~',
            _ => {
                out.push(c);
                continue;
            }
        };
        chars.next();
        out.push(escaped);
    }
    out
}

/// evanphx's `findObject`: the container of the pointer's last segment, and that segment.
fn parent<'d>(doc: &'d mut Value, path: &str) -> Option<(&'d mut Value, String)> {
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() < 2 {
        return None;
    }
    let mut current = doc;
    for segment in &segments[1..segments.len() - 1] {
        let key = unescape(segment);
        current = match current {
            Value::Object(map) => map.get_mut(&key).filter(|v| !v.is_null())?,
            Value::Array(items) => {
                let at = index(&key, items.len(), false).ok()?;
                items.get_mut(at).filter(|v| !v.is_null())?
            }
            _ => return None,
        };
        if !current.is_object() && !current.is_array() {
            return None;
        }
    }
    Some((current, unescape(segments[segments.len() - 1])))
}

/// An array index as evanphx reads it (Go's `Atoi`, negatives from the end) for a list of
/// `len` items; `insert` allows one past the end.
fn index(key: &str, len: usize, insert: bool) -> Result<usize, &'static str> {
    let at: i64 = key.parse().map_err(|_| "not an array index")?;
    let size = i64::try_from(len).unwrap_or(i64::MAX) + i64::from(insert);
    if at >= size || at < -size {
        return Err("the index is out of range");
    }
    Ok(usize::try_from(if at < 0 { at + size } else { at }).expect("in range"))
}

fn add(parent: &mut Value, key: &str, value: Value) -> Result<(), &'static str> {
    match parent {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
        }
        Value::Array(items) if key == "-" => items.push(value),
        Value::Array(items) => {
            let at = index(key, items.len(), true)?;
            items.insert(at, value);
        }
        _ => return Err("the parent is not a container"),
    }
    Ok(())
}

fn remove(parent: &mut Value, key: &str) -> Result<(), &'static str> {
    match parent {
        Value::Object(map) => map.remove(key).map(drop).ok_or("no such key"),
        Value::Array(items) => {
            let at = index(key, items.len(), false)?;
            items.remove(at);
            Ok(())
        }
        _ => Err("the parent is not a container"),
    }
}

/// evanphx's `get`: a missing key or a null is `None`, a bad index an error.
fn get<'p>(parent: &'p Value, key: &str) -> Result<Option<&'p Value>, &'static str> {
    Ok(match parent {
        Value::Object(map) => map.get(key),
        Value::Array(items) => Some(&items[index(key, items.len(), false)?]),
        _ => None,
    }
    .filter(|v| !v.is_null()))
}

fn set(parent: &mut Value, key: &str, value: Value) -> Result<(), &'static str> {
    match parent {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
        }
        Value::Array(items) => {
            let at = index(key, items.len(), false)?;
            items[at] = value;
        }
        _ => return Err("the parent is not a container"),
    }
    Ok(())
}

/// JSON equality with numbers compared by value, as both sides pass through Go's float64.
pub(super) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w))),
        _ => a == b,
    }
}

/// Go's float64 round trip: integral numbers below 1e21 are written as integers.
pub(super) fn normalize_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(integral) = n.as_f64().and_then(integral) {
                *n = integral;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_numbers),
        Value::Object(map) => map.values_mut().for_each(normalize_numbers),
        _ => {}
    }
}

fn integral(f: f64) -> Option<Number> {
    if f.fract() != 0.0 || f.abs() >= 1e21 {
        None
    } else if f >= 0.0 && f <= u64::MAX as f64 {
        Some(Number::from(f as u64))
    } else if f < 0.0 && f >= i64::MIN as f64 {
        Some(Number::from(f as i64))
    } else {
        None
    }
}

/// Whether a JSON value reads as a list of operations (`jsonpatch.DecodePatch`).
pub(super) fn as_operations(value: Value) -> Option<Vec<Value>> {
    match value {
        Value::Array(items) => items.iter().all(|op| op.is_object() || op.is_null()).then_some(items),
        Value::Null => Some(Vec::new()),
        _ => None,
    }
}
