//! `require("runes")`: lua-utils' glua-runes, rune-level helpers under lowercase names.
//! Runes are numbers (Go's `int32`); positions are 1-based, except that `runeat` counts
//! bytes and `runerange`'s end is exclusive, both as lua-utils has them. The `is...`
//! predicates are Go's `unicode` ones, by general category.

use mlua::{Lua, MultiValue, Table, Value};
use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};

use super::args::{Args, Helper, number, register};
use super::budget::Capped;
use super::case;
use super::go_runes::{self, REPLACEMENT};

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let module = lua.create_table()?;
    register(lua, &module, HELPERS)?;
    Ok(module)
}

const HELPERS: &[(&str, Helper)] = &[
    ("bytestorune", |a| {
        let bytes = table_bytes(&a.table(1)?)?;
        match bytes.first().map(|_| go_runes::decode(&bytes)) {
            Some((r, _)) if r != REPLACEMENT => a.ret(u32::from(r)),
            _ => a.ret(Value::Nil),
        }
    }),
    ("bytetostring", |a| a.ret(a.lua.create_string(table_bytes(&a.table(1)?)?)?)),
    ("containsrune", |a| {
        let (s, r) = (a.string(1)?, a.rune(2)?);
        a.ret(go_runes::runes(&s.as_bytes()).any(|(_, rune, _)| rune as i32 == r))
    }),
    ("iscontrol", |a| predicate(a, char::is_control)),
    ("isdigit", |a| predicate(a, case::is_digit)),
    ("isgraphic", |a| predicate(a, |r| is_print(r) || r.general_category() == GeneralCategory::SpaceSeparator)),
    ("isinrange", |a| {
        let (r, low, high) = (a.rune(1)?, a.rune(2)?, a.rune(3)?);
        a.ret(low <= r && r <= high)
    }),
    ("isletter", |a| predicate(a, |r| r.general_category_group() == GeneralCategoryGroup::Letter)),
    ("islower", |a| predicate(a, |r| r.general_category() == GeneralCategory::LowercaseLetter)),
    ("ismark", |a| predicate(a, |r| r.general_category_group() == GeneralCategoryGroup::Mark)),
    ("isnumber", |a| predicate(a, |r| r.general_category_group() == GeneralCategoryGroup::Number)),
    ("isprint", |a| predicate(a, |r| r == ' ' || is_print(r))),
    ("ispunct", |a| predicate(a, |r| r.general_category_group() == GeneralCategoryGroup::Punctuation)),
    ("isspace", |a| predicate(a, char::is_whitespace)),
    ("issymbol", |a| predicate(a, |r| r.general_category_group() == GeneralCategoryGroup::Symbol)),
    ("istitle", |a| predicate(a, |r| r.general_category() == GeneralCategory::TitlecaseLetter)),
    ("isupper", |a| predicate(a, |r| r.general_category() == GeneralCategory::UppercaseLetter)),
    ("isvalidutf8", |a| a.ret(std::str::from_utf8(&a.string(1)?.as_bytes()).is_ok())),
    ("reverserunes", |a| {
        let s = a.string(1)?;
        let runes: Vec<char> = go_runes::runes(&s.as_bytes()).map(|(_, r, _)| r).collect();
        a.ret(encode(a.lua, runes.into_iter().rev().map(|r| r as i32))?)
    }),
    ("runeat", |a| {
        let (s, position) = (a.string(1)?, a.int(2)?);
        let s = s.as_bytes();
        let found = usize::try_from(position - 1).ok().filter(|&at| at < s.len()).map(|at| go_runes::decode(&s[at..]).0);
        match found {
            Some(r) if r != REPLACEMENT => a.ret(u32::from(r)),
            _ => a.ret(Value::Nil),
        }
    }),
    ("runecount", |a| a.ret(go_runes::count(&a.string(1)?.as_bytes()))),
    ("runeindex", |a| {
        let (s, r, start) = (a.string(1)?, a.rune(2)?, a.opt_int(3, 1)?);
        let skip = usize::try_from(start - 1).unwrap_or(0);
        let found = go_runes::runes(&s.as_bytes()).enumerate().skip(skip).find(|&(_, (_, rune, _))| rune as i32 == r);
        match found {
            Some((index, _)) => a.ret(index + 1),
            None => a.ret(Value::Nil),
        }
    }),
    ("runerange", rune_range),
    ("runeslice", |a| {
        let (s, list) = (a.string(1)?, a.lua.create_table()?);
        for (_, r, _) in go_runes::runes(&s.as_bytes()) {
            list.raw_push(u32::from(r))?;
        }
        a.ret(list)
    }),
    ("runesplit", |a| {
        let (s, separator) = (a.string(1)?, a.rune(2)?);
        let (s, list) = (s.as_bytes(), a.lua.create_table()?);
        let mut start = 0;
        for (at, r, width) in go_runes::runes(&s) {
            if r as i32 == separator {
                list.raw_push(encode(a.lua, go_runes::runes(&s[start..at]).map(|(_, r, _)| r as i32))?)?;
                start = at + width;
            }
        }
        list.raw_push(encode(a.lua, go_runes::runes(&s[start..]).map(|(_, r, _)| r as i32))?)?;
        a.ret(list)
    }),
    ("runestring", |a| {
        let runes = (1..=a.count()).map(|n| a.rune(n)).collect::<mlua::Result<Vec<i32>>>()?;
        a.ret(encode(a.lua, runes)?)
    }),
    ("runetobytes", |a| {
        let mut bytes = Vec::new();
        for n in table_numbers(&a.table(1)?)? {
            go_runes::push_rune(&mut bytes, n as i64 as i32);
        }
        let list = a.lua.create_table()?;
        for byte in bytes {
            list.raw_push(byte)?;
        }
        a.ret(list)
    }),
    ("runewidth", |a| match go_runes::scalar(a.rune(1)?) {
        Some(r) => a.ret(r.len_utf8()),
        None => a.ret(Value::Nil),
    }),
    ("stringtobytes", |a| {
        let (s, list) = (a.string(1)?, a.lua.create_table()?);
        for &byte in s.as_bytes().iter() {
            list.raw_push(byte)?;
        }
        a.ret(list)
    }),
    ("tolower", |a| map_rune(a, case::lower)),
    ("totitle", |a| map_rune(a, case::title)),
    ("toupper", |a| map_rune(a, case::upper)),
    ("validrune", |a| a.ret(go_runes::scalar(a.rune(1)?).is_some())),
];

