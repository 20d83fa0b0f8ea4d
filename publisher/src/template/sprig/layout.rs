//! Go's time layouts (`"2006-01-02T15:04:05Z07:00"`): formatting a time with one, as
//! `time.Time.Format` does for Sprig's `date` functions, and reading one, as
//! `time.ParseInLocation` does for `toDate`. Also the text a time is carried as between
//! template functions (see `dates`).
//!
//! The publisher's "Local" zone is UTC, so results do not depend on the machine's zone.

use jiff::Timestamp;
use jiff::civil::{self, Weekday};
use jiff::tz::Offset;

/// A time as Go's `time.Time` holds it: an instant, its zone offset and the zone's name
/// ("" for a zone made up from a parsed offset).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct GoTime {
    pub at: Timestamp,
    pub offset: i32,
    pub zone: String,
}

/// Go's `Time.String` layout, which times are carried as.
const CARRIER: &str = "2006-01-02 15:04:05.999999999 -0700 MST";

const LONG_MONTHS: [&str; 12] =
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const LONG_DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    Pm {
        upper: bool,
    },
    Tz,
    /// A numeric zone: `-0700` and friends, with `Z` for UTC in the ISO 8601 forms.
    Offset {
        iso: bool,
        colons: bool,
        minutes: bool,
        seconds: bool,
    },
    /// `.000` (fixed digits) or `.999` (trailing zeros dropped), with its separator.
    Fraction {
        digits: usize,
        fixed: bool,
        separator: char,
    },
}

/// The layout before the next element, the element, and the layout after it.
fn next_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let b = layout.as_bytes();
    let at = |i: usize, s: &str| layout.get(i..).is_some_and(|rest| rest.starts_with(s));
    let lower_after = |i: usize| b.get(i).is_some_and(u8::is_ascii_lowercase);
    for i in 0..b.len() {
        let found = match b[i] {
            b'J' if at(i, "January") => Some((7, Std::LongMonth)),
            b'J' if at(i, "Jan") && !lower_after(i + 3) => Some((3, Std::Month)),
            b'M' if at(i, "Monday") => Some((6, Std::LongWeekDay)),
            b'M' if at(i, "Mon") && !lower_after(i + 3) => Some((3, Std::WeekDay)),
            b'M' if at(i, "MST") => Some((3, Std::Tz)),
            b'0' if at(i, "002") => Some((3, Std::ZeroYearDay)),
            b'0' => match b.get(i + 1) {
                Some(b'1') => Some((2, Std::ZeroMonth)),
                Some(b'2') => Some((2, Std::ZeroDay)),
                Some(b'3') => Some((2, Std::ZeroHour12)),
                Some(b'4') => Some((2, Std::ZeroMinute)),
                Some(b'5') => Some((2, Std::ZeroSecond)),
                Some(b'6') => Some((2, Std::Year)),
                _ => None,
            },
            b'1' if at(i, "15") => Some((2, Std::Hour)),
            b'1' => Some((1, Std::NumMonth)),
            b'2' if at(i, "2006") => Some((4, Std::LongYear)),
            b'2' => Some((1, Std::Day)),
            // `_2006` is a literal underscore and a year.
            b'_' if at(i, "_2006") => return (&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]),
            b'_' if at(i, "__2") => Some((3, Std::UnderYearDay)),
            b'_' if at(i, "_2") => Some((2, Std::UnderDay)),
            b'3' => Some((1, Std::Hour12)),
            b'4' => Some((1, Std::Minute)),
            b'5' => Some((1, Std::Second)),
            b'P' if at(i, "PM") => Some((2, Std::Pm { upper: true })),
            b'p' if at(i, "pm") => Some((2, Std::Pm { upper: false })),
            c @ (b'-' | b'Z') => {
                let iso = c == b'Z';
                [
                    ("070000", false, true, true),
                    ("07:00:00", true, true, true),
                    ("0700", false, true, false),
                    ("07:00", true, true, false),
                    ("07", false, false, false),
                ]
                .into_iter()
                .find(|(tail, ..)| at(i + 1, tail))
                .map(|(tail, colons, minutes, seconds)| (tail.len() + 1, Std::Offset { iso, colons, minutes, seconds }))
            }
            c @ (b'.' | b',') if matches!(b.get(i + 1), Some(b'0' | b'9')) => {
                let digit = b[i + 1];
                let end = (i + 1..b.len()).find(|j| b[*j] != digit).unwrap_or(b.len());
                // Only a run of digits that the layout ends or follows with a non-digit.
                if b.get(end).is_some_and(u8::is_ascii_digit) {
                    None
                } else {
                    Some((end - i, Std::Fraction { digits: end - i - 1, fixed: digit == b'0', separator: char::from(c) }))
                }
            }
            _ => None,
        };
        if let Some((len, std)) = found {
            return (&layout[..i], Some(std), &layout[i + len..]);
        }
    }
    (layout, None, "")
}

