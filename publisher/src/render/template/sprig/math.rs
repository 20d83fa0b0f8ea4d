//! Sprig's integer math (`add`, `add1`, `sub`, `mul`, `div`, `mod`, `max`/`biggest`,
//! `min`), conversions (`int`, `int64`, `float64`, `atoi`, `toDecimal`) and integer
//! sequences (`until`, `untilStep`, `seq`).
//!
//! Arguments convert as spf13/cast does (`add "2" 3.9` is 5) and arithmetic wraps on
//! overflow as Go's int64 does; dividing by zero, which panics in Go, fails the render.

use gotmpl::Value;

use super::args::{Call, Func, failure, int_at, str_arg, table, text, want, want_at_least};
use super::cast::{atoi, go_display, to_float64, to_int64};
use crate::render::template::bounds;

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["add"], |a| Ok(Value::Int(a.iter().map(to_int64).fold(0, i64::wrapping_add)))),
        (&["add1"], |a| {
            want("add1", a, 1)?;
            Ok(Value::Int(to_int64(&a[0]).wrapping_add(1)))
        }),
        (&["sub"], |a| {
            want("sub", a, 2)?;
            Ok(Value::Int(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
        }),
        (&["mul"], |a| {
            want_at_least("mul", a, 1)?;
            Ok(Value::Int(a.iter().map(to_int64).fold(1, i64::wrapping_mul)))
        }),
        (&["div"], |a| {
            want("div", a, 2)?;
            let (x, y) = (to_int64(&a[0]), to_int64(&a[1]));
            x.checked_div(y).or((y == -1).then(|| x.wrapping_neg())).map(Value::Int).ok_or_else(|| failure("div", "integer divide by zero"))
        }),
        (&["mod"], |a| {
            want("mod", a, 2)?;
            let (x, y) = (to_int64(&a[0]), to_int64(&a[1]));
            x.checked_rem(y).or((y == -1).then_some(0)).map(Value::Int).ok_or_else(|| failure("mod", "integer divide by zero"))
        }),
        (&["max", "biggest"], |a| {
            want_at_least("max", a, 1)?;
            Ok(Value::Int(a.iter().map(to_int64).max().unwrap_or(0)))
        }),
        (&["min"], |a| {
            want_at_least("min", a, 1)?;
            Ok(Value::Int(a.iter().map(to_int64).min().unwrap_or(0)))
        }),
        (&["int", "int64"], |a| {
            want("int", a, 1)?;
            Ok(Value::Int(to_int64(&a[0])))
        }),
        (&["float64"], |a| {
            want("float64", a, 1)?;
            Ok(Value::Float(to_float64(&a[0])))
        }),
        (&["atoi"], |a| Ok(Value::Int(atoi(str_arg("atoi", a, 1, 0)?).unwrap_or(0)))),
        (&["toDecimal"], |a| {
            want("toDecimal", a, 1)?;
            Ok(Value::Int(i64::from_str_radix(&go_display(&a[0]), 8).unwrap_or(0)))
        }),
        (&["until"], |a| {
            want("until", a, 1)?;
            let count = int_at("until", a, 0)?;
            sequence("until", 0, count, if count < 0 { -1 } else { 1 }).map(ints)
        }),
        (&["untilStep"], |a| {
            want("untilStep", a, 3)?;
            sequence("untilStep", int_at("untilStep", a, 0)?, int_at("untilStep", a, 1)?, int_at("untilStep", a, 2)?).map(ints)
        }),
        (&["seq"], seq),
    ])
}

fn ints(items: Vec<i64>) -> Value {
    Value::List(items.into_iter().map(Value::Int).collect())
}

/// Sprig's `untilStep START STOP STEP`: from START towards STOP, not reaching it; empty
/// when STEP points away from STOP. The length is checked before anything is built.
fn sequence(name: &str, start: i64, stop: i64, step: i64) -> gotmpl::Result<Vec<i64>> {
    let (start, stop, step) = (i128::from(start), i128::from(stop), i128::from(step));
    let count = if stop < start && step < 0 {
        (start - stop + (-step) - 1) / -step
    } else if stop > start && step > 0 {
        (stop - start + step - 1) / step
    } else {
        0
    };
    bounds::check_items(name, usize::try_from(count).unwrap_or(usize::MAX))?;
    Ok((0..count).map(|i| (start + i * step) as i64).collect())
}

/// Sprig's `seq`: `seq END` counts from 1, `seq START END` by one, `seq START STEP END`
/// by STEP, each to END inclusive, as space-separated text like GNU `seq`.
fn seq(args: &[Value]) -> Call {
    let params: Vec<i64> = (0..args.len()).map(|i| int_at("seq", args, i)).collect::<Result<_, _>>()?;
    let numbers = match params[..] {
        [end] => {
            let step = if end < 1 { -1 } else { 1 };
            sequence("seq", 1, end.saturating_add(step), step)?
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            sequence("seq", start, end.saturating_add(step), step)?
        }
        [start, step, end] => {
            let toward = if end < start { -1 } else { 1 };
            if end < start && step > 0 { Vec::new() } else { sequence("seq", start, end.saturating_add(toward), step)? }
        }
        _ => Vec::new(),
    };
    let words: Vec<String> = numbers.iter().map(i64::to_string).collect();
    Ok(text(words.join(" ")))
}