/// A Go `unicode.IsX(rune(n))`: false for a number that is no Unicode scalar value.
fn predicate(a: &Args<'_>, test: impl Fn(char) -> bool) -> mlua::Result<MultiValue> {
    a.ret(go_runes::scalar(a.rune(1)?).is_some_and(test))
}

/// Go's `unicode.ToX(rune(n))`, which returns a number that is no rune unchanged.
fn map_rune(a: &Args<'_>, map: impl Fn(char) -> char) -> mlua::Result<MultiValue> {
    let r = a.rune(1)?;
    a.ret(go_runes::scalar(r).map_or(r, |rune| u32::from(map(rune)) as i32))
}

/// Letters, marks, numbers, punctuation and symbols: Go's `IsPrint` without the space.
fn is_print(r: char) -> bool {
    use GeneralCategoryGroup::{Letter, Mark, Number, Punctuation, Symbol};
    matches!(r.general_category_group(), Letter | Mark | Number | Punctuation | Symbol)
}

/// The numbers among `table`'s values in `next` order, as gopher-lua's `ForEach` visits
/// them; the other values are skipped.
fn table_numbers(table: &Table) -> mlua::Result<Vec<f64>> {
    let mut numbers = Vec::new();
    table.for_each(|_: Value, value: Value| {
        numbers.extend(number(&value));
        Ok(())
    })?;
    Ok(numbers)
}

/// [`table_numbers`] as bytes, as Go's `byte(float64)` truncates them.
fn table_bytes(table: &Table) -> mlua::Result<Vec<u8>> {
    Ok(table_numbers(table)?.into_iter().map(|n| n as i64 as u8).collect())
}

/// Go's `string([]rune)`.
fn encode(lua: &Lua, runes: impl IntoIterator<Item = i32>) -> mlua::Result<mlua::LuaString> {
    let mut out = Capped::new(lua);
    for r in runes {
        out.push_rune(r)?;
    }
    out.into_lua(lua)
}

/// `runerange(s, start, end)`: runes `start` up to but not including `end`, both 1-based,
/// a negative `end` meaning the end of the string. Where lua-utils' slice expression
/// would panic (start past end) the call fails.
fn rune_range(a: &Args<'_>) -> mlua::Result<MultiValue> {
    let (s, start, end) = (a.string(1)?, a.opt_int(2, 1)?, a.opt_int(3, -1)?);
    let runes: Vec<char> = go_runes::runes(&s.as_bytes()).map(|(_, r, _)| r).collect();
    let length = runes.len() as i64;
    let start = (start - 1).clamp(0, length);
    let end = if end < 0 { length } else { (end - 1).clamp(0, length) };
    if start > end {
        return Err(mlua::Error::runtime(format!("runerange: slice bounds out of range [{start}:{end}]")));
    }
    a.ret(encode(a.lua, runes[start as usize..end as usize].iter().map(|&r| r as i32))?)
}
