//! Durations as the publisher's flags and annotations write them: `30d`, `12h`, `90m`,
//! `3600s`. Shared by the commands' flags and by ingest, which reads the report interval
//! `register cluster` records on a SveltosCluster.

use jiff::SignedDuration;

/// Parses `30d`, `12h`, `90m` or `3600s`.
pub fn parse_duration(text: &str) -> Result<SignedDuration, String> {
    let bad = || format!("{text:?} is not a duration like 30d, 12h, 90m or 3600s");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3_600),
        "d" => n.checked_mul(86_400),
        _ => None,
    }
    .ok_or_else(bad)?;
    if secs <= 0 {
        return Err(format!("{text:?} must be longer than zero"));
    }
    Ok(SignedDuration::from_secs(secs))
}

/// Parses a Go duration as Kubernetes writes `metav1.Duration`: `5m0s`, `1h30m`, `90s`,
/// `500ms`. Zero and negative durations are refused: they would mean fetching all the time.
pub fn parse_go_duration(text: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{text:?} is not a duration like 5m0s, 1h30m or 90s");
    let mut rest = text;
    let mut total = std::time::Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let part = match &rest[..unit] {
            "ms" => std::time::Duration::from_millis(n),
            "s" => std::time::Duration::from_secs(n),
            "m" => std::time::Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
            "h" => std::time::Duration::from_secs(n.checked_mul(3_600).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        total = total.checked_add(part).ok_or_else(bad)?;
        rest = &rest[unit..];
    }
    if total.is_zero() {
        return Err(format!("{text:?} must be longer than zero"));
    }
    Ok(total)
}

/// `d` as [`parse_duration`] reads it, in its largest whole unit: `30m`, `1h`, `90s`.
pub fn format_duration(d: SignedDuration) -> String {
    match d.as_secs() {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_go_durations_and_rejects_others() {
        assert_eq!(parse_go_duration("5m0s"), Ok(std::time::Duration::from_secs(300)));
        assert_eq!(parse_go_duration("1h30m"), Ok(std::time::Duration::from_secs(5_400)));
        assert_eq!(parse_go_duration("1500ms"), Ok(std::time::Duration::from_millis(1_500)));
        for bad in ["", "0s", "5", "m", "5x", "-5m", "1.5h"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d"), Ok(SignedDuration::from_hours(720)));
        assert_eq!(parse_duration("90m"), Ok(SignedDuration::from_mins(90)));
        assert_eq!(parse_duration("2s"), Ok(SignedDuration::from_secs(2)));
        for bad in ["", "d", "30", "1w", "-1d", "0s", "1.5h", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_in_the_largest_whole_unit_and_reads_back() {
        for (text, want) in [("90s", "90s"), ("120s", "2m"), ("30m", "30m"), ("90m", "90m"), ("60m", "1h"), ("48h", "2d")] {
            let d = parse_duration(text).unwrap();
            assert_eq!(format_duration(d), want);
            assert_eq!(parse_duration(want), Ok(d));
        }
    }
}
