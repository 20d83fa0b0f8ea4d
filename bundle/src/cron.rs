//! Standard five-field cron expressions (`minute hour day-of-month month day-of-week`),
//! as Sveltos reads a SveltosCluster's `activeWindow` (robfig/cron's `ParseStandard`), and
//! the one question a puller asks of a window: is this instant inside it (spec 5.2)?
//!
//! Fields take `*`, `?` (day fields), numbers, ranges `a-b`, steps `*/n` and `a-b/n`, lists
//! `a,b`, and the names `JAN`…`DEC` and `SUN`…`SAT` in any case; day-of-week 7 is Sunday
//! too. The descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
//! `@midnight` and `@hourly` stand for their five fields. `@every` is refused: a window
//! edge is a wall-clock time, not an interval. When both day fields are restricted, a day
//! matching either one matches (Vixie cron's rule, which robfig/cron follows). Times are UTC.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// A cron expression that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cron expression {expression:?}: {reason}")]
pub struct CronError {
    pub expression: String,
    pub reason: String,
}

/// A parsed cron expression: one bit per allowed value of each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    /// Whether the day-of-month or the day-of-week field was `*` or `?`.
    any_day: bool,
    any_weekday: bool,
}

/// How far back [`Cron::latest`] looks: an expression that matches no minute of the last
/// eight years (`0 0 30 2 *`) never fires.
const LOOKBACK_DAYS: i64 = 8 * 366;

impl Cron {
    pub fn parse(expression: &str) -> Result<Cron, CronError> {
        let bad = |reason: String| CronError { expression: expression.to_string(), reason };
        let expanded = match expression.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => return Err(bad(format!("unknown descriptor {other:?}"))),
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(bad(format!("{} fields, expected 5 (minute hour day-of-month month day-of-week)", fields.len())));
        };
        let field = |text: &str, spec: &Field| parse_field(text, spec).map_err(|reason| bad(format!("{}: {reason}", spec.name)));
        let weekdays = field(weekday, &WEEKDAY)?;
        Ok(Cron {
            minutes: field(minute, &MINUTE)?,
            hours: field(hour, &HOUR)? as u32,
            days: field(day, &DAY)? as u32,
            months: field(month, &MONTH)? as u16,
            // Day-of-week 7 is Sunday, as 0 is.
            weekdays: ((weekdays | (weekdays >> 7)) & 0x7f) as u8,
            any_day: is_any(day),
            any_weekday: is_any(weekday),
        })
    }

    fn matches_day(&self, date: Date) -> bool {
        let day = self.days & (1 << date.day()) != 0;
        let weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        if self.any_day || self.any_weekday { day && weekday } else { day || weekday }
    }

    /// The latest minute at or before `now` that this expression fires at, if any fired in
    /// the lookback.
    pub fn latest(&self, now: Timestamp) -> Option<Timestamp> {
        let now = now.to_zoned(TimeZone::UTC).datetime();
        let mut date = now.date();
        for back in 0..=LOOKBACK_DAYS {
            if self.months & (1 << date.month()) != 0 && self.matches_day(date) {
                let last = if back == 0 { Some((now.hour(), now.minute())) } else { None };
                if let Some(time) = self.latest_time(last) {
                    let at = DateTime::from_parts(date, time);
                    return at.to_zoned(TimeZone::UTC).ok().map(|z| z.timestamp());
                }
            }
            date = date.checked_sub(1.day()).ok()?;
        }
        None
    }

    /// The latest allowed time of a day, at or before `(hour, minute)` when given.
    fn latest_time(&self, until: Option<(i8, i8)>) -> Option<Time> {
        let (last_hour, last_minute) = until.unwrap_or((23, 59));
        for hour in (0..=last_hour).rev() {
            if self.hours & (1 << hour) == 0 {
                continue;
            }
            let top = if hour == last_hour { last_minute } else { 59 };
            if let Some(minute) = (0..=top).rev().find(|m| self.minutes & (1 << m) != 0) {
                return Time::new(hour, minute, 0, 0).ok();
            }
        }
        None
    }
}

/// A SveltosCluster's `activeWindow`: updates are allowed from a `from` firing until the
/// next `to` firing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Cron,
    pub to: Cron,
}

impl Window {
    pub fn parse(from: &str, to: &str) -> Result<Window, CronError> {
        Ok(Window { from: Cron::parse(from)?, to: Cron::parse(to)? })
    }

