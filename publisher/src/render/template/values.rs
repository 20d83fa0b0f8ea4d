//! Template values to and from JSON: the data a render gets, and what `toJson`, `toYaml`
//! and `toToml` encode. Entry points: [`from_json`], [`to_json`].

use std::sync::Arc;

use gotmpl::Value;

use super::bounds::{MAX_DEPTH, MAX_VALUE_BYTES};

/// Template data from JSON. Integers stay integers (`int64` in Go's unstructured objects),
/// so `eq .spec.replicas 3` and `printf "%d"` behave as in Sveltos.
pub(super) fn from_json(value: &serde_json::Value) -> Value {
    match value {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::Uint(u),
            (None, None) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::String(Arc::from(s.as_str())),
        serde_json::Value::Array(items) => Value::List(items.iter().map(from_json).collect()),
        serde_json::Value::Object(map) => Value::Map(Arc::new(map.iter().map(|(k, v)| (Arc::from(k.as_str()), from_json(v))).collect())),
    }
}

/// Template values back to JSON. A whole float is written as an integer, as Go's
/// encoders write `float64(3)`. Fails past [`MAX_DEPTH`] levels or, counting a byte per
/// value and each string's length, past the value bound: lists that share their items
/// can stand for far more than fits in memory.
pub(super) fn to_json(value: &Value) -> Result<serde_json::Value, String> {
    let mut budget = MAX_VALUE_BYTES;
    encode(value, 0, &mut budget)
}

fn encode(value: &Value, depth: usize, budget: &mut usize) -> Result<serde_json::Value, String> {
    const EXACT_INTEGER_FLOAT: f64 = 9_007_199_254_740_992.0; // 2^53
    if depth > MAX_DEPTH {
        return Err(format!("the value nests deeper than {MAX_DEPTH} levels"));
    }
    let cost = 1 + if let Value::String(s) = value { s.len() } else { 0 };
    *budget = budget.checked_sub(cost).ok_or_else(|| format!("the value would encode to more than {MAX_VALUE_BYTES} bytes"))?;
    Ok(match value {
        Value::Nil => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => (*i).into(),
        Value::Uint(u) => (*u).into(),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < EXACT_INTEGER_FLOAT => (*f as i64).into(),
        Value::Float(f) => {
            serde_json::Number::from_f64(*f).map(serde_json::Value::Number).ok_or_else(|| format!("cannot encode the number {f}"))?
        }
        Value::String(s) => serde_json::Value::String(s.to_string()),
        Value::List(items) => serde_json::Value::Array(items.iter().map(|v| encode(v, depth + 1, budget)).collect::<Result<_, _>>()?),
        Value::Map(map) => serde_json::Value::Object(
            map.iter().map(|(k, v)| Ok((k.to_string(), encode(v, depth + 1, budget)?))).collect::<Result<_, String>>()?,
        ),
        _ => return Err("cannot encode a function".to_string()),
    })
}
