//! `require("strings")`: lua-utils' glua-strings, Go's `strings` package under its Go
//! names on Lua's byte strings. Indices are Go's 0-based byte offsets, -1 for none; lists
//! come back as Lua arrays; the `...Func` helpers and `Map` call a Lua function with each
//! rune's number. Each function follows Go's source, invalid bytes included (see
//! [`go_runes`]); case mapping is in [`case`].

use std::collections::BTreeSet;

use memchr::memmem;
use mlua::{Function, Lua, MultiValue, Table, Value};

use super::args::{Args, Helper, register};
use super::budget::Capped;
use super::case;
use super::go_runes::{self, REPLACEMENT};

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let module = lua.create_table()?;
    register(lua, &module, HELPERS)?;
    Ok(module)
}

const HELPERS: &[(&str, Helper)] = &[
    ("Compare", |a| a.ret(a.string(1)?.as_bytes().cmp(&a.string(2)?.as_bytes()) as i64)),
    ("Contains", |a| a.ret(memmem::find(&a.string(1)?.as_bytes(), &a.string(2)?.as_bytes()).is_some())),
    ("ContainsAny", |a| a.ret(index_any(&a.string(1)?.as_bytes(), &a.string(2)?.as_bytes()) >= 0)),
    ("ContainsRune", |a| a.ret(index_rune(&a.string(1)?.as_bytes(), a.rune(2)?) >= 0)),
    ("Count", |a| a.ret(count(&a.string(1)?.as_bytes(), &a.string(2)?.as_bytes()))),
    ("EqualFold", |a| a.ret(equal_fold(&a.string(1)?.as_bytes(), &a.string(2)?.as_bytes()))),
    ("Fields", |a| fields(a, &a.string(1)?.as_bytes(), |r| Ok(r.is_whitespace()))),
    ("FieldsFunc", |a| {
        let function = a.function(2)?;
        fields(a, &a.string(1)?.as_bytes(), |r| call_bool(&function, r))
    }),
    ("HasPrefix", |a| a.ret(a.string(1)?.as_bytes().starts_with(&a.string(2)?.as_bytes()))),
    ("HasSuffix", |a| a.ret(a.string(1)?.as_bytes().ends_with(&a.string(2)?.as_bytes()))),
    ("Index", |a| a.ret(offset(memmem::find(&a.string(1)?.as_bytes(), &a.string(2)?.as_bytes())))),
    ("IndexAny", |a| a.ret(index_any(&a.string(1)?.as_bytes(), &a.string(2)?.as_bytes()))),
    ("IndexByte", |a| {
        let byte = a.int(2)? as u8;
        a.ret(offset(memchr::memchr(byte, &a.string(1)?.as_bytes())))
    }),
    ("IndexFunc", |a| {
        let function = a.function(2)?;
        a.ret(offset(index_func(&a.string(1)?.as_bytes(), |r| call_bool(&function, r), true)?))
    }),
    ("IndexRune", |a| a.ret(index_rune(&a.string(1)?.as_bytes(), a.rune(2)?))),
    ("Join", join),
    ("LastIndex", |a| a.ret(offset(memmem::rfind(&a.string(1)?.as_bytes(), &a.string(2)?.as_bytes())))),
    ("LastIndexAny", |a| a.ret(last_index_any(&a.string(1)?.as_bytes(), &a.string(2)?.as_bytes()))),
    ("LastIndexByte", |a| {
        let byte = a.int(2)? as u8;
        a.ret(offset(memchr::memrchr(byte, &a.string(1)?.as_bytes())))
    }),
    ("LastIndexFunc", |a| {
        let function = a.function(2)?;
        a.ret(offset(last_index_func(&a.string(1)?.as_bytes(), |r| call_bool(&function, r), true)?))
    }),
    ("Map", |a| {
        let function = a.function(1)?;
        let mapped = map(a.lua, &a.string(2)?.as_bytes(), |r| call_rune(&function, r))?;
        a.ret(mapped)
    }),
    ("Repeat", repeat),
    ("Replace", replace),
    ("Split", |a| split(a, 0)),
    ("SplitAfter", |a| split(a, 1)),
    ("SplitAfterN", |a| split_n(a, 1)),
    ("SplitN", |a| split_n(a, 0)),
    ("Title", |a| {
        let mut previous = ' ';
        let titled = map(a.lua, &a.string(1)?.as_bytes(), |r| {
            let out = if case::is_title_separator(previous) { case::title(r) } else { r };
            previous = r;
            Ok(out as i32)
        })?;
        a.ret(titled)
    }),
    ("ToLower", |a| a.ret(map(a.lua, &a.string(1)?.as_bytes(), |r| Ok(case::lower(r) as i32))?)),
    ("ToTitle", |a| a.ret(map(a.lua, &a.string(1)?.as_bytes(), |r| Ok(case::title(r) as i32))?)),
    ("ToUpper", |a| a.ret(map(a.lua, &a.string(1)?.as_bytes(), |r| Ok(case::upper(r) as i32))?)),
    ("Trim", |a| {
        let (s, cutset) = (a.string(1)?, a.string(2)?);
        let (s, set) = (s.as_bytes(), rune_set(&cutset.as_bytes()));
        a.ret(a.lua.create_string(trim_left(trim_right(&s, &set), &set))?)
    }),
    ("TrimFunc", |a| {
        let function = a.function(2)?;
        let s = a.string(1)?;
        let s = s.as_bytes();
        let left = trim_left_func(&s, |r| call_bool(&function, r))?;
        a.ret(a.lua.create_string(trim_right_func(left, |r| call_bool(&function, r))?)?)
    }),
    ("TrimLeft", |a| {
        let (s, cutset) = (a.string(1)?, a.string(2)?);
        a.ret(a.lua.create_string(trim_left(&s.as_bytes(), &rune_set(&cutset.as_bytes())))?)
    }),
    ("TrimLeftFunc", |a| {
        let function = a.function(2)?;
        a.ret(a.lua.create_string(trim_left_func(&a.string(1)?.as_bytes(), |r| call_bool(&function, r))?)?)
    }),
    ("TrimPrefix", |a| {
        let (s, prefix) = (a.string(1)?, a.string(2)?);
        let (s, prefix) = (s.as_bytes(), prefix.as_bytes());
        a.ret(a.lua.create_string(s.strip_prefix(&prefix[..]).unwrap_or(&s))?)
    }),
    ("TrimRight", |a| {
        let (s, cutset) = (a.string(1)?, a.string(2)?);
        a.ret(a.lua.create_string(trim_right(&s.as_bytes(), &rune_set(&cutset.as_bytes())))?)
    }),
    ("TrimRightFunc", |a| {
        let function = a.function(2)?;
        a.ret(a.lua.create_string(trim_right_func(&a.string(1)?.as_bytes(), |r| call_bool(&function, r))?)?)
    }),
    ("TrimSpace", |a| {
        let s = a.string(1)?;
        let s = s.as_bytes();
        let left = trim_left_func(&s, |r| Ok(r.is_whitespace()))?;
        a.ret(a.lua.create_string(trim_right_func(left, |r| Ok(r.is_whitespace()))?)?)
    }),
    ("TrimSuffix", |a| {
        let (s, suffix) = (a.string(1)?, a.string(2)?);
        let (s, suffix) = (s.as_bytes(), suffix.as_bytes());
        a.ret(a.lua.create_string(s.strip_suffix(&suffix[..]).unwrap_or(&s))?)
    }),
];

