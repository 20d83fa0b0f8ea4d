//! Sveltos's `metav1.Duration` fields (a Flux source's or a `remoteURL`'s `interval`, a Job
//! check's `timeout`), which are Go durations: read with `kube::core::Duration`, as any
//! Kubernetes client reads them. The publisher's own flags and annotations use the one
//! grammar of `airlock_cli::duration`.

/// Parses a Go duration as Kubernetes writes `metav1.Duration`: `5m0s`, `1h30m`, `90s`,
/// `500ms`. Zero and negative durations are refused: they would mean fetching all the time.
pub fn parse_go_duration(text: &str) -> Result<std::time::Duration, String> {
    let bad = |reason: String| format!("{text:?} is not a duration like 5m0s, 1h30m or 90s: {reason}");
    let duration: kube::core::Duration = text.parse().map_err(|e: kube::core::duration::ParseError| bad(e.to_string()))?;
    if duration.is_negative() {
        return Err(format!("{text:?} must be longer than zero"));
    }
    let duration = std::time::Duration::from(duration);
    if duration.is_zero() {
        return Err(format!("{text:?} must be longer than zero"));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_go_durations_and_rejects_others() {
        assert_eq!(parse_go_duration("5m0s"), Ok(std::time::Duration::from_secs(300)));
        assert_eq!(parse_go_duration("1h30m"), Ok(std::time::Duration::from_secs(5_400)));
        assert_eq!(parse_go_duration("1500ms"), Ok(std::time::Duration::from_millis(1_500)));
        assert_eq!(parse_go_duration("1.5h"), Ok(std::time::Duration::from_secs(5_400)));
        for bad in ["", "0s", "5", "m", "5x", "-5m", "1d"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }
}
