//! Reading a time with a Go layout, as `time.ParseInLocation(layout, value, time.Local)`
//! does for Sprig's `toDate`: numbers of the widths the layout's elements allow, names
//! in any case, a run of spaces for a run of spaces, a zone by offset or abbreviation,
//! then a check of the calendar date. "Local" is UTC, as in `layout`.

use jiff::civil;
use jiff::tz::Offset;

use super::layout::{GoTime, LONG_DAYS, LONG_MONTHS, Std, next_chunk};

/// Go's `time.ParseInLocation(layout, value, time.Local)`, with Local being UTC.
pub(super) fn parse(layout: &str, value: &str) -> Result<GoTime, String> {
    let bad = |what: &str| format!("parsing time {value:?} as {layout:?}: {what}");
    let (mut year, mut month, mut day, mut year_day) = (0i64, -1i64, -1i64, -1i64);
    let (mut hour, mut minute, mut second, mut nanos) = (0i64, 0i64, 0i64, 0i64);
    let (mut pm, mut am, mut utc) = (false, false, false);
    let (mut zone_offset, mut zone_name): (Option<i32>, String) = (None, String::new());
    let (mut rest_layout, mut rest) = (layout, value);
    loop {
        let (literal, std, after) = next_chunk(rest_layout);
        let element = &rest_layout[literal.len()..rest_layout.len() - after.len()];
        rest = skip(rest, literal).ok_or_else(|| bad(&format!("cannot parse {rest:?} as {literal:?}")))?;
        let Some(std) = std else {
            if !rest.is_empty() {
                return Err(bad(&format!("extra text: {rest:?}")));
            }
            break;
        };
        rest_layout = after;
        let cannot = || bad(&format!("cannot parse {rest:?} as {element:?}"));
        match std {
            Std::Year => {
                let n = fixed_digits(rest, 2).ok_or_else(cannot)?;
                year = if n >= 69 { 1900 + n } else { 2000 + n };
                rest = &rest[2..];
            }
            Std::LongYear => {
                year = fixed_digits(rest, 4).ok_or_else(cannot)?;
                rest = &rest[4..];
            }
            Std::Month | Std::LongMonth => {
                let (index, len) = lookup(rest, &LONG_MONTHS, std == Std::Month).ok_or_else(cannot)?;
                month = index as i64 + 1;
                rest = &rest[len..];
            }
            Std::WeekDay | Std::LongWeekDay => {
                let (_, len) = lookup(rest, &LONG_DAYS, std == Std::WeekDay).ok_or_else(cannot)?;
                rest = &rest[len..];
            }
            Std::NumMonth | Std::ZeroMonth => {
                (month, rest) = number(rest, 2, std == Std::ZeroMonth).ok_or_else(cannot)?;
                if !(1..=12).contains(&month) {
                    return Err(bad("month out of range"));
                }
            }
            Std::Day | Std::UnderDay | Std::ZeroDay => {
                let from = if std == Std::UnderDay { rest.strip_prefix(' ').unwrap_or(rest) } else { rest };
                (day, rest) = number(from, 2, std == Std::ZeroDay).ok_or_else(cannot)?;
            }
            Std::UnderYearDay | Std::ZeroYearDay => {
                let from = if std == Std::UnderYearDay { rest.trim_start_matches(' ') } else { rest };
                (year_day, rest) = number(from, 3, std == Std::ZeroYearDay).ok_or_else(cannot)?;
            }
            Std::Hour => {
                (hour, rest) = number(rest, 2, false).ok_or_else(cannot)?;
                if hour >= 24 {
                    return Err(bad("hour out of range"));
                }
            }
            Std::Hour12 | Std::ZeroHour12 => {
                (hour, rest) = number(rest, 2, std == Std::ZeroHour12).ok_or_else(cannot)?;
                if hour > 12 {
                    return Err(bad("hour out of range"));
                }
            }
            Std::Minute | Std::ZeroMinute => {
                (minute, rest) = number(rest, 2, std == Std::ZeroMinute).ok_or_else(cannot)?;
                if minute >= 60 {
                    return Err(bad("minute out of range"));
                }
            }
            Std::Second | Std::ZeroSecond => {
                (second, rest) = number(rest, 2, std == Std::ZeroSecond).ok_or_else(cannot)?;
                if second >= 60 {
                    return Err(bad("second out of range"));
                }
                // A fraction the layout does not ask for is read anyway, as Go does.
                let layout_has_fraction = matches!(next_chunk(rest_layout), ("", Some(Std::Fraction { .. }), _));
                let b = rest.as_bytes();
                if !layout_has_fraction && b.len() >= 2 && matches!(b[0], b'.' | b',') && b[1].is_ascii_digit() {
                    let n = 1 + rest[1..].bytes().take_while(u8::is_ascii_digit).count();
                    nanos = nanoseconds(&rest[1..n]);
                    rest = &rest[n..];
                }
            }
            Std::Pm { upper } => {
                let text = rest.get(..2).ok_or_else(cannot)?;
                match (text, upper) {
                    ("PM", true) | ("pm", false) => pm = true,
                    ("AM", true) | ("am", false) => am = true,
                    _ => return Err(cannot()),
                }
                rest = &rest[2..];
            }
            Std::Offset { iso: true, .. } if rest.starts_with('Z') => {
                utc = true;
                rest = &rest[1..];
            }
            Std::Offset { colons, minutes, seconds, .. } => {
                let (offset, len) = parse_offset(rest, colons, minutes, seconds).ok_or_else(cannot)?;
                zone_offset = Some(offset);
                rest = &rest[len..];
            }
            Std::Tz => {
                if let Some(after) = rest.strip_prefix("UTC") {
                    utc = true;
                    rest = after;
                } else {
                    let len = zone_name_len(rest).ok_or_else(cannot)?;
                    zone_name = rest[..len].to_string();
                    rest = &rest[len..];
                }
            }
            Std::Fraction { digits, fixed: true, .. } => {
                let text = rest
                    .get(..digits + 1)
                    .filter(|t| t[1..].bytes().all(|b| b.is_ascii_digit()) && matches!(t.as_bytes()[0], b'.' | b','))
                    .ok_or_else(cannot)?;
                nanos = nanoseconds(&text[1..]);
                rest = &rest[digits + 1..];
            }
            Std::Fraction { fixed: false, .. } => {
                let b = rest.as_bytes();
                if b.len() >= 2 && matches!(b[0], b'.' | b',') && b[1].is_ascii_digit() {
                    let n = 1 + rest[1..].bytes().take_while(u8::is_ascii_digit).count();
                    nanos = nanoseconds(&rest[1..n]);
                    rest = &rest[n..];
                }
            }
        }
    }
    if pm && hour < 12 {
        hour += 12;
    } else if am && hour == 12 {
        hour = 0;
    }
    let date = calendar_date(year, month, day, year_day).map_err(&bad)?;
    let dt = date.at(hour as i8, minute as i8, second as i8, nanos as i32);
    let (offset, zone) = match (utc, zone_offset) {
        (true, _) => (0, "UTC".to_string()),
        (false, Some(offset)) if offset == 0 && (zone_name.is_empty() || zone_name == "UTC") => (0, "UTC".to_string()),
        (false, Some(offset)) => (offset, zone_name),
        (false, None) if !zone_name.is_empty() => (gmt_offset(&zone_name), zone_name),
        (false, None) => (0, "UTC".to_string()),
    };
    let at = Offset::from_seconds(offset).map_err(|e| bad(&e.to_string()))?.to_timestamp(dt).map_err(|e| bad(&e.to_string()))?;
    Ok(GoTime { at, offset, zone })
}

