//! One grammar for every duration a flag, a settings file or an annotation of either binary
//! takes: jiff's friendly format (`90s`, `30m`, `1h30m`, `5m0s`, `1d 12h`) or ISO 8601
//! (`PT1H30M`), where a day is 24 hours and a week 7 days, as validity periods count them.
//! Shorter than a second is refused: no interval or validity of Airlock means anything
//! below that, and zero would mean "always" or "never" depending on the reader.
//!
//! Sveltos's own `metav1.Duration` fields are Go durations and are read with
//! `kube::core::Duration` where they appear, not here.

use jiff::{SignedDuration, Span, SpanRelativeTo};

/// Why a duration was refused; the message quotes the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    #[error("{text:?} is not a duration like 90s, 30m, 1h30m or 7d: {reason}")]
    Syntax { text: String, reason: String },
    #[error("{text:?} is shorter than one second")]
    TooShort { text: String },
}

/// Parses `text` as a positive duration of at least one second.
pub fn parse_duration(text: &str) -> Result<SignedDuration, DurationError> {
    let syntax = |reason: String| DurationError::Syntax { text: text.to_string(), reason };
    let span: Span = text.trim().parse().map_err(|e: jiff::Error| syntax(e.to_string()))?;
    let duration = span.to_duration(SpanRelativeTo::days_are_24_hours()).map_err(|e| syntax(e.to_string()))?;
    if duration < SignedDuration::from_secs(1) {
        return Err(DurationError::TooShort { text: text.to_string() });
    }
    Ok(duration)
}

/// [`parse_duration`], as the standard library's type.
pub fn parse_std_duration(text: &str) -> Result<std::time::Duration, DurationError> {
    let duration = parse_duration(text)?;
    Ok(std::time::Duration::try_from(duration).expect("a duration of at least one second is not negative"))
}

/// `d` in its largest whole unit, as [`parse_duration`] reads it back: `30m`, `1h`, `7d`,
/// `90s`.
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
    fn reads_one_grammar_with_days_of_24_hours() {
        for (text, secs) in [
            ("90s", 90),
            ("30m", 1_800),
            ("1h30m", 5_400),
            ("5m0s", 300),
            ("12h", 43_200),
            ("30d", 2_592_000),
            ("1d 12h", 129_600),
            ("2w", 1_209_600),
            ("PT1H30M", 5_400),
            ("3600s", 3_600),
        ] {
            assert_eq!(parse_duration(text), Ok(SignedDuration::from_secs(secs)), "{text}");
        }
        assert_eq!(parse_std_duration("1h30m"), Ok(std::time::Duration::from_secs(5_400)));
    }

    #[test]
    fn refuses_what_is_not_a_positive_duration() {
        for text in ["", "soon", "5", "5x", "1.5.h"] {
            assert!(matches!(parse_duration(text), Err(DurationError::Syntax { .. })), "{text}");
        }
        for text in ["0s", "-5m", "500ms"] {
            assert_eq!(parse_duration(text), Err(DurationError::TooShort { text: text.into() }), "{text}");
        }
    }

    #[test]
    fn formats_in_the_largest_whole_unit_and_reads_back() {
        for (secs, text) in [(1_800, "30m"), (3_600, "1h"), (90, "90s"), (604_800, "7d"), (5_400, "90m")] {
            let d = SignedDuration::from_secs(secs);
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text), Ok(d));
        }
    }
}