    /// Inside the window: the latest `from` firing is later than the latest `to` firing.
    /// A `from` that never fired keeps the cluster paused, as Sveltos pauses a cluster
    /// whose window it has not computed yet; a `to` that never fired leaves it open once
    /// `from` has.
    pub fn is_open(&self, now: Timestamp) -> bool {
        match (self.from.latest(now), self.to.latest(now)) {
            (Some(from), Some(to)) => from > to,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Field = Field { name: "minute", min: 0, max: 59, names: &[] };
const HOUR: Field = Field { name: "hour", min: 0, max: 23, names: &[] };
const DAY: Field = Field { name: "day-of-month", min: 1, max: 31, names: &[] };
const MONTH: Field =
    Field { name: "month", min: 1, max: 12, names: &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"] };
const WEEKDAY: Field = Field { name: "day-of-week", min: 0, max: 7, names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"] };

fn is_any(text: &str) -> bool {
    text == "*" || text == "?"
}

fn parse_field(text: &str, spec: &Field) -> Result<u64, String> {
    let mut bits = 0u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(step.parse::<u32>().map_err(|_| format!("step {step:?} is not a number"))?)),
            None => (item, None),
        };
        if step == Some(0) {
            return Err(format!("step 0 in {item:?}"));
        }
        let (low, high) = if is_any(range) {
            (spec.min, spec.max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, spec)?, value(b, spec)?)
        } else {
            let v = value(range, spec)?;
            // `5/15` means 5 to the maximum by 15, as in robfig/cron.
            (v, if step.is_some() { spec.max } else { v })
        };
        if low > high {
            return Err(format!("range {range:?} runs backwards"));
        }
        let mut v = low;
        while v <= high {
            bits |= 1 << v;
            v += step.unwrap_or(1);
        }
    }
    Ok(bits)
}

fn value(text: &str, spec: &Field) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    let v = match spec.names.iter().position(|n| *n == lower) {
        Some(i) => i as u32 + if spec.names.len() == 12 { 1 } else { 0 },
        None => text.parse::<u32>().map_err(|_| format!("{text:?} is not a number or name"))?,
    };
    if v < spec.min || v > spec.max {
        return Err(format!("{v} is outside {}-{}", spec.min, spec.max));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn latest_firing_at_or_before_now() {
        let friday_eight = Cron::parse("0 20 * * 5").unwrap();
        // 2026-12-04 is a Friday.
        assert_eq!(friday_eight.latest(at("2026-12-04T20:00:00Z")), Some(at("2026-12-04T20:00:00Z")));
        assert_eq!(friday_eight.latest(at("2026-12-04T19:59:59Z")), Some(at("2026-11-27T20:00:00Z")));
        assert_eq!(Cron::parse("*/15 * * * *").unwrap().latest(at("2026-12-01T10:44:10Z")), Some(at("2026-12-01T10:30:00Z")));
        assert_eq!(Cron::parse("@monthly").unwrap().latest(at("2026-12-01T00:00:00Z")), Some(at("2026-12-01T00:00:00Z")));
        assert_eq!(Cron::parse("0 0 30 2 *").unwrap().latest(at("2026-12-01T00:00:00Z")), None);
    }

    #[test]
    fn day_fields_match_either_when_both_are_restricted() {
        // The 1st of the month or any Monday; 2026-12-07 is a Monday, the 8th is not.
        let cron = Cron::parse("0 0 1 * MON").unwrap();
        assert_eq!(cron.latest(at("2026-12-08T12:00:00Z")), Some(at("2026-12-07T00:00:00Z")));
        assert_eq!(cron.latest(at("2026-12-02T12:00:00Z")), Some(at("2026-12-01T00:00:00Z")));
        // With a `*` day-of-month only Mondays count.
        assert_eq!(Cron::parse("0 0 * * 1").unwrap().latest(at("2026-12-02T12:00:00Z")), Some(at("2026-11-30T00:00:00Z")));
        // Sunday is 0 and 7.
        assert_eq!(Cron::parse("0 0 * * 7").unwrap(), Cron::parse("0 0 * * SUN").unwrap());
    }

    #[test]
    fn a_weekend_window_opens_friday_and_closes_monday() {
        let window = Window::parse("0 20 * * 5", "0 7 * * 1").unwrap();
        assert!(!window.is_open(at("2026-12-04T19:59:00Z")), "Friday before eight");
        assert!(window.is_open(at("2026-12-04T20:00:00Z")), "Friday at eight");
        assert!(window.is_open(at("2026-12-06T12:00:00Z")), "Sunday");
        assert!(!window.is_open(at("2026-12-07T07:00:00Z")), "Monday at seven");
        assert!(!window.is_open(at("2026-12-09T12:00:00Z")), "Wednesday");
        let never = Window::parse("0 0 30 2 *", "@daily").unwrap();
        assert!(!never.is_open(at("2026-12-09T12:00:00Z")), "a from that never fires keeps it paused");
    }

    #[test]
    fn rejects_bad_expressions() {
        for (bad, why) in [
            ("0 20 * *", "4 fields"),
            ("60 * * * *", "minute: 60 is outside 0-59"),
            ("0 24 * * *", "hour: 24"),
            ("0 0 0 * *", "day-of-month: 0"),
            ("0 0 * 13 *", "month: 13"),
            ("0 0 * * 8", "day-of-week: 8"),
            ("*/0 * * * *", "step 0"),
            ("5-1 * * * *", "runs backwards"),
            ("0 0 * FOO *", "\"FOO\" is not a number or name"),
            ("@every 1h", "unknown descriptor"),
        ] {
            let error = Cron::parse(bad).unwrap_err();
            assert!(error.to_string().contains(why), "{bad}: {error}");
            assert_eq!(error.expression, bad);
        }
    }

    #[test]
    fn steps_lists_and_names() {
        let cron = Cron::parse("5/20 1,3 * jan-mar sun").unwrap();
        assert_eq!(cron.minutes, (1 << 5) | (1 << 25) | (1 << 45));
        assert_eq!(cron.hours, (1 << 1) | (1 << 3));
        assert_eq!(cron.months, 0b1110);
        assert_eq!(cron.weekdays, 1);
    }
}
