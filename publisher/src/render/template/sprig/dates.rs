//! Sprig's date functions: `now`, `date`, `dateInZone` (`date_in_zone`), `htmlDate`,
//! `htmlDateInZone`, `dateModify` (`date_modify`, `mustDateModify`), `toDate`,
//! `mustToDate`, `unixEpoch`, `ago`, `duration` and `durationRound`.
//!
//! `now` is the render's clock (`RenderEnv::now`), not the machine's, so the caller can
//! keep a template that prints it from changing on every publish.
//!
//! Departures: a Go `time.Time` is carried here as the text Go prints for it
//! (`2024-05-01 10:00:00 +0000 UTC`, without the monotonic reading): `{{ now }}` prints
//! the same, and the date functions read such text back as a time; typeOf says
//! `string`. Go's "Local" zone is UTC. As in Go, a value `date` cannot read as a time
//! or Unix seconds means "now".

use std::sync::Arc;

use gotmpl::{Value, ValueFunc};
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::args::{Call, arg, failure, str_arg, string_at, text, want, wrong_type};
use super::duration;
use super::layout::{GoTime, carrier, format, from_carrier};
use super::timeparse::parse;
use crate::render::template::session::Session;

/// The layout of `htmlDate`, an HTML date input's.
const HTML_DATE: &str = "2006-01-02";

/// The render's clock, read only by a call that needs it.
type Clock<'a> = &'a dyn Fn() -> gotmpl::Result<Timestamp>;