/// Go's index of an optional position: -1 for none.
fn offset(found: Option<usize>) -> i64 {
    found.map_or(-1, |at| at as i64)
}

fn call_bool(function: &Function, r: char) -> mlua::Result<bool> {
    match function.call::<Value>(u32::from(r))? {
        Value::Boolean(b) => Ok(b),
        other => Err(mlua::Error::runtime(format!("callback returned {}, not a boolean", super::args::type_name(&other)))),
    }
}

fn call_rune(function: &Function, r: char) -> mlua::Result<i32> {
    match super::args::number(&function.call::<Value>(u32::from(r))?) {
        Some(n) => Ok(n as i64 as i32),
        None => Err(mlua::Error::runtime("callback returned no number")),
    }
}

fn count(s: &[u8], sub: &[u8]) -> usize {
    if sub.is_empty() { go_runes::count(s) + 1 } else { memmem::find_iter(s, sub).count() }
}

/// The runes of `chars`, each invalid byte read as U+FFFD, which is how Go's
/// `IndexRune(chars, r)` matches a rune of `s` against them.
fn rune_set(chars: &[u8]) -> BTreeSet<char> {
    go_runes::runes(chars).map(|(_, r, _)| r).collect()
}

fn index_any(s: &[u8], chars: &[u8]) -> i64 {
    let set = rune_set(chars);
    offset(go_runes::runes(s).find(|(_, r, _)| set.contains(r)).map(|(at, _, _)| at))
}

