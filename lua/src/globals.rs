//! The global helpers libsveltos registers: `getResource`, `getLabel`, `getAnnotation`,
//! `base64Encode`, `base64Decode`, with its return conventions. The first three answer
//! `nil, "expected 2 arguments (table, key)"` to any other number of arguments, fail on a
//! first argument that is not a table, and read fields raw (no metatables). The base64
//! pair answers `nil, "provided string is empty"` to `""` and `base64Decode` answers
//! `nil, "deconding failed"` (sic) to anything Go's `StdEncoding` refuses: padding is
//! required, `\r` and `\n` are skipped, stray bits in the last character are allowed.

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use mlua::{Lua, MultiValue, Table, Value};

use super::args::{Args, Helper, register};
use super::budget::Capped;

pub(super) fn register_all(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    register(lua, globals, HELPERS)
}

const HELPERS: &[(&str, Helper)] = &[
    ("base64Decode", base64_decode),
    ("base64Encode", base64_encode),
    ("getAnnotation", |a| metadata_string(a, "annotations")),
    ("getLabel", |a| metadata_string(a, "labels")),
    ("getResource", |a| match two_arguments(a)? {
        Ok((resources, key)) => a.ret(resources.raw_get::<Value>(key)?),
        Err(refusal) => Ok(refusal),
    }),
];

/// Go's `base64.StdEncoding` decoder.
const STD_ENCODING: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::RequireCanonical).with_decode_allow_trailing_bits(true),
);

/// The table and key of a two-argument helper, or the `nil, message` answer to a call
/// with any other number of arguments.
fn two_arguments(a: &Args<'_>) -> mlua::Result<Result<(Table, mlua::LuaString), MultiValue>> {
    if a.count() != 2 {
        return Ok(Err(a.ret((Value::Nil, "expected 2 arguments (table, key)"))?));
    }
    Ok(Ok((a.table(1)?, a.string(2)?)))
}

/// `obj.metadata[field][key]` when every step is a table and the value a string.
fn metadata_string(a: &Args<'_>, field: &str) -> mlua::Result<MultiValue> {
    let (object, key) = match two_arguments(a)? {
        Ok(found) => found,
        Err(refusal) => return Ok(refusal),
    };
    let Value::Table(metadata) = object.raw_get::<Value>("metadata")? else { return a.ret(Value::Nil) };
    let Value::Table(map) = metadata.raw_get::<Value>(field)? else { return a.ret(Value::Nil) };
    match map.raw_get::<Value>(key)? {
        value @ Value::String(_) => a.ret(value),
        _ => a.ret(Value::Nil),
    }
}

fn base64_encode(a: &Args<'_>) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let s = s.as_bytes();
    if s.is_empty() {
        return a.ret((Value::Nil, "provided string is empty"));
    }
    let mut out = Capped::new(a.lua);
    out.reserve(s.len().div_ceil(3) * 4)?;
    out.push(STD_ENCODING.encode(&s).as_bytes())?;
    a.ret(out.into_lua(a.lua)?)
}

fn base64_decode(a: &Args<'_>) -> mlua::Result<MultiValue> {
    let s = a.string(1)?;
    let s = s.as_bytes();
    if s.is_empty() {
        return a.ret((Value::Nil, "provided string is empty"));
    }
    let text: Vec<u8> = s.iter().copied().filter(|&byte| byte != b'\r' && byte != b'\n').collect();
    match STD_ENCODING.decode(text) {
        Ok(decoded) => a.ret(a.lua.create_string(decoded)?),
        Err(_) => a.ret((Value::Nil, "deconding failed")),
    }
}
