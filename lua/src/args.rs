//! Arguments of the helper functions, checked as gopher-lua's `CheckString`, `CheckInt`,
//! `CheckTable`, ... check them: a helper fails or coerces where Sveltos's does, with a
//! message in gopher-lua's words that names the function and the argument.

use mlua::{Function, IntoLuaMulti, Lua, MultiValue, Table, Value};

/// A helper: its arguments in, its results out.
pub(super) type Helper = fn(&Args<'_>) -> mlua::Result<MultiValue>;

/// Sets each helper as a field of `table`.
pub(super) fn register(lua: &Lua, table: &Table, helpers: &[(&'static str, Helper)]) -> mlua::Result<()> {
    for &(name, helper) in helpers {
        let function = lua.create_function(move |lua, values: MultiValue| helper(&Args { lua, name, values }))?;
        table.raw_set(name, function)?;
    }
    Ok(())
}

pub(super) struct Args<'a> {
    pub(super) lua: &'a Lua,
    name: &'static str,
    values: MultiValue,
}

impl Args<'_> {
    /// How many arguments were passed, explicit trailing `nil`s included (`GetTop`).
    pub(super) fn count(&self) -> usize {
        self.values.len()
    }

    /// Argument `n` (1-based), `nil` when absent.
    pub(super) fn value(&self, n: usize) -> Value {
        self.values.get(n - 1).cloned().unwrap_or(Value::Nil)
    }

    /// A string; a number is converted, as Lua converts it.
    pub(super) fn string(&self, n: usize) -> mlua::Result<mlua::LuaString> {
        match self.value(n) {
            Value::String(s) => Ok(s),
            number @ (Value::Integer(_) | Value::Number(_)) => match self.lua.coerce_string(number)? {
                Some(s) => Ok(s),
                None => Err(self.type_error(n, "string")),
            },
            _ => Err(self.type_error(n, "string")),
        }
    }

    /// A number, truncated toward zero as Go's `int(float64)` does.
    pub(super) fn int(&self, n: usize) -> mlua::Result<i64> {
        match self.value(n) {
            Value::Integer(i) => Ok(i),
            Value::Number(f) => Ok(f as i64),
            _ => Err(self.type_error(n, "number")),
        }
    }

    /// A number as Go's `rune(L.CheckInt(n))`: truncated, then wrapped to 32 bits.
    pub(super) fn rune(&self, n: usize) -> mlua::Result<i32> {
        self.int(n).map(|i| i as i32)
    }

    /// [`int`](Args::int), or `default` for `nil` or an absent argument.
    pub(super) fn opt_int(&self, n: usize, default: i64) -> mlua::Result<i64> {
        match self.value(n) {
            Value::Nil => Ok(default),
            _ => self.int(n),
        }
    }

    pub(super) fn table(&self, n: usize) -> mlua::Result<Table> {
        match self.value(n) {
            Value::Table(table) => Ok(table),
            _ => Err(self.type_error(n, "table")),
        }
    }

    pub(super) fn function(&self, n: usize) -> mlua::Result<Function> {
        match self.value(n) {
            Value::Function(function) => Ok(function),
            _ => Err(self.type_error(n, "function")),
        }
    }

    /// Any value, `nil` included, but the argument must be there (`CheckAny`).
    pub(super) fn any(&self, n: usize) -> mlua::Result<Value> {
        if n > self.count() {
            return Err(mlua::Error::runtime(format!("bad argument #{n} to {} (value expected)", self.name)));
        }
        Ok(self.value(n))
    }

    /// The helper's results.
    pub(super) fn ret(&self, values: impl IntoLuaMulti) -> mlua::Result<MultiValue> {
        values.into_lua_multi(self.lua)
    }

    fn type_error(&self, n: usize, expected: &str) -> mlua::Error {
        let got = type_name(&self.value(n));
        mlua::Error::runtime(format!("bad argument #{n} to {} ({expected} expected, got {got})", self.name))
    }
}

/// The name Lua's `type()` gives a value.
pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// A Lua number as `f64`, if `value` is one.
pub(super) fn number(value: &Value) -> Option<f64> {
    match *value {
        Value::Integer(i) => Some(i as f64),
        Value::Number(f) => Some(f),
        _ => None,
    }
}
