//! Encoding values as JSON, YAML and TOML text and reading them back: Sprig's `toJson`,
//! `toPrettyJson`, `toRawJson`, `mustFromJson` (and `must*` twins), and the helpers
//! Sveltos adds or replaces (`toYaml`, `fromYaml`, `fromYamlArray`, `fromJson`,
//! `fromJsonArray`, `toToml`, `fromToml`).
//!
//! Departure, on bad input only: Sprig and Sveltos swallow errors into their result (an
//! empty string, an error text, an `Error` key), which would be published as part of a
//! manifest; here the render fails with the reason. JSON numbers keep their integer
//! type, where Go's decoder makes every number a float64.

use gotmpl::Value;

use super::args::{Call, Func, failure, one, str_arg, table, text};
use crate::render::template::values::{from_json, to_json};

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["toJson", "mustToJson"], |a| json_text("toJson", a, false, true)),
        (&["toPrettyJson", "mustToPrettyJson"], |a| json_text("toPrettyJson", a, true, true)),
        (&["toRawJson", "mustToRawJson"], |a| json_text("toRawJson", a, false, false)),
        (&["fromJson"], |a| decoded("fromJson", "JSON", parse_json("fromJson", a)?, Shape::Mapping)),
        (&["mustFromJson"], |a| decoded("mustFromJson", "JSON", parse_json("mustFromJson", a)?, Shape::Any)),
        (&["fromJsonArray"], |a| decoded("fromJsonArray", "JSON", parse_json("fromJsonArray", a)?, Shape::Sequence)),
        (&["toYaml"], to_yaml),
        (&["fromYaml"], |a| decoded("fromYaml", "YAML", parse_yaml("fromYaml", a)?, Shape::Mapping)),
        (&["fromYamlArray"], |a| decoded("fromYamlArray", "YAML", parse_yaml("fromYamlArray", a)?, Shape::Sequence)),
        (&["toToml"], to_toml),
        (&["fromToml"], |a| {
            let source = str_arg("fromToml", a, 1, 0)?;
            let table: toml::Table = toml::from_str(source).map_err(|e| failure("fromToml", format!("invalid TOML: {e}")))?;
            let json = serde_json::to_value(table).map_err(|e| failure("fromToml", e))?;
            Ok(from_json(&json))
        }),
    ])
}

fn encodable(name: &str, args: &[Value]) -> gotmpl::Result<serde_json::Value> {
    to_json(one(name, args)?).map_err(|e| failure(name, e))
}

fn json_text(name: &str, args: &[Value], pretty: bool, escape_html: bool) -> Call {
    let json = encodable(name, args)?;
    let encoded = if pretty { serde_json::to_string_pretty(&json) } else { serde_json::to_string(&json) }.map_err(|e| failure(name, e))?;
    // Go's encoding/json escapes these inside strings (they never occur outside one), and
    // identical bytes keep bundle digests stable for templates moved over from Sveltos.
    let encoded = if escape_html { encoded.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026") } else { encoded };
    Ok(text(encoded.replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029")))
}

fn parse_json(name: &str, args: &[Value]) -> gotmpl::Result<serde_json::Value> {
    serde_json::from_str(str_arg(name, args, 1, 0)?).map_err(|e| failure(name, format!("invalid JSON: {e}")))
}

fn parse_yaml(name: &str, args: &[Value]) -> gotmpl::Result<serde_json::Value> {
    let source = str_arg(name, args, 1, 0)?;
    // Sveltos decodes with yaml.v3: YAML 1.2 booleans (`y` and `yes` stay strings) and
    // `0644` as an octal integer. The default budget bounds depth and alias expansion.
    let options = serde_saphyr::options! { strict_booleans: true, legacy_octal_numbers: true };
    serde_saphyr::from_str_with_options(source, options).map_err(|e| failure(name, format!("invalid YAML: {e}")))
}

#[derive(Clone, Copy)]
enum Shape {
    Mapping,
    Sequence,
    Any,
}

/// The decoded document, if it has the shape the function promises; an empty document
/// is an empty mapping or sequence, as Go's decoders leave the target empty.
fn decoded(name: &str, format: &str, parsed: serde_json::Value, shape: Shape) -> Call {
    match (shape, parsed) {
        (Shape::Mapping, serde_json::Value::Null) => Ok(Value::Map(Default::default())),
        (Shape::Sequence, serde_json::Value::Null) => Ok(Value::List(Default::default())),
        (Shape::Mapping, parsed @ serde_json::Value::Object(_))
        | (Shape::Sequence, parsed @ serde_json::Value::Array(_))
        | (Shape::Any, parsed) => Ok(from_json(&parsed)),
        (Shape::Mapping, other) => Err(failure(name, format!("expected a {format} mapping, got {}", json_kind(&other)))),
        (Shape::Sequence, other) => Err(failure(name, format!("expected a {format} sequence, got {}", json_kind(&other)))),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a bool",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a sequence",
        serde_json::Value::Object(_) => "a mapping",
    }
}

/// Sveltos's `toYaml`, trimmed of the newline a YAML document ends with, so `nindent`
/// composes.
fn to_yaml(args: &[Value]) -> Call {
    let json = encodable("toYaml", args)?;
    yaml_text("toYaml", &json)
}

/// `json` as a YAML document without its final newline, laid out as gopkg.in/yaml.v3
/// (Sveltos's encoder) lays it out: four spaces a level, a sequence indented under its key,
/// long lines never folded. Templates embed this text, often through `nindent`, so the
/// layout is part of what is deployed.
pub(crate) fn yaml_text(name: &str, json: &serde_json::Value) -> Call {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.indent_step = 4;
    options.compact_list_indent = false;
    options.folded_wrap_chars = usize::MAX;
    let yaml = serde_saphyr::to_string_with_options(json, options).map_err(|e| failure(name, e))?;
    Ok(text(yaml.strip_suffix('\n').unwrap_or(&yaml)))
}

fn to_toml(args: &[Value]) -> Call {
    let json = encodable("toToml", args)?;
    if !json.is_object() {
        return Err(failure("toToml", format!("only a mapping can be a TOML document, got {}", json_kind(&json))));
    }
    toml::to_string(&json).map(text).map_err(|e| failure("toToml", e))
}
