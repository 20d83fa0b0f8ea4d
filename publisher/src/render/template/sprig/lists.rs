//! Sprig's list functions (`list`, `first`, `rest`, `last`, `initial`, `append`,
//! `prepend`, `concat`, `reverse`, `uniq`, `without`, `has`, `slice`, `chunk`,
//! `compact`, and their `must*` twins, which behave the same here: a wrong argument fails
//! the render, as the plain ones do in Go by panicking).
//!
//! Lists are values: `append $l 1` returns a new list and leaves `$l` as it was, which is
//! also what Sprig does for lists.

use std::collections::HashSet;

use gotmpl::Value;

use super::args::{Call, Func, count_at, failure, list_at, table, want, want_at_least};
use super::cast::{is_empty, to_int64};
use super::reflect::{deep_equal_within, identity};
use crate::render::template::bounds;

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["list", "tuple"], |a| Ok(Value::List(a.into()))),
        (&["first", "mustFirst"], |a| Ok(of_list("first", a)?.first().cloned().unwrap_or(Value::Nil))),
        (&["last", "mustLast"], |a| Ok(of_list("last", a)?.last().cloned().unwrap_or(Value::Nil))),
        (&["rest", "mustRest"], |a| Ok(Value::List(of_list("rest", a)?.get(1..).unwrap_or_default().into()))),
        (&["initial", "mustInitial"], |a| {
            let items = of_list("initial", a)?;
            Ok(Value::List(items[..items.len().saturating_sub(1)].into()))
        }),
        (&["append", "push", "mustAppend", "mustPush"], |a| {
            want("append", a, 2)?;
            let items = list_at("append", a, 0)?;
            bounds::check_items("append", items.len() + 1)?;
            Ok(Value::List(items.iter().chain([&a[1]]).cloned().collect()))
        }),
        (&["prepend", "mustPrepend"], |a| {
            want("prepend", a, 2)?;
            let items = list_at("prepend", a, 0)?;
            bounds::check_items("prepend", items.len() + 1)?;
            Ok(Value::List([&a[1]].into_iter().chain(items).cloned().collect()))
        }),
        (&["concat"], |a| {
            let lists: Vec<&[Value]> = (0..a.len()).map(|i| list_at("concat", a, i)).collect::<Result<_, _>>()?;
            bounds::check_items("concat", lists.iter().map(|l| l.len()).sum())?;
            Ok(Value::List(lists.concat().into()))
        }),
        (&["reverse", "mustReverse"], |a| Ok(Value::List(of_list("reverse", a)?.iter().rev().cloned().collect()))),
        (&["compact", "mustCompact"], |a| Ok(Value::List(of_list("compact", a)?.iter().filter(|v| !is_empty(v)).cloned().collect()))),
        (&["uniq", "mustUniq"], |a| {
            let mut seen = HashSet::new();
            let mut kept = Vec::new();
            for item in of_list("uniq", a)? {
                if seen.insert(identity(item).ok_or_else(|| failure("uniq", "an item is too large to compare"))?) {
                    kept.push(item.clone());
                }
            }
            Ok(Value::List(kept.into()))
        }),
        (&["without", "mustWithout"], |a| {
            want_at_least("without", a, 1)?;
            let mut kept = Vec::new();
            for item in list_at("without", a, 0)? {
                if !contains("without", &a[1..], item)? {
                    kept.push(item.clone());
                }
            }
            Ok(Value::List(kept.into()))
        }),
        (&["has", "mustHas"], |a| {
            want("has", a, 2)?;
            match &a[1] {
                Value::Nil => Ok(Value::Bool(false)),
                _ => Ok(Value::Bool(contains("has", list_at("has", a, 1)?, &a[0])?)),
            }
        }),
        (&["slice", "mustSlice"], slice),
        (&["chunk", "mustChunk"], |a| {
            want("chunk", a, 2)?;
            let size = count_at("chunk", a, 0)?;
            if size == 0 {
                return Err(failure("chunk", "the chunk size must be at least 1"));
            }
            Ok(Value::List(list_at("chunk", a, 1)?.chunks(size).map(|c| Value::List(c.into())).collect()))
        }),
    ])
}

/// Whether `haystack` holds a value deeply equal to `needle`.
fn contains(name: &str, haystack: &[Value], needle: &Value) -> gotmpl::Result<bool> {
    for item in haystack {
        if deep_equal_within(needle, item).map_err(|why| failure(name, why))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The one argument of `name`, which must be a list.
fn of_list<'a>(name: &str, args: &'a [Value]) -> gotmpl::Result<&'a [Value]> {
    want(name, args, 1)?;
    list_at(name, args, 0)
}

/// Sprig's `slice LIST [START [END]]`. Sprig's replaces Go's builtin, which also slices
/// strings; a string is still sliced here, as the builtin would.
fn slice(args: &[Value]) -> Call {
    want_at_least("slice", args, 1)?;
    if args.len() > 3 {
        return Err(failure("slice", format!("takes at most 3 arguments, got {}", args.len())));
    }
    let index = |i: usize| args.get(i).map(to_int64);
    if let Value::String(_) = &args[0] {
        return args[0].slice(index(1), index(2)).map_err(|e| failure("slice", e));
    }
    let items = list_at("slice", args, 0)?;
    if items.is_empty() {
        return Ok(Value::Nil);
    }
    let start = index(1).unwrap_or(0);
    let end = index(2).unwrap_or(items.len() as i64);
    let within = |n: i64| usize::try_from(n).ok().filter(|n| *n <= items.len());
    match (within(start), within(end)) {
        (Some(start), Some(end)) if start <= end => Ok(Value::List(items[start..end].into())),
        _ => Err(failure("slice", format!("slice bounds out of range [{start}:{end}] with length {}", items.len()))),
    }
}