fn last_index_any(s: &[u8], chars: &[u8]) -> i64 {
    let set = rune_set(chars);
    offset(last_index_func(s, |r| Ok(set.contains(&r)), true).unwrap_or(None))
}

fn index_rune(s: &[u8], r: i32) -> i64 {
    match go_runes::scalar(r) {
        Some(REPLACEMENT) => offset(go_runes::runes(s).find(|&(_, rune, _)| rune == REPLACEMENT).map(|(at, _, _)| at)),
        Some(rune) => offset(memmem::find(s, rune.encode_utf8(&mut [0; 4]).as_bytes())),
        None => -1,
    }
}

fn index_func(s: &[u8], mut f: impl FnMut(char) -> mlua::Result<bool>, truth: bool) -> mlua::Result<Option<usize>> {
    for (at, r, _) in go_runes::runes(s) {
        if f(r)? == truth {
            return Ok(Some(at));
        }
    }
    Ok(None)
}

fn last_index_func(s: &[u8], mut f: impl FnMut(char) -> mlua::Result<bool>, truth: bool) -> mlua::Result<Option<usize>> {
    let mut end = s.len();
    while end > 0 {
        let (r, width) = go_runes::decode_last(&s[..end]);
        end -= width;
        if f(r)? == truth {
            return Ok(Some(end));
        }
    }
    Ok(None)
}

