//! Go's `time.Duration` as text: `String` (`1h2m3.5s`, `1.5ms`, `0s`), `ParseDuration`
//! and `Round`, for Sprig's `duration`, `durationRound`, `dateModify` and `ago`.

const SECOND: u64 = 1_000_000_000;

/// Go's `Duration.String` of `nanos`.
pub(super) fn format(nanos: i64) -> String {
    let mut u = nanos.unsigned_abs();
    let sign = if nanos < 0 { "-" } else { "" };
    if u == 0 {
        return "0s".into();
    }
    if u < SECOND {
        let (unit, precision) = if u < 1_000 {
            ("ns", 0)
        } else if u < 1_000_000 {
            ("µs", 3)
        } else {
            ("ms", 6)
        };
        return format!("{sign}{}{unit}", fraction(u, precision));
    }
    let seconds = fraction(u % (60 * SECOND), 9);
    u /= 60 * SECOND;
    let mut out = String::from(sign);
    if u > 0 {
        let (hours, minutes) = (u / 60, u % 60);
        if hours > 0 {
            out.push_str(&format!("{hours}h"));
        }
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&seconds);
    out.push('s');
    out
}

/// `v / 10^precision` with the fraction's trailing zeros (and a bare point) dropped.
fn fraction(v: u64, precision: u32) -> String {
    let scale = 10u64.pow(precision);
    let (whole, part) = (v / scale, v % scale);
    if part == 0 {
        return whole.to_string();
    }
    let digits = format!("{part:0width$}", width = precision as usize);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`: `[-+]` then numbers with units (`ns`, `us`, `µs`, `ms`,
/// `s`, `m`, `h`), such as `1h15m` or `-1.5s`.
pub(super) fn parse(s: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {s:?}");
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let whole_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let whole: u64 = if whole_len == 0 { 0 } else { rest[..whole_len].parse().map_err(|_| invalid())? };
        rest = &rest[whole_len..];
        let (mut part, mut scale, mut fraction_len) = (0u64, 1f64, 0);
        if let Some(after) = rest.strip_prefix('.') {
            fraction_len = after.bytes().take_while(u8::is_ascii_digit).count();
            for digit in after[..fraction_len].bytes() {
                // Digits past what 64 bits hold only refine what is cut off anyway.
                if part < u64::MAX / 100 {
                    part = part * 10 + u64::from(digit - b'0');
                    scale *= 10.0;
                }
            }
            rest = &after[fraction_len..];
        }
        if whole_len == 0 && fraction_len == 0 {
            return Err(invalid());
        }
        let unit_len = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => SECOND,
            "m" => 60 * SECOND,
            "h" => 3600 * SECOND,
            "" => return Err(format!("time: missing unit in duration {s:?}")),
            other => return Err(format!("time: unknown unit {other:?} in duration {s:?}")),
        };
        rest = &rest[unit_len..];
        let mut value = whole.checked_mul(unit).ok_or_else(invalid)?;
        if part > 0 {
            value = value.checked_add((part as f64 * (unit as f64 / scale)) as u64).ok_or_else(invalid)?;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
    }
    if negative { 0i64.checked_sub_unsigned(total).ok_or_else(invalid) } else { i64::try_from(total).map_err(|_| invalid()) }
}

/// Go's `Duration.Round(multiple)`: to the nearest multiple, halves away from zero.
pub(super) fn round(d: i64, multiple: i64) -> i64 {
    let r = d % multiple;
    let (r, half_or_more) = (r.abs(), r.unsigned_abs() * 2 >= multiple.unsigned_abs());
    if d < 0 {
        if half_or_more { d.checked_sub(multiple - r).unwrap_or(i64::MIN) } else { d + r }
    } else if half_or_more {
        d.checked_add(multiple - r).unwrap_or(i64::MAX)
    } else {
        d - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_reads_go_durations() {
        for (nanos, text) in [
            (0, "0s"),
            (95 * SECOND as i64, "1m35s"),
            (3600 * SECOND as i64, "1h0m0s"),
            (1_500_000, "1.5ms"),
            (-1_500, "-1.5µs"),
            (1_500_000_000, "1.5s"),
            (7, "7ns"),
        ] {
            assert_eq!(format(nanos), text);
            assert_eq!(parse(text), Ok(nanos), "{text}");
        }
        assert_eq!(parse("1h15m30.918273645s"), Ok(4_530_918_273_645));
        assert_eq!(parse("-.5h"), Ok(-1_800_000_000_000));
        for bad in ["", "1", "1x", ".s", "-", "99999999999h"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rounds_halves_away_from_zero() {
        assert_eq!(round(1_500_000_000, SECOND as i64), 2_000_000_000);
        assert_eq!(round(-1_500_000_000, SECOND as i64), -2_000_000_000);
        assert_eq!(round(1_499_999_999, SECOND as i64), 1_000_000_000);
    }
}