fn calendar_date(year: i64, month: i64, day: i64, year_day: i64) -> Result<civil::Date, &'static str> {
    let year = i16::try_from(year).map_err(|_| "year out of range")?;
    if year_day >= 0 {
        let first = civil::Date::new(year, 1, 1).map_err(|_| "year out of range")?;
        let date = first.checked_add(jiff::Span::new().days(year_day - 1)).map_err(|_| "day-of-year out of range")?;
        if date.year() != year || year_day < 1 {
            return Err("day-of-year out of range");
        }
        if (month >= 0 && i64::from(date.month()) != month) || (day >= 0 && i64::from(date.day()) != day) {
            return Err("day-of-year does not match month or day");
        }
        return Ok(date);
    }
    let (month, day) = (if month < 0 { 1 } else { month }, if day < 0 { 1 } else { day });
    civil::Date::new(year, month as i8, day.clamp(0, 99) as i8).map_err(|_| "day out of range")
}

/// Go's `skip`: the literal text of the layout, where a run of spaces matches any run
/// of at least one space.
fn skip<'v>(mut value: &'v str, mut literal: &str) -> Option<&'v str> {
    while let Some(c) = literal.chars().next() {
        if c == ' ' {
            if !value.is_empty() && !value.starts_with(' ') {
                return None;
            }
            literal = literal.trim_start_matches(' ');
            value = value.trim_start_matches(' ');
            continue;
        }
        value = value.strip_prefix(c)?;
        literal = &literal[c.len_utf8()..];
    }
    Some(value)
}

