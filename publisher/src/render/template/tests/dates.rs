//! Date functions against the render's clock (2024-05-01 10:00:00 UTC here), Sprig's
//! documented examples, Go layouts and durations.

use super::*;

#[test]
fn fn_now_and_date_read_the_render_clock() {
    assert_eq!(seeded("{{ now }}"), "2024-05-01 10:00:00 +0000 UTC");
    assert_eq!(
        seeded(r#"{{ now | date "2006-01-02" }} {{ date "Mon Jan _2 15:04:05 MST 2006" now }}"#),
        "2024-05-01 Wed May  1 10:00:00 UTC 2024"
    );
    assert_eq!(
        seeded(r#"{{ date "2006" 0 }} {{ date "2006-01-02" "not a time" }} {{ htmlDate now }} {{ unixEpoch now }}"#),
        "1970 2024-05-01 2024-05-01 1714557600"
    );
}

#[test]
fn rejects_the_clock_functions_without_a_clock() {
    for (text, function) in [("{{ now }}", "now"), (r#"{{ date "2006" "x" }}"#, "date"), ("{{ ago 0 }}", "ago")] {
        let err = failure(text);
        assert_eq!(
            err,
            TemplateError::Unavailable { at: at(1, 4), function: function.into(), reason: Unavailable::WithoutClock },
            "{text}"
        );
        assert!(err.to_string().contains("no clock"), "{err}");
    }
    // Functions that need no clock still work.
    assert_eq!(ok(r#"{{ toDate "2006-01-02" "2017-12-31" | date "02/01/2006" }} {{ date "2006" 0 }}"#), "31/12/2017 1970");
}

#[test]
fn fn_date_in_zone_uses_the_time_zone_database() {
    assert_eq!(seeded(r#"{{ dateInZone "2006-01-02 15:04 MST -07:00" now "America/New_York" }}"#), "2024-05-01 06:00 EDT -04:00");
    assert_eq!(
        seeded(
            r#"{{ date_in_zone "15:04" now "Nowhere/Zone" }} {{ dateInZone "15:04 MST" now "Local" }} {{ htmlDateInZone now "Asia/Tokyo" }}"#
        ),
        "10:00 10:00 UTC 2024-05-01"
    );
}

#[test]
fn fn_to_date_parses_go_layouts() {
    assert_eq!(ok(r#"{{ toDate "2006-01-02" "2017-12-31" | date "02/01/2006" }}"#), "31/12/2017");
    assert_eq!(ok(r#"{{ toDate "2006-01-02T15:04:05Z07:00" "2024-02-29T23:30:00+02:00" | unixEpoch }}"#), "1709242200");
    assert_eq!(ok(r#"{{ toDate "02 Jan 06 15:04 MST" "05 Mar 21 08:15 PST" }}"#), "2021-03-05 08:15:00 +0000 PST");
    assert_eq!(ok(r#"{{ toDate "2006-01-02" "nope" }}"#), "0001-01-01 00:00:00 +0000 UTC");
    assert!(error_message(r#"{{ mustToDate "2006-01-02" "2017-02-30" }}"#).contains("day out of range"));
    assert!(error_message(r#"{{ mustToDate "2006-01-02" "2017-12-31 trailing" }}"#).contains("extra text"));
}

#[test]
fn fn_date_modify_and_ago() {
    assert_eq!(
        seeded(r#"{{ now | dateModify "-1.5h" }}|{{ now | date_modify "bad" }}"#),
        "2024-05-01 08:30:00 +0000 UTC|2024-05-01 10:00:00 +0000 UTC"
    );
    assert_eq!(
        seeded(r#"{{ now | mustDateModify "90m" | date "15:04" }} {{ toDate "2006-01-02" "2024-04-30" | ago }} {{ ago now }}"#),
        "11:30 34h0m0s 0s"
    );
    assert!(error_message(r#"{{ toDate "2006-01-02" "2024-05-01" | mustDateModify "bad" }}"#).contains("invalid duration"));
    assert!(error_message(r#"{{ dateModify "1h" "2024-05-01" }}"#).contains("argument 2 must be a time"));
    assert!(error_message(r#"{{ unixEpoch 5 }}"#).contains("must be a time"));
}

#[test]
fn fn_duration_and_duration_round() {
    assert_eq!(ok(r#"{{ duration "95" }} {{ duration 3600 }} {{ duration "x" }} {{ duration 1.5 }}"#), "1m35s 1h0m0s 0s 0s");
    assert_eq!(
        ok(r#"{{ durationRound "2h10m5s" }} {{ durationRound "2400h10m5s" }} {{ durationRound "bad" }} {{ durationRound 90000000000 }}"#),
        "2h 3mo 0s 1m"
    );
    assert_eq!(seeded(r#"{{ toDate "2006-01-02" "2022-04-01" | durationRound }}"#), "2y");
}
