//! Go's time layouts (`"2006-01-02T15:04:05Z07:00"`): the elements of one, and formatting
//! a time with one, as `time.Time.Format` does for Sprig's `date` functions (reading one
//! is `timeparse`). Also the text a time is carried as between template functions (see
//! `dates`).
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

pub(super) const LONG_MONTHS: [&str; 12] =
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
pub(super) const LONG_DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Std {
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
pub(super) fn next_chunk(layout: &str) -> (&str, Option<Std>, &str) {
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
}
