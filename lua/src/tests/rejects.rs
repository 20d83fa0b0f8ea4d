//! Every way a script is refused, each with its exact error and where it points.

use std::time::{Duration, Instant};

use serde_json::json;

use super::super::error::Location;
use super::super::{LuaBudget, LuaError};
use super::{SOURCE, run, run_within};

fn at(line: Option<u32>) -> Location {
    SOURCE.at(line)
}

#[test]
fn rejects_a_script_without_evaluate() {
    assert_eq!(run("local x = 1", json!({})), Err(LuaError::NoEvaluate { at: at(None), found: "nil" }));
    assert_eq!(run("evaluate = 'soon'", json!({})), Err(LuaError::NoEvaluate { at: at(None), found: "string" }));
}

#[test]
fn rejects_evaluate_returning_no_table() {
    assert_eq!(run("function evaluate() return 'kind: A' end", json!({})), Err(LuaError::NotATable { at: at(None), found: "string" }));
    assert_eq!(run("function evaluate() end", json!({})), Err(LuaError::NotATable { at: at(None), found: "nil" }));
}

#[test]
fn rejects_evaluate_returning_an_array() {
    assert_eq!(run("function evaluate() return { 'kind: A' } end", json!({})), Err(LuaError::ResultIsArray { at: at(None) }));
}

#[test]
fn rejects_a_resources_field_that_is_a_table() {
    let script = "function evaluate() return { resources = { 'kind: A' } } end";
    let expected = LuaError::ResourcesNotString { at: at(None), field: "resources".into(), found: "table" };
    assert_eq!(run(script, json!({})), Err(expected));
}

#[test]
fn rejects_a_resources_field_that_is_a_number() {
    let script = "function evaluate() return { Resources = 3 } end";
    let expected = LuaError::ResourcesNotString { at: at(None), field: "Resources".into(), found: "number" };
    assert_eq!(run(script, json!({})), Err(expected));
}

#[test]
fn rejects_a_syntax_error_naming_source_and_line() {
    let err = run("function evaluate()\n  return {\nend\n", json!({})).unwrap_err();
    assert_eq!(err, LuaError::Syntax { at: at(Some(3)), message: "unexpected symbol near 'end'".into() });
    assert_eq!(
        err.to_string(),
        r#"lua script profile "web", ConfigMap default/lua, key "lua.yaml", line 3: syntax error: unexpected symbol near 'end'"#
    );
}

#[test]
fn rejects_a_runtime_error_at_its_line() {
    let script =
        "function evaluate()\n  local secret = getResource(resources, 'Missing')\n  return { resources = secret.metadata.name }\nend\n";
    let expected = LuaError::Runtime { at: at(Some(3)), message: "attempt to index local 'secret' (a nil value)".into() };
    assert_eq!(run(script, json!({})), Err(expected));
}

#[test]
fn rejects_an_error_raised_by_the_script() {
    let script = "function evaluate()\n  error('no cluster label')\nend\n";
    assert_eq!(run(script, json!({})), Err(LuaError::Runtime { at: at(Some(2)), message: "no cluster label".into() }));
    let script = "function evaluate()\n\n  error('bare', 0)\nend\n";
    assert_eq!(run(script, json!({})), Err(LuaError::Runtime { at: at(Some(3)), message: "bare".into() }));
}

#[test]
fn rejects_a_helper_misuse_at_the_calling_line() {
    let script = "function evaluate()\n  return { resources = getLabel(nil, 'env') }\nend\n";
    let expected = LuaError::Runtime { at: at(Some(2)), message: "bad argument #1 to getLabel (table expected, got nil)".into() };
    assert_eq!(run(script, json!({})), Err(expected));
}

#[test]
fn rejects_a_top_level_error() {
    assert_eq!(
        run("local x = nil\nx()\n", json!({})),
        Err(LuaError::Runtime { at: at(Some(2)), message: "attempt to call local 'x' (a nil value)".into() })
    );
}

#[test]
fn rejects_a_script_over_its_memory_budget() {
    let budget = LuaBudget { memory_bytes: 4 << 20, ..LuaBudget::DEFAULT };
    let script = "function evaluate()\n  local t = {}\n  for i = 1, 1e7 do t[i] = i end\nend\n";
    assert_eq!(run_within(script, json!({}), &budget), Err(LuaError::MemoryBudget { at: at(None), limit_bytes: 4 << 20 }));
}

/// mlua reads a memory limit of zero as no limit.
#[test]
fn rejects_anything_under_a_zero_memory_budget() {
    let budget = LuaBudget { memory_bytes: 0, ..LuaBudget::DEFAULT };
    assert_eq!(
        run_within("function evaluate() return {} end", json!({}), &budget),
        Err(LuaError::MemoryBudget { at: at(None), limit_bytes: 0 })
    );
}