fn equal_fold(s: &[u8], t: &[u8]) -> bool {
    let mut left = go_runes::runes(s).map(|(_, r, _)| case::fold(r));
    let mut right = go_runes::runes(t).map(|(_, r, _)| case::fold(r));
    loop {
        match (left.next(), right.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

/// Go's `strings.Map`: a negative mapping drops the rune; an unchanged valid rune keeps
/// its bytes, an invalid byte becomes the encoding of what it maps to.
fn map(lua: &Lua, s: &[u8], mut f: impl FnMut(char) -> mlua::Result<i32>) -> mlua::Result<mlua::LuaString> {
    let mut out = Capped::new(lua);
    for (at, r, width) in go_runes::runes(s) {
        let mapped = f(r)?;
        let valid = r != REPLACEMENT || width != 1;
        if valid && mapped == r as i32 {
            out.push(&s[at..at + width])?;
        } else if mapped >= 0 {
            out.push_rune(mapped)?;
        }
    }
    out.into_lua(lua)
}

/// Go's `FieldsFunc`: the runs of runes for which `is_separator` is false.
fn fields(a: &Args<'_>, s: &[u8], mut is_separator: impl FnMut(char) -> mlua::Result<bool>) -> mlua::Result<MultiValue> {
    let list = a.lua.create_table()?;
    let mut start = None;
    for (at, r, _) in go_runes::runes(s) {
        match (is_separator(r)?, start) {
            (true, Some(from)) => {
                list.raw_push(a.lua.create_string(&s[from..at])?)?;
                start = None;
            }
            (false, None) => start = Some(at),
            _ => {}
        }
    }
    if let Some(from) = start {
        list.raw_push(a.lua.create_string(&s[from..])?)?;
    }
    a.ret(list)
}

fn join(a: &Args<'_>) -> mlua::Result<MultiValue> {
    let (table, separator) = (a.table(1)?, a.string(2)?);
    let mut out = Capped::new(a.lua);
    let mut first = true;
    for pair in table.pairs::<Value, Value>() {
        if let (_, Value::String(part)) = pair? {
            if !first {
                out.push(&separator.as_bytes())?;
            }
            first = false;
            out.push(&part.as_bytes())?;
        }
    }
    a.ret(out.into_lua(a.lua)?)
}

fn repeat(a: &Args<'_>) -> mlua::Result<MultiValue> {
    let (s, n) = (a.string(1)?, a.int(2)?);
    let s = s.as_bytes();
    let Ok(n) = usize::try_from(n) else { return Err(mlua::Error::runtime("strings: negative Repeat count")) };
    let mut out = Capped::new(a.lua);
    out.reserve(s.len().checked_mul(n).ok_or_else(super::budget::out_of_memory)?)?;
    if !s.is_empty() {
        for _ in 0..n {
            out.push(&s)?;
        }
    }
    a.ret(out.into_lua(a.lua)?)
}

/// Go's `strings.Replace(s, old, new, n)`; an empty `old` matches before every rune.
fn replace(a: &Args<'_>) -> mlua::Result<MultiValue> {
    let (s, old, new, n) = (a.string(1)?, a.string(2)?, a.string(3)?, a.int(4)?);
    let (s, old, new) = (s.as_bytes(), old.as_bytes(), new.as_bytes());
    let matches = count(&s, &old);
    if *old == *new || n == 0 || matches == 0 {
        return a.ret(a.lua.create_string(&s)?);
    }
    let n = usize::try_from(n).map_or(matches, |n| n.min(matches));
    let mut out = Capped::new(a.lua);
    let mut start = 0;
    for i in 0..n {
        let mut at = start;
        if old.is_empty() {
            if i > 0 {
                at += go_runes::decode(&s[start..]).1;
            }
        } else {
            at += memmem::find(&s[start..], &old).unwrap_or(0);
        }
        out.push(&s[start..at])?;
        out.push(&new)?;
        start = at + old.len();
    }
    out.push(&s[start..])?;
    a.ret(out.into_lua(a.lua)?)
}

fn split(a: &Args<'_>, save: usize) -> mlua::Result<MultiValue> {
    let (s, separator) = (a.string(1)?, a.string(2)?);
    a.ret(generic_split(a.lua, &s.as_bytes(), &separator.as_bytes(), save, -1)?)
}

/// `SplitN` and `SplitAfterN`, which lua-utils answer with `nil` for `n == 0`.
fn split_n(a: &Args<'_>, save: usize) -> mlua::Result<MultiValue> {
    let (s, separator, n) = (a.string(1)?, a.string(2)?, a.int(3)?);
    if n == 0 {
        return a.ret(Value::Nil);
    }
    a.ret(generic_split(a.lua, &s.as_bytes(), &separator.as_bytes(), save, n)?)
}

/// Go's `genSplit`: at most `n` pieces (all for a negative `n`), each keeping `save`
/// times the separator's length of it. An empty separator splits into runes.
fn generic_split(lua: &Lua, mut s: &[u8], separator: &[u8], save: usize, n: i64) -> mlua::Result<Table> {
    let list = lua.create_table()?;
    let pieces = if separator.is_empty() { go_runes::count(s) } else { count(s, separator) + 1 };
    let n = usize::try_from(n).map_or(pieces, |n| n.min(pieces));
    for _ in 1..n {
        let (end, skip) = if separator.is_empty() {
            let width = go_runes::decode(s).1;
            (width, width)
        } else {
            match memmem::find(s, separator) {
                Some(at) => (at + save * separator.len(), at + separator.len()),
                None => break,
            }
        };
        list.raw_push(lua.create_string(&s[..end])?)?;
        s = &s[skip..];
    }
    if n > 0 {
        list.raw_push(lua.create_string(s)?)?;
    }
    Ok(list)
}

fn trim_left<'s>(mut s: &'s [u8], set: &BTreeSet<char>) -> &'s [u8] {
    while !s.is_empty() {
        let (r, width) = go_runes::decode(s);
        if !set.contains(&r) {
            break;
        }
        s = &s[width..];
    }
    s
}

fn trim_right<'s>(mut s: &'s [u8], set: &BTreeSet<char>) -> &'s [u8] {
    while !s.is_empty() {
        let (r, width) = go_runes::decode_last(s);
        if !set.contains(&r) {
            break;
        }
        s = &s[..s.len() - width];
    }
    s
}

fn trim_left_func(s: &[u8], f: impl FnMut(char) -> mlua::Result<bool>) -> mlua::Result<&[u8]> {
    Ok(index_func(s, f, false)?.map_or(&s[s.len()..], |at| &s[at..]))
}

/// Go's `TrimRightFunc`, which measures the last kept rune forwards.
fn trim_right_func(s: &[u8], f: impl FnMut(char) -> mlua::Result<bool>) -> mlua::Result<&[u8]> {
    Ok(match last_index_func(s, f, false)? {
        Some(at) if s[at] >= 0x80 => &s[..at + go_runes::decode(&s[at..]).1],
        Some(at) => &s[..at + 1],
        None => &s[..0],
    })
}