fn pad(out: &mut String, n: i64, width: usize) {
    if n < 0 {
        out.push('-');
    }
    out.push_str(&format!("{:0width$}", n.unsigned_abs()));
}

/// Go's `Time.Format(layout)`.
pub(super) fn format(t: &GoTime, layout: &str) -> String {
    let offset = Offset::from_seconds(t.offset).unwrap_or(Offset::UTC);
    let dt = offset.to_datetime(t.at);
    let (year, month, day) = (i64::from(dt.year()), i64::from(dt.month()), i64::from(dt.day()));
    let (hour, minute, second) = (i64::from(dt.hour()), i64::from(dt.minute()), i64::from(dt.second()));
    let mut out = String::with_capacity(layout.len() + 10);
    let mut rest = layout;
    loop {
        let (literal, std, after) = next_chunk(rest);
        out.push_str(literal);
        let Some(std) = std else { break };
        rest = after;
        let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
        match std {
            Std::LongYear => pad(&mut out, year, 4),
            Std::Year => pad(&mut out, year.rem_euclid(100), 2),
            Std::LongMonth => out.push_str(LONG_MONTHS[month as usize - 1]),
            Std::Month => out.push_str(&LONG_MONTHS[month as usize - 1][..3]),
            Std::NumMonth => pad(&mut out, month, 1),
            Std::ZeroMonth => pad(&mut out, month, 2),
            Std::LongWeekDay => out.push_str(LONG_DAYS[weekday(dt.weekday())]),
            Std::WeekDay => out.push_str(&LONG_DAYS[weekday(dt.weekday())][..3]),
            Std::Day => pad(&mut out, day, 1),
            Std::UnderDay => out.push_str(&format!("{day:>2}")),
            Std::ZeroDay => pad(&mut out, day, 2),
            Std::UnderYearDay => out.push_str(&format!("{:>3}", dt.day_of_year())),
            Std::ZeroYearDay => pad(&mut out, i64::from(dt.day_of_year()), 3),
            Std::Hour => pad(&mut out, hour, 2),
            Std::Hour12 => pad(&mut out, hour12, 1),
            Std::ZeroHour12 => pad(&mut out, hour12, 2),
            Std::Minute => pad(&mut out, minute, 1),
            Std::ZeroMinute => pad(&mut out, minute, 2),
            Std::Second => pad(&mut out, second, 1),
            Std::ZeroSecond => pad(&mut out, second, 2),
            Std::Pm { upper } => out.push_str(match (hour >= 12, upper) {
                (true, true) => "PM",
                (false, true) => "AM",
                (true, false) => "pm",
                (false, false) => "am",
            }),
            Std::Tz if !t.zone.is_empty() => out.push_str(&t.zone),
            Std::Tz => numeric_offset(&mut out, t.offset, false, true, false),
            Std::Offset { iso: true, .. } if t.offset == 0 => out.push('Z'),
            Std::Offset { colons, minutes, seconds, .. } => {
                let mut zone = String::new();
                numeric_offset(&mut zone, t.offset, colons, minutes, seconds);
                out.push_str(&zone);
            }
            Std::Fraction { digits, fixed, separator } => {
                let nanos = format!("{:09}", dt.subsec_nanosecond());
                let shown = &nanos[..digits.min(9)];
                let shown = if fixed { shown } else { shown.trim_end_matches('0') };
                if fixed || !shown.is_empty() {
                    out.push(separator);
                    out.push_str(shown);
                    if fixed && digits > 9 {
                        out.push_str(&"0".repeat(digits - 9));
                    }
                }
            }
        }
    }
    out
}

