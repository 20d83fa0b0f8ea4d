//! What `evaluate` returned, read as addon-controller reads it: the Lua value becomes a
//! Go value (`ToGoValue`), is marshalled to JSON and unmarshalled into a struct with one
//! field, `Resources string \`json:"resources"\``.
//!
//! So the value must be a table, and not an array (a table with element 1), or the
//! unmarshal fails. Its `resources` field, matched ASCII-case-insensitively as Go's
//! decoder matches field names (`Resources` works too; of several, the last in byte
//! order wins), must be a string; no such field means no manifests and no error. Invalid
//! UTF-8 becomes U+FFFD, as the JSON round trip makes it. Sveltos also fails when some
//! other field cannot be marshalled (a function, a NaN); Airlock ignores other fields.

use mlua::Value;

use super::args::type_name;
use super::go_runes;

/// Why the returned value holds no manifests.
#[derive(Debug)]
pub(super) enum Rejection {
    NotATable {
        found: &'static str,
    },
    Array,
    NotAString {
        field: String,
        found: &'static str,
    },
    /// A judging script's verdict (`healthy`, `matching`) that is not a boolean.
    NotABool {
        field: String,
        found: &'static str,
    },
}

/// The manifest text in `returned`.
pub(super) fn manifests(returned: &Value) -> mlua::Result<Result<String, Rejection>> {
    let fields = match fields(returned, "resources")? {
        Ok(fields) => fields,
        Err(rejection) => return Ok(Err(rejection)),
    };
    let mut text = String::new();
    for (name, value) in &fields {
        match value {
            Value::String(s) => text = go_runes::lossy(&s.as_bytes()),
            other => return Ok(Err(Rejection::NotAString { field: go_runes::lossy(name), found: type_name(other) })),
        }
    }
    Ok(Ok(text))
}

/// Fields of a returned table: each name as written, and its value.
pub(super) type Fields = Vec<(Vec<u8>, Value)>;

/// The fields of the table `returned` whose names match `name` as Go's JSON decoder
/// matches a struct field (ASCII case folded), in byte order: Go keeps the last.
pub(super) fn fields(returned: &Value, name: &str) -> mlua::Result<Result<Fields, Rejection>> {
    let Value::Table(table) = returned else { return Ok(Err(Rejection::NotATable { found: type_name(returned) })) };
    if table.raw_len() > 0 {
        return Ok(Err(Rejection::Array));
    }
    let mut fields = Vec::new();
    table.for_each(|key: Value, value: Value| {
        if let Value::String(key) = &key
            && key.as_bytes().eq_ignore_ascii_case(name.as_bytes())
        {
            fields.push((key.as_bytes().to_vec(), value));
        }
        Ok(())
    })?;
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Ok(fields))
}
