//! `require("json")`: lua-utils' glua-json (layeh's gopher-json), `encode(value)` and
//! `decode(text)`, each answering `nil, message` on failure.
//!
//! `encode` writes what Go's `encoding/json` writes for it: object keys sorted, numbers as
//! Go formats a `float64` (`3`, not `3.0`; `1e+21`), `<`, `>`, `&`, U+2028 and U+2029
//! escaped, each invalid byte as `\ufffd`, errors prefixed once per nesting level as Go's
//! `MarshalerError` wraps them. An empty table is `[]`. A table whose keys are exactly
//! `1..n` is an array, any other numeric keys a sparse array, mixed keys an error.
//! gopher-json marks every table it enters and never unmarks it, so a table reached twice
//! is refused as "recursively nested" even when it is only shared (`labels` used for both
//! `selector` and `template`); that is kept, because Sveltos deploys nothing for such a
//! script and Airlock renders what Sveltos deploys.
//!
//! `decode` builds Lua values as it parses, so the Lua allocator counts what it builds:
//! numbers become Lua numbers, `null` becomes `nil` (dropped from arrays, which close up),
//! invalid UTF-8 inside strings becomes U+FFFD as Go decodes it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use mlua::{Lua, MultiValue, Table, Value};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::args::{Args, Helper, register};
use super::budget::Capped;
use super::go_runes;

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let module = lua.create_table()?;
    register(lua, &module, HELPERS)?;
    Ok(module)
}

const HELPERS: &[(&str, Helper)] = &[("decode", decode), ("encode", encode)];

/// Deeper Lua tables are refused rather than followed down the Rust stack: no manifest
/// nests anywhere near this, and Sveltos refuses YAML much shallower.
const MAX_DEPTH: usize = 200;

fn encode(a: &Args<'_>) -> mlua::Result<MultiValue> {
    let value = a.any(1)?;
    let mut encoder = Encoder { lua: a.lua, out: Capped::new(a.lua), visited: HashSet::new() };
    match encoder.value(&value, 0)? {
        Ok(()) => a.ret(encoder.out.into_lua(a.lua)?),
        Err(failure) => a.ret((Value::Nil, failure.message())),
    }
}

/// Why a value cannot be encoded, and how deep: Go prefixes the message once per level.
struct Failure {
    reason: String,
    depth: usize,
}

impl Failure {
    fn message(&self) -> String {
        "json: error calling MarshalJSON for type json.jsonValue: ".repeat(self.depth + 1) + &self.reason
    }
}

struct Encoder<'a> {
    lua: &'a Lua,
    out: Capped,
    visited: HashSet<usize>,
}

/// The outer `Result` is the state's (memory); the inner one is the encoder's answer.
type Encoded = mlua::Result<Result<(), Failure>>;