fn weekday(day: Weekday) -> usize {
    day.to_sunday_zero_offset() as usize
}

fn numeric_offset(out: &mut String, offset: i32, colons: bool, minutes: bool, seconds: bool) {
    out.push(if offset < 0 { '-' } else { '+' });
    let abs = offset.unsigned_abs();
    out.push_str(&format!("{:02}", abs / 3600));
    if minutes {
        if colons {
            out.push(':');
        }
        out.push_str(&format!("{:02}", abs / 60 % 60));
    }
    if seconds {
        if colons {
            out.push(':');
        }
        out.push_str(&format!("{:02}", abs % 60));
    }
}

/// The text a time is carried as: Go's `Time.String` without the monotonic reading.
pub(super) fn carrier(t: &GoTime) -> String {
    format(t, CARRIER)
}

/// A time back from the text [`carrier`] made; `None` for any other text.
pub(super) fn from_carrier(s: &str) -> Option<GoTime> {
    let (date_time, rest) = s.split_at_checked(19)?;
    let (fraction, rest) = match rest.strip_prefix('.') {
        Some(after) => {
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            (&after[..digits], &after[digits..])
        }
        None => ("", rest),
    };
    let (offset, zone) = rest.strip_prefix(' ')?.split_once(' ')?;
    let bytes = offset.as_bytes();
    if fraction.len() > 9
        || bytes.len() != 5
        || !matches!(bytes[0], b'+' | b'-')
        || !bytes[1..].iter().all(u8::is_ascii_digit)
        || zone.is_empty()
    {
        return None;
    }
    let seconds = (i32::from(bytes[1] - b'0') * 10 + i32::from(bytes[2] - b'0')) * 3600
        + (i32::from(bytes[3] - b'0') * 10 + i32::from(bytes[4] - b'0')) * 60;
    let offset = if bytes[0] == b'-' { -seconds } else { seconds };
    let dt: civil::DateTime = format!("{}T{}.{:0<9}", &date_time[..10], &date_time[11..], fraction).parse().ok()?;
    let at = Offset::from_seconds(offset).ok()?.to_timestamp(dt).ok()?;
    let zone = if zone == offset_text(offset) { String::new() } else { zone.to_string() };
    Some(GoTime { at, offset, zone })
}

fn offset_text(offset: i32) -> String {
    let mut out = String::new();
    numeric_offset(&mut out, offset, false, true, false);
    out
}

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

    fn at(s: &str) -> GoTime {
        let at: Timestamp = s.parse().unwrap();
        GoTime { at, offset: 0, zone: "UTC".into() }
    }

    #[test]
    fn formats_go_layouts() {
        let t = at("2017-01-02T15:04:05.120Z");
        for (layout, expected) in [
            ("2006-01-02", "2017-01-02"),
            ("Mon Jan _2 15:04:05 MST 2006", "Mon Jan  2 15:04:05 UTC 2017"),
            ("Monday, 02-Jan-06 3:4:5 PM", "Monday, 02-Jan-17 3:4:5 PM"),
            ("2006-01-02T15:04:05.000Z07:00", "2017-01-02T15:04:05.120Z"),
            ("15:04:05.999999999 -0700", "15:04:05.12 +0000"),
            ("002 __2 January", "002   2 January"),
        ] {
            assert_eq!(format(&t, layout), expected, "{layout}");
        }
        let east = GoTime { offset: 5 * 3600 + 1800, zone: String::new(), ..t };
        assert_eq!(format(&east, "15:04 -07:00 MST Z0700"), "20:34 +05:30 +0530 +0530");
    }

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