/// Up to `max` digits (exactly `max` when `fixed`), with what follows.
fn number(s: &str, max: usize, fixed: bool) -> Option<(i64, &str)> {
    let len = s.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if len == 0 || (fixed && len < max) {
        return None;
    }
    Some((s[..len].parse().ok()?, &s[len..]))
}

fn fixed_digits(s: &str, len: usize) -> Option<i64> {
    let digits = s.get(..len)?;
    digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse().ok())?
}

/// The name matched case-insensitively at the start of `s`, by index, and its length.
fn lookup(s: &str, names: &[&str], short: bool) -> Option<(usize, usize)> {
    names.iter().enumerate().find_map(|(i, name)| {
        let name = if short { &name[..3] } else { name };
        s.get(..name.len()).filter(|head| head.eq_ignore_ascii_case(name)).map(|_| (i, name.len()))
    })
}

fn nanoseconds(digits: &str) -> i64 {
    format!("{digits:0<9}")[..9].parse().unwrap_or(0)
}

fn parse_offset(s: &str, colons: bool, minutes: bool, seconds: bool) -> Option<(i32, usize)> {
    let sign = match s.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let mut fields = vec![(1usize, 2usize)];
    let mut cursor = 3;
    for present in [minutes, seconds] {
        if !present {
            break;
        }
        if colons {
            (s.as_bytes().get(cursor) == Some(&b':')).then_some(())?;
            cursor += 1;
        }
        fields.push((cursor, 2));
        cursor += 2;
    }
    let values: Vec<i32> = fields.iter().map(|(at, len)| fixed_digits(s.get(*at..)?, *len).map(|n| n as i32)).collect::<Option<_>>()?;
    let (h, m, sec) = (values[0], values.get(1).copied().unwrap_or(0), values.get(2).copied().unwrap_or(0));
    if h > 24 || m > 60 || sec > 60 {
        return None;
    }
    Some((sign * ((h * 60 + m) * 60 + sec), cursor))
}

/// Go's `parseTimeZone`: the length of a zone abbreviation at the start of `s`.
fn zone_name_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if s.starts_with("ChST") || s.starts_with("MeST") {
        return Some(4);
    }
    if let Some(rest) = s.strip_prefix("GMT") {
        let signed = rest.starts_with(['+', '-']) && rest[1..].bytes().take_while(u8::is_ascii_digit).count() > 0;
        return Some(3 + if signed { 1 + rest[1..].bytes().take_while(u8::is_ascii_digit).count() } else { 0 });
    }
    let upper = b.iter().take(6).take_while(|c| c.is_ascii_uppercase()).count();
    match upper {
        3 => Some(3),
        4 if b[3] == b'T' || s.starts_with("WITA") => Some(4),
        5 if b[4] == b'T' => Some(5),
        _ => None,
    }
}

/// The offset of a `GMT+3`-style name; any other unknown zone is taken as UTC, as Go does.
fn gmt_offset(name: &str) -> i32 {
    name.strip_prefix("GMT").and_then(|hours| hours.parse::<i32>().ok()).map_or(0, |h| h * 3600)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::template::sprig::layout::{carrier, from_carrier};

    #[test]
    fn parses_what_it_formats() {
        let t = parse("2006-01-02", "2017-12-31").unwrap();
        assert_eq!(carrier(&t), "2017-12-31 00:00:00 +0000 UTC");
        let t = parse(time_rfc3339(), "2024-02-29T10:11:12.5-07:00").unwrap();
        assert_eq!(carrier(&t), "2024-02-29 10:11:12.5 -0700 -0700");
        assert_eq!(from_carrier(&carrier(&t)), Some(t));
        let t = parse("Jan 2 2006 3:04pm MST", "feb 3 2020 1:05am PST").unwrap();
        assert_eq!(carrier(&t), "2020-02-03 01:05:00 +0000 PST");
        assert!(parse("2006-01-02", "2017-02-30").is_err());
        assert!(parse("2006-01-02", "2017-12-31x").is_err());
    }

    fn time_rfc3339() -> &'static str {
        "2006-01-02T15:04:05Z07:00"
    }
}