/// A function of its arguments and the render's clock.
type Clocked = fn(&[Value], Clock<'_>) -> Call;

pub(super) fn funcs(session: &Session) -> Vec<(&'static str, ValueFunc)> {
    let clocked: [(&[&'static str], Clocked); 7] = [
        (&["now"], |a, now| {
            want("now", a, 0)?;
            Ok(text(carrier(&utc(now()?))))
        }),
        (&["date"], |a, now| {
            let layout = str_arg("date", a, 2, 0)?;
            Ok(text(in_zone(&time_or_now(&a[1], now)?, "Local", layout)))
        }),
        (&["dateInZone", "date_in_zone"], |a, now| {
            let (layout, zone) = (str_arg("dateInZone", a, 3, 0)?, string_at("dateInZone", a, 2)?);
            Ok(text(in_zone(&time_or_now(&a[1], now)?, zone, layout)))
        }),
        (&["htmlDate"], |a, now| {
            want("htmlDate", a, 1)?;
            Ok(text(in_zone(&time_or_now(&a[0], now)?, "Local", HTML_DATE)))
        }),
        (&["htmlDateInZone"], |a, now| {
            let zone = str_arg("htmlDateInZone", a, 2, 1)?;
            Ok(text(in_zone(&time_or_now(&a[0], now)?, zone, HTML_DATE)))
        }),
        (&["ago"], |a, now| {
            want("ago", a, 1)?;
            let then = time_or_now(&a[0], now)?.at;
            Ok(text(duration::format(duration::round(since(then, now()?), 1_000_000_000))))
        }),
        (&["durationRound"], |a, now| {
            want("durationRound", a, 1)?;
            let nanos = match &a[0] {
                Value::String(s) => match from_carrier(s) {
                    Some(then) => since(then.at, now()?),
                    None => duration::parse(s).unwrap_or(0),
                },
                Value::Int(n) => *n,
                _ => 0,
            };
            Ok(text(rounded(nanos)))
        }),
    ];
    let mut out: Vec<(&'static str, ValueFunc)> = Vec::new();
    for (names, f) in clocked {
        for name in names {
            let session = session.clone();
            out.push((name, Arc::new(move |a: &[Value]| f(a, &|| session.now(name)))));
        }
    }
    out.extend(
        [(["dateModify", "date_modify"], false), (["mustDateModify", "must_date_modify"], true)]
            .into_iter()
            .flat_map(|(names, strict)| names.map(|name| (name, Arc::new(move |a: &[Value]| date_modify(name, a, strict)) as ValueFunc))),
    );
    out.extend([
        ("toDate", Arc::new(|a: &[Value]| to_date("toDate", a, false)) as ValueFunc),
        ("mustToDate", Arc::new(|a: &[Value]| to_date("mustToDate", a, true))),
        (
            "unixEpoch",
            Arc::new(|a: &[Value]| {
                want("unixEpoch", a, 1)?;
                Ok(text(time_arg("unixEpoch", a, 0)?.at.as_second().to_string()))
            }),
        ),
        (
            "duration",
            Arc::new(|a: &[Value]| {
                want("duration", a, 1)?;
                let seconds = match &a[0] {
                    Value::String(s) => s.parse::<i64>().unwrap_or(0),
                    Value::Int(n) => *n,
                    _ => 0,
                };
                Ok(text(duration::format(seconds.wrapping_mul(1_000_000_000))))
            }),
        ),
    ]);
    out
}

fn utc(at: Timestamp) -> GoTime {
    GoTime { at, offset: 0, zone: "UTC".into() }
}

/// What Sprig's `date` functions read a value as: a time, Unix seconds, or else now.
fn time_or_now(v: &Value, now: Clock<'_>) -> gotmpl::Result<GoTime> {
    let given = match v {
        Value::String(s) => from_carrier(s),
        Value::Int(seconds) => Timestamp::from_second(*seconds).ok().map(utc),
        _ => None,
    };
    match given {
        Some(t) => Ok(t),
        None => Ok(utc(now()?)),
    }
}

/// Go's `time.Since`, in nanoseconds, saturating.
fn since(then: Timestamp, now: Timestamp) -> i64 {
    i64::try_from(now.as_nanosecond() - then.as_nanosecond()).unwrap_or(if now > then { i64::MAX } else { i64::MIN })
}

/// Argument `index`, which must be a time (what Go's `time.Time` parameters take).
fn time_arg(name: &str, args: &[Value], index: usize) -> gotmpl::Result<GoTime> {
    let value = arg(name, args, index)?;
    value.as_str().and_then(from_carrier).ok_or_else(|| wrong_type(name, index, "a time", value))
}

/// `t` in `zone` (UTC for "Local" and for a zone the time zone database lacks, as Go
/// falls back), formatted with `layout`.
fn in_zone(t: &GoTime, zone: &str, layout: &str) -> String {
    let tz = if zone == "Local" || zone.is_empty() { TimeZone::UTC } else { TimeZone::get(zone).unwrap_or(TimeZone::UTC) };
    let info = tz.to_offset_info(t.at);
    let name = if tz == TimeZone::UTC { "UTC".to_string() } else { info.abbreviation().to_string() };
    format(&GoTime { at: t.at, offset: info.offset().seconds(), zone: name }, layout)
}

/// Sprig's `dateModify DURATION TIME`: the time moved by a Go duration; a bad duration
/// leaves it as it was, or fails `mustDateModify`.
fn date_modify(name: &str, args: &[Value], strict: bool) -> Call {
    let change = str_arg(name, args, 2, 0)?;
    let t = time_arg(name, args, 1)?;
    let nanos = match duration::parse(change) {
        Ok(nanos) => nanos,
        Err(why) if strict => return Err(failure(name, why)),
        Err(_) => return Ok(text(carrier(&t))),
    };
    let at = t.at.checked_add(jiff::SignedDuration::from_nanos(nanos)).map_err(|e| failure(name, e))?;
    Ok(text(carrier(&GoTime { at, ..t })))
}

/// Sprig's `toDate LAYOUT TEXT`; text the layout does not fit is Go's zero time, or fails
/// `mustToDate`.
fn to_date(name: &str, args: &[Value], strict: bool) -> Call {
    let (layout, value) = (str_arg(name, args, 2, 0)?, string_at(name, args, 1)?);
    match parse(layout, value) {
        Ok(t) => Ok(text(carrier(&t))),
        Err(why) if strict => Err(failure(name, why)),
        Err(_) => Ok(text("0001-01-01 00:00:00 +0000 UTC")),
    }
}

/// Sprig's `durationRound`: the duration in its largest whole unit (`2h`, `3mo`, `1y`).
fn rounded(nanos: i64) -> String {
    const HOUR: u64 = 3600 * 1_000_000_000;
    let u = nanos.unsigned_abs();
    for (size, unit) in
        [(HOUR * 24 * 365, "y"), (HOUR * 24 * 30, "mo"), (HOUR * 24, "d"), (HOUR, "h"), (HOUR / 60, "m"), (HOUR / 3600, "s")]
    {
        if u > size {
            return format!("{}{unit}", u / size);
        }
    }
    "0s".into()
}
