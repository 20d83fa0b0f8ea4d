//! `require("json")`: lua-utils' glua-json, its own tests' cases and Go's `encoding/json`
//! details.

use super::super::LuaError;
use super::{show, show_err};

const PREFIX: &str = "json: error calling MarshalJSON for type json.jsonValue: ";

#[test]
fn encodes_values_as_lua_utils_tests_expect() {
    assert_eq!(
        show(r#"json.encode(true), json.encode(1), json.encode(-10), json.encode(nil), json.encode({}), json.encode({1, 2, 3})"#),
        "'true' '1' '-10' 'null' '[]' '[1,2,3]'"
    );
    assert_eq!(
        show(r#"json.encode({name = "test", value = 42}), json.encode("hello"), json.encode(3.14)"#),
        r#"'{"name":"test","value":42}' '"hello"' '3.14'"#
    );
}

#[test]
fn encodes_objects_with_sorted_keys() {
    assert_eq!(show(r#"json.encode({b = 1, a = {d = 2, c = {true, false}}})"#), r#"'{"a":{"c":[true,false],"d":2},"b":1}'"#);
}

#[test]
fn encodes_an_array_whatever_order_it_was_filled_in() {
    assert_eq!(show(r#"json.encode((function() local t = {} t[3] = "c" t[2] = "b" t[1] = "a" return t end)())"#), r#"'["a","b","c"]'"#);
}

#[test]
fn escapes_strings_as_go_does() {
    assert_eq!(show(r#"json.encode("<a & b>\n\"q\"\1\t\b\f\\")"#), r#"'"\u003ca \u0026 b\u003e\n\"q\"\u0001\t\b\f\\"'"#);
    assert_eq!(
        show(r#"json.encode("\226\128\168\226\128\169"), json.encode("a\255"), json.encode("é\127")"#),
        "'\"\\u2028\\u2029\"' '\"a\\ufffd\"' '\"é\u{7f}\"'"
    );
}

#[test]
fn refuses_what_gopher_json_refuses() {
    assert_eq!(show(r#"json.encode({1, 2, [10] = 3})"#), format!("nil '{PREFIX}cannot encode sparse array'"));
    assert_eq!(show(r#"json.encode({1, 2, 3, name = "Tim"})"#), format!("nil '{PREFIX}cannot encode mixed or invalid key types'"));
    assert_eq!(show(r#"json.encode({name = "Tim", [false] = 123})"#), format!("nil '{PREFIX}cannot encode mixed or invalid key types'"));
    assert_eq!(show(r#"json.encode({f = print})"#), format!("nil '{PREFIX}{PREFIX}cannot encode function to JSON'"));
    assert_eq!(show(r#"json.encode(0/0)"#), format!("nil '{PREFIX}json: unsupported value: NaN'"));
    assert_eq!(show(r#"json.encode({-1/0})"#), format!("nil '{PREFIX}{PREFIX}json: unsupported value: -Inf'"));
    assert_eq!(
        show(r#"(function() local t = {} t.self = t return json.encode(t) end)()"#),
        format!("nil '{PREFIX}{PREFIX}cannot encode recursively nested tables to JSON'")
    );
}

#[test]
fn decodes_into_lua_values() {
    let shown = show(
        r#"(function()
        local v = json.decode('{"a": [1, null, 2], "b": {"c": "d"}, "e": null, "f": 1.5e3}')
        return v.a, v.b.c, v.e, v.f
      end)()"#,
    );
    assert_eq!(shown, "{1,2} 'd' nil 1500");
    assert_eq!(show(r#"json.decode("null"), json.decode("[]"), json.decode(" true "), json.decode('"a\\u00e9"')"#), "nil {} true 'aé'");
    assert_eq!(show(r#"json.encode(json.decode('{"n": 12345, "s": [{}]}'))"#), r#"'{"n":12345,"s":[[]]}'"#);
    assert_eq!(show(r#"#json.decode('"a\255"')"#), "4");
}

#[test]
fn decode_failures_answer_nil_and_a_message() {
    assert_eq!(show(r#"json.decode("{invalid}")"#), "nil 'key must be a string at line 1 column 2'");
    assert_eq!(show(r#"json.decode("1 2")"#), "nil 'trailing characters at line 1 column 3'");
    assert_eq!(show(r#"json.decode("")"#), "nil 'EOF while parsing a value at line 1 column 0'");
}

#[test]
fn encode_needs_an_argument() {
    assert!(
        matches!(show_err("json.encode()"), LuaError::Runtime { message, .. } if message == "bad argument #1 to encode (value expected)")
    );
}

/// A Lua value held on the Rust side takes a slot of a stack Lua 5.1 caps at a few
/// thousand; the encoder holds keys, not values.
#[test]
fn encodes_tables_with_more_entries_than_lua_s_c_stack() {
    assert_eq!(show("#json.encode((function() local t = {} for i = 1, 50000 do t[i] = {i} end return t end)())"), "388895");
    assert_eq!(show("#json.encode((function() local t = {} for i = 1, 20000 do t['k' .. i] = 'v' end return t end)())"), "248895");
}

#[test]
fn refuses_tables_nested_deeper_than_its_limit() {
    let nested =
        |depth: u32| format!("(function() local t = {{}} local c = t for i = 1, {depth} do c.x = {{}} c = c.x end return t end)()");
    assert_eq!(show(&format!("#json.encode({})", nested(199))), "1196");
    let shown = show(&format!("select(2, json.encode({})):match('[^:]*$')", nested(1_000)));
    assert_eq!(shown, "' cannot encode tables nested deeper than 200'");
}
