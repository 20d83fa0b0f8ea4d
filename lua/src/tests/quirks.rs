//! The places where Sveltos's conversions lose or bend data, each kept as Sveltos has it
//! (or, for number printing, the one documented difference), and how the returned table
//! is read.

use serde_json::json;

use super::{run, show, show_with};

fn resource(object: serde_json::Value) -> serde_json::Value {
    json!({ "Object": object })
}

#[test]
fn resources_is_both_the_global_and_the_argument() {
    let script = r#"
function evaluate(argument)
  return { resources = tostring(rawequal(argument, resources)) .. " " .. argument.Object.kind }
end
"#;
    assert_eq!(run(script, resource(json!({"kind": "Secret"}))).unwrap(), "true Secret");
}

#[test]
fn resources_is_unset_while_the_top_level_code_runs() {
    let script = r#"
local seen = type(resources)
function evaluate() return { resources = seen .. " then " .. type(resources) } end
"#;
    assert_eq!(run(script, json!({})).unwrap(), "nil then table");
}

#[test]
fn integers_vanish_from_lists_and_floats_stay() {
    let object = json!({"ports": [80, 443], "weights": [0.5, 1.5], "mixed": [1, "a", 2.5, true]});
    let shown = show_with("#resources.Object.ports, resources.Object.weights, resources.Object.mixed", resource(object)).unwrap();
    assert_eq!(shown, "0 {0.5,1.5} {'a',2.5,true}");
}

#[test]
fn nested_lists_and_nulls_vanish_from_lists_which_close_up() {
    let object = json!({"args": ["a", null, ["x"], "b"], "items": [{"name": "one", "ids": [7]}, null]});
    let shown = show_with("resources.Object.args, #resources.Object.items, #resources.Object.items[1].ids", resource(object)).unwrap();
    assert_eq!(shown, "{'a','b'} 1 0");
}

#[test]
fn integers_in_objects_stay_and_nulls_there_are_absent() {
    let object = json!({"spec": {"replicas": 3, "paused": null}});
    let shown = show_with("resources.Object.spec.replicas, resources.Object.spec.paused", resource(object)).unwrap();
    assert_eq!(shown, "3 nil");
}

#[test]
fn integers_beyond_2_pow_53_round_as_doubles() {
    let object = json!({"big": 9_007_199_254_740_993_u64, "huge": 18_446_744_073_709_551_615_u64});
    let shown = show_with(r#"json.encode(resources.Object.big), json.encode({resources.Object.huge})"#, resource(object)).unwrap();
    assert_eq!(shown, "'9007199254740992' '[18446744073709552000]'");
}

#[test]
fn json_encode_writes_numbers_as_go_writes_a_float64() {
    assert_eq!(
        show("json.encode({3, 3.5, -0.0, 1e20, 1e21, 1.5e-7, 1e-6, 0.1 + 0.2, 2^63})"),
        "'[3,3.5,-0,100000000000000000000,1e+21,1.5e-7,0.000001,0.30000000000000004,9223372036854776000]'"
    );
}

/// Lua's own number-to-string conversion is C Lua's `%.14g` (gopher-lua prints
/// `1000000000000000` and `0.3333333333333333`); `string.format` agrees with both.
#[test]
fn number_to_string_is_c_lua_s() {
    assert_eq!(
        show(r#"1e15 .. "", tostring(1/3), 2^53 .. "", string.format("%d", 1e15), 12345678901234 .. """#),
        "'1e+15' '0.33333333333333' '9.007199254741e+15' '1000000000000000' '12345678901234'"
    );
}

#[test]
fn a_table_used_twice_is_refused_by_json_encode() {
    let shown = show(
        r#"json.encode((function()
             local labels = { app = "web" }
             return { selector = { matchLabels = labels }, template = { metadata = { labels = labels } } }
           end)())"#,
    );
    assert_eq!(
        shown,
        "nil 'json: error calling MarshalJSON for type json.jsonValue: json: error calling MarshalJSON for type json.jsonValue: \
         json: error calling MarshalJSON for type json.jsonValue: json: error calling MarshalJSON for type json.jsonValue: \
         cannot encode recursively nested tables to JSON'"
    );
}

/// So a script that encodes such a table deploys nothing, as under Sveltos.
#[test]
fn a_failed_encode_deploys_nothing() {
    let script = r#"
local json = require("json")
function evaluate()
  local labels = { app = "web" }
  return { resources = json.encode({ a = labels, b = labels }) }
end
"#;
    assert_eq!(run(script, json!({})).unwrap(), "");
}

#[test]
fn a_missing_resources_field_is_no_output_and_no_error() {
    assert_eq!(run("function evaluate() return {} end", json!({})).unwrap(), "");
    assert_eq!(run("function evaluate() return { other = 1 } end", json!({})).unwrap(), "");
}

#[test]
fn an_empty_script_is_no_output_and_is_not_run() {
    assert_eq!(run("", json!({})).unwrap(), "");
}

#[test]
fn the_resources_field_is_matched_case_insensitively_as_go_does() {
    assert_eq!(run(r#"function evaluate() return { Resources = "a" } end"#, json!({})).unwrap(), "a");
    assert_eq!(run(r#"function evaluate() return { RESOURCES = "a", resources = "b" } end"#, json!({})).unwrap(), "b");
}

#[test]
fn other_fields_of_the_returned_table_are_ignored() {
    let script = r#"function evaluate() return { resources = "kind: A", note = function() end, n = 0/0 } end"#;
    assert_eq!(run(script, json!({})).unwrap(), "kind: A");
}

#[test]
fn invalid_utf8_in_the_output_becomes_replacement_characters() {
    assert_eq!(run(r#"function evaluate() return { resources = "a\255\226\130b" } end"#, json!({})).unwrap(), "a\u{FFFD}\u{FFFD}\u{FFFD}b");
}

#[test]
fn extra_return_values_are_ignored() {
    assert_eq!(run(r#"function evaluate() return { resources = "x" }, "y" end"#, json!({})).unwrap(), "x");
}
