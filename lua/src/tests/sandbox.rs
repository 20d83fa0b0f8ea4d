//! What the sandbox leaves of Lua 5.1's libraries, and what it takes away.

use super::show;

#[test]
fn the_outside_world_is_gone() {
    assert_eq!(
        show("os, io, debug, package, dofile, loadfile, load, loadstring, coroutine, newproxy, module"),
        "nil nil nil nil nil nil nil nil nil nil nil"
    );
}

#[test]
fn randomness_is_gone_and_the_rest_of_math_stays() {
    assert_eq!(show("math.random, math.randomseed, math.floor(2.5), math.max(1, 3), math.huge"), "nil nil 2 3 inf");
}

#[test]
fn lua_5_1_base_string_and_table_functions_are_there() {
    assert_eq!(
        show(r#"_VERSION, type(setfenv), select('#', 1, 2, 3), ("x"):rep(3), string.format("%05.1f", 3.14159), unpack({1, 2})"#),
        "'Lua 5.1' 'function' 3 'xxx' '003.1' 1 2"
    );
    assert_eq!(show(r#"table.concat({"a", "b"}, "-"), #"abc", string.gsub("hello", "l", "L")"#), "'a-b' 3 'heLLo' 2");
}

#[test]
fn pcall_and_xpcall_still_catch_ordinary_errors() {
    assert_eq!(show("pcall(error, 'boom', 0)"), "false 'boom'");
    assert_eq!(show("pcall(function(a, b) return a + b end, 1, 2)"), "true 3");
    assert_eq!(show("xpcall(function() error({code = 7}) end, function(e) return e.code end)"), "false 7");
    assert_eq!(show("pcall(nil)"), "false 'attempt to call a nil value'");
}

#[test]
fn print_does_not_affect_the_output() {
    assert_eq!(show(r#"print("to the log", 1, nil)"#), "");
}

#[test]
fn require_returns_the_same_module_each_time() {
    assert_eq!(show(r#"rawequal(require("json"), require("json")), type(require("strings").Split)"#), "true 'function'");
}

/// Lua 5.1's `pcall` pushes its status without checking the stack, which the API checks
/// of a debug build of Lua refuse by aborting the process.
#[test]
fn pcall_returns_many_results() {
    assert_eq!(show("select('#', pcall(unpack, (function() local t = {} for i = 1, 100 do t[i] = i end return t end)()))"), "101");
    let shown = show("select('#', (function() local f; f = function() return pcall(f) end; return f() end)())");
    assert!(shown.parse::<u32>().is_ok_and(|results| results > 150), "{shown}");
}