#[test]
fn rejects_a_helper_result_over_the_memory_budget() {
    let budget = LuaBudget { memory_bytes: 4 << 20, ..LuaBudget::DEFAULT };
    let script = "local strings = require('strings')\nfunction evaluate()\n  return { resources = strings.Repeat('x', 1e12) }\nend\n";
    assert_eq!(run_within(script, json!({}), &budget), Err(LuaError::MemoryBudget { at: at(Some(3)), limit_bytes: 4 << 20 }));
}

#[test]
fn rejects_resources_over_the_memory_budget() {
    let budget = LuaBudget { memory_bytes: 1 << 20, ..LuaBudget::DEFAULT };
    let big = json!({ "data": { "blob": "x".repeat(2 << 20) } });
    let err = run_within("function evaluate() return {} end", json!({ "Big": big }), &budget).unwrap_err();
    assert_eq!(err, LuaError::MemoryBudget { at: at(None), limit_bytes: 1 << 20 });
}

#[test]
fn rejects_an_infinite_loop_well_within_a_second() {
    let started = Instant::now();
    let err = run("function evaluate()\n  while true do end\nend\n", json!({})).unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(900), "took {:?}", started.elapsed());
    assert_eq!(err, LuaError::InstructionBudget { at: at(Some(2)), limit: LuaBudget::DEFAULT.instructions });
    assert!(err.to_string().contains("instruction budget exceeded"), "{err}");
}

#[test]
fn rejects_an_infinite_loop_that_catches_the_budget_error() {
    let script = "function evaluate()\n  while true do\n    pcall(function() while true do end end)\n  end\nend\n";
    let err = run(script, json!({})).unwrap_err();
    assert!(matches!(err, LuaError::InstructionBudget { .. }), "{err}");
    let script =
        "function evaluate()\n  while true do\n    xpcall(function() while true do end end, function(e) return e end)\n  end\nend\n";
    let err = run(script, json!({})).unwrap_err();
    assert!(matches!(err, LuaError::InstructionBudget { .. }), "{err}");
}

#[test]
fn rejects_an_infinite_loop_at_the_top_level() {
    let err = run("while true do end", json!({})).unwrap_err();
    assert_eq!(err, LuaError::InstructionBudget { at: at(Some(1)), limit: LuaBudget::DEFAULT.instructions });
}

#[test]
fn rejects_a_loop_of_slow_library_calls_over_its_time_budget() {
    let budget = LuaBudget { time: Duration::from_millis(200), ..LuaBudget::DEFAULT };
    let started = Instant::now();
    let script = "function evaluate()\n  while true do local s = string.rep('x', 1e5) end\nend\n";
    let err = run_within(script, json!({}), &budget).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert_eq!(err, LuaError::TimeBudget { at: at(Some(2)), limit: Duration::from_millis(200) });
}

#[test]
fn rejects_output_over_its_cap() {
    let budget = LuaBudget { output_bytes: 10, ..LuaBudget::DEFAULT };
    let script = "function evaluate() return { resources = string.rep('x', 11) } end";
    assert_eq!(run_within(script, json!({}), &budget), Err(LuaError::OutputTooLarge { at: at(None), actual_bytes: 11, limit_bytes: 10 }));
}

#[test]
fn rejects_os_and_io() {
    let err = run("function evaluate() return { resources = os.getenv('HOME') } end", json!({})).unwrap_err();
    assert_eq!(err, LuaError::Runtime { at: at(Some(1)), message: "attempt to index global 'os' (a nil value)".into() });
    let err = run("function evaluate() return { resources = io.open('/etc/passwd'):read('*a') } end", json!({})).unwrap_err();
    assert_eq!(err, LuaError::Runtime { at: at(Some(1)), message: "attempt to index global 'io' (a nil value)".into() });
}

#[test]
fn rejects_require_of_any_other_module() {
    for module in ["os", "io", "debug", "package", "socket", "./local"] {
        let err = run(&format!("local m = require({module:?})"), json!({})).unwrap_err();
        let message = format!("module {module:?} not found: Airlock's Lua offers json, strings and runes");
        assert_eq!(err, LuaError::Runtime { at: at(Some(1)), message }, "{module}");
    }
}

#[test]
fn rejects_file_and_code_loading() {
    for function in ["dofile", "loadfile", "load", "loadstring"] {
        let err = run(&format!("{function}('/etc/passwd')"), json!({})).unwrap_err();
        let message = format!("attempt to call global '{function}' (a nil value)");
        assert_eq!(err, LuaError::Runtime { at: at(Some(1)), message }, "{function}");
    }
}

#[test]
fn rejects_recursion_through_a_helper_without_exhausting_the_rust_stack() {
    let script = "local strings = require('strings')\nlocal function f(r) return #strings.Map(f, 'a') end\nfunction evaluate() return { resources = f(1) } end\n";
    assert_eq!(run(script, json!({})), Err(LuaError::Runtime { at: at(Some(2)), message: "C stack overflow".into() }));
}