impl Encoder<'_> {
    fn value(&mut self, value: &Value, depth: usize) -> Encoded {
        let fail = |reason: &str| Ok(Err(Failure { reason: reason.to_string(), depth }));
        match value {
            Value::Nil => self.out.push(b"null")?,
            Value::Boolean(b) => self.out.push(if *b { b"true" } else { b"false" })?,
            Value::Integer(i) => self.out.push(go_float(*i as f64).as_bytes())?,
            Value::Number(f) if f.is_finite() => self.out.push(go_float(*f).as_bytes())?,
            Value::Number(f) => return fail(&format!("json: unsupported value: {}", go_special(*f))),
            Value::String(s) => self.string(&s.as_bytes())?,
            Value::Table(table) => return self.table(table, depth),
            other => return fail(&format!("cannot encode {} to JSON", super::args::type_name(other))),
        }
        Ok(Ok(()))
    }

    fn table(&mut self, table: &Table, depth: usize) -> Encoded {
        let fail = |reason: &str| Ok(Err(Failure { reason: reason.to_string(), depth }));
        if !self.visited.insert(table.to_pointer() as usize) {
            return fail("cannot encode recursively nested tables to JSON");
        }
        if depth >= MAX_DEPTH {
            return fail(&format!("cannot encode tables nested deeper than {MAX_DEPTH}"));
        }
        // Keys only: a Lua value held on the Rust side takes a slot of a stack Lua 5.1
        // caps at a few thousand, so values are fetched one at a time below.
        let (mut names, mut indices, mut others) = (Vec::new(), Vec::new(), false);
        table.for_each(|key: Value, _: Value| {
            match (&key, super::args::number(&key)) {
                (Value::String(name), _) => names.push(name.as_bytes().to_vec()),
                (_, Some(index)) => indices.push(index),
                _ => others = true,
            }
            Ok(())
        })?;
        if others || (!names.is_empty() && !indices.is_empty()) {
            return fail("cannot encode mixed or invalid key types");
        }
        if !names.is_empty() {
            names.sort();
            self.out.push(b"{")?;
            for (i, name) in names.iter().enumerate() {
                if i > 0 {
                    self.out.push(b",")?;
                }
                self.string(name)?;
                self.out.push(b":")?;
                let value: Value = table.raw_get(self.lua.create_string(name)?)?;
                if let Err(failure) = self.value(&value, depth + 1)? {
                    return Ok(Err(failure));
                }
            }
            return self.out.push(b"}").map(Ok);
        }
        indices.sort_by(f64::total_cmp);
        if indices.iter().enumerate().any(|(i, &index)| index != (i + 1) as f64) {
            return fail("cannot encode sparse array");
        }
        self.out.push(b"[")?;
        for i in 1..=indices.len() {
            if i > 1 {
                self.out.push(b",")?;
            }
            let value: Value = table.raw_get(i)?;
            if let Err(failure) = self.value(&value, depth + 1)? {
                return Ok(Err(failure));
            }
        }
        self.out.push(b"]").map(Ok)
    }

    /// Go's `appendString` with HTML escaping, as `json.Marshal` calls it.
    fn string(&mut self, s: &[u8]) -> mlua::Result<()> {
        self.out.push(b"\"")?;
        let mut at = 0;
        while at < s.len() {
            let byte = s[at];
            if byte < 0x80 {
                let escaped: Cow<'static, [u8]> = match byte {
                    b'"' => b"\\\"".into(),
                    b'\\' => b"\\\\".into(),
                    b'\n' => b"\\n".into(),
                    b'\r' => b"\\r".into(),
                    b'\t' => b"\\t".into(),
                    0x08 => b"\\b".into(),
                    0x0C => b"\\f".into(),
                    0x00..=0x1F | b'<' | b'>' | b'&' => format!("\\u{byte:04x}").into_bytes().into(),
                    _ => vec![byte].into(),
                };
                self.out.push(&escaped)?;
                at += 1;
                continue;
            }
            let (rune, width) = go_runes::decode(&s[at..]);
            match rune {
                go_runes::REPLACEMENT if width == 1 => self.out.push(b"\\ufffd")?,
                '\u{2028}' => self.out.push(b"\\u2028")?,
                '\u{2029}' => self.out.push(b"\\u2029")?,
                _ => self.out.push(&s[at..at + width])?,
            }
            at += width;
        }
        self.out.push(b"\"")
    }
}

/// A finite `f64` as Go's `encoding/json` writes it: shortest round-trip digits, in
/// exponent form below 1e-6 and from 1e21 on.
pub(super) fn go_float(f: f64) -> String {
    let magnitude = f.abs();
    if magnitude == 0.0 || (1e-6..1e21).contains(&magnitude) {
        return format!("{f}");
    }
    let scientific = format!("{f:e}");
    match scientific.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => format!("{mantissa}e+{exponent}"),
        _ => scientific,
    }
}

/// How Go's `strconv` names a non-finite float.
fn go_special(f: f64) -> &'static str {
    match f {
        f if f.is_nan() => "NaN",
        f if f > 0.0 => "+Inf",
        _ => "-Inf",
    }
}

fn decode(a: &Args<'_>) -> mlua::Result<MultiValue> {
    let text = a.string(1)?;
    let bytes = text.as_bytes();
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => Cow::Owned(go_runes::lossy(&bytes)),
    };
    let builder = Builder { lua: a.lua, failure: &RefCell::new(None) };
    let mut parser = serde_json::Deserializer::from_str(&text);
    let parsed = builder.deserialize(&mut parser).and_then(|value| parser.end().map(|()| value));
    if let Some(failure) = builder.failure.take() {
        return Err(failure);
    }
    match parsed {
        Ok(value) => a.ret(value),
        Err(err) => a.ret((Value::Nil, err.to_string())),
    }
}

/// Builds the Lua value of a JSON document while serde_json parses it. A failure of the
/// state (memory) is kept aside, so it stays a budget error instead of a parse message.
#[derive(Clone, Copy)]
struct Builder<'a> {
    lua: &'a Lua,
    failure: &'a RefCell<Option<mlua::Error>>,
}

impl Builder<'_> {
    fn lua<T, E: de::Error>(&self, result: mlua::Result<T>) -> Result<T, E> {
        result.map_err(|err| {
            self.failure.replace(Some(err));
            E::custom("the Lua state failed")
        })
    }
}

impl<'de> DeserializeSeed<'de> for Builder<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Builder<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Boolean(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Number(i as f64))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        Ok(Value::Number(u as f64))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Number(f))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        self.lua(self.lua.create_string(s)).map(Value::String)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let list = self.lua(self.lua.create_table())?;
        while let Some(item) = seq.next_element_seed(self)? {
            if !item.is_nil() {
                self.lua(list.raw_push(item))?;
            }
        }
        Ok(Value::Table(list))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let object = self.lua(self.lua.create_table())?;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value = map.next_value_seed(self)?;
            self.lua(object.raw_set(&*key, value))?;
        }
        Ok(Value::Table(object))
    }
}
