//! Missed reports (spec 14.9): a SveltosCluster whose puller has sent nothing for more
//! report intervals than its `spec.consecutiveFailureThreshold` allows is `Down`, the way
//! Sveltos's own cluster manager marks a pull-mode cluster whose agent went quiet. As there,
//! `ready` stays as it is: Sveltos's selectors would read `false` as the cluster no longer
//! matching and withdraw its add-ons.
//!
//! Sveltos counts one failure per reconcile (about a minute) once the agent's last report
//! is older than ten minutes; a puller may report once a day, so here a failure is one
//! report interval missed, the cluster's own (`airlock.dev/report-interval`).
//!
//! A pure function over the SveltosCluster's JSON, like `status`: `online` asks it about
//! every cluster a read of the store found nothing new for, and writes what it returns.
//! A cluster that never reported is left alone; the next report undoes all of it (14.5).

use airlock_bundle::statement::rfc3339;
use airlock_bundle::vocabulary::REPORT_INTERVAL_ANNOTATION;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value};

use super::status::{OWNED_STATUS, Update};
use airlock_cli::duration::{format_duration, parse_duration};

/// The report interval of a SveltosCluster without the annotation: the puller's default.
pub const DEFAULT_INTERVAL: SignedDuration = SignedDuration::from_mins(30);
/// `spec.consecutiveFailureThreshold` when unset, as in Sveltos's CRD.
pub const DEFAULT_THRESHOLD: i64 = 3;
/// Why a cluster gone quiet is `Down`: the first word of its `failureMessage`.
pub const REASON: &str = "ReportsMissing";

/// What `now` changes on `object`, a SveltosCluster of which no new report came: its
/// missed intervals, and once they reach the threshold, `Down`. `None` when nothing
/// changes.
pub fn missed(object: &Value, now: Timestamp) -> Option<Update> {
    let status = object["status"].as_object()?;
    let last: Timestamp = status.get("agentLastReportTime")?.as_str()?.parse().ok()?;
    let interval = object["metadata"]["annotations"][REPORT_INTERVAL_ANNOTATION]
        .as_str()
        .and_then(|text| parse_duration(text).ok())
        .unwrap_or(DEFAULT_INTERVAL);
    let threshold = object["spec"]["consecutiveFailureThreshold"].as_i64().filter(|t| *t > 0).unwrap_or(DEFAULT_THRESHOLD);
    // The first interval is the puller's to use: a report is due within it.
    let missed = (now.duration_since(last).as_secs() / interval.as_secs().max(1) - 1).max(0);
    let down = missed >= threshold;
    let was_down = status.get("connectionStatus").and_then(Value::as_str) == Some("Down");
    if status.get("connectionFailures").and_then(Value::as_i64).unwrap_or(0) == missed && down == was_down {
        return None;
    }
    let mut new: Map<String, Value> = OWNED_STATUS.iter().filter_map(|k| Some((k.to_string(), status.get(*k)?.clone()))).collect();
    new.insert("connectionFailures".into(), missed.into());
    new.insert("connectionStatus".into(), if down { "Down" } else { "Healthy" }.into());
    if down {
        let message = format!(
            "{REASON}: no report since {}: {missed} report intervals of {} missed",
            rfc3339::format(&last),
            format_duration(interval)
        );
        new.insert("failureMessage".into(), message.into());
    }
    Some(Update { status: new, annotations: Default::default() })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const LAST: &str = "2026-03-01T10:00:00Z";

    fn cluster(interval: Option<&str>, threshold: Option<i64>, status: Value) -> Value {
        let annotations = interval.map_or(json!({}), |i| json!({REPORT_INTERVAL_ANNOTATION: i}));
        let spec = threshold.map_or(json!({"pullMode": true}), |t| json!({"pullMode": true, "consecutiveFailureThreshold": t}));
        json!({"metadata": {"name": "a", "namespace": "fleet", "annotations": annotations}, "spec": spec, "status": status})
    }

    fn healthy() -> Value {
        json!({"ready": true, "version": "v1.20.2", "agentLastReportTime": LAST, "connectionStatus": "Healthy", "connectionFailures": 0})
    }

    fn at(minutes: i64) -> Timestamp {
        LAST.parse::<Timestamp>().unwrap() + SignedDuration::from_mins(minutes)
    }

    #[test]
    fn within_the_first_interval_nothing_is_missed() {
        assert_eq!(missed(&cluster(Some("5m"), None, healthy()), at(9)), None);
    }

    #[test]
    fn counts_missed_intervals_and_is_down_but_still_ready_at_the_threshold() {
        let object = cluster(Some("5m"), None, healthy());
        let two = missed(&object, at(15)).expect("two intervals missed");
        assert_eq!((two.status["connectionFailures"].clone(), two.status["ready"].clone()), (json!(2), json!(true)));
        assert_eq!(two.status["connectionStatus"], "Healthy");
        let down = missed(&object, at(20)).expect("three missed");
        assert_eq!(down.status["ready"], true, "Sveltos leaves ready alone: selectors would drop the cluster");
        assert_eq!(down.status["connectionStatus"], "Down");
        let message = "ReportsMissing: no report since 2026-03-01T10:00:00Z: 3 report intervals of 5m missed";
        assert_eq!(down.status["failureMessage"], message);
        assert_eq!(down.status["version"], "v1.20.2", "the rest of the status stays");
        assert!(down.annotations.is_empty());
    }

    #[test]
    fn the_threshold_and_interval_are_the_clusters_own() {
        let strict = cluster(Some("1h"), Some(1), healthy());
        assert_eq!(missed(&strict, at(119)), None, "within the second hour, the first is not missed yet");
        assert_eq!(missed(&strict, at(120)).expect("one missed").status["connectionStatus"], "Down");
        let default = cluster(None, None, healthy());
        assert_eq!(missed(&default, at(119)).expect("three of 30m missed").status["connectionFailures"], 2);
        assert_eq!(missed(&default, at(120)).expect("three of 30m missed").status["connectionStatus"], "Down");
    }

    #[test]
    fn writes_only_what_changed() {
        let object = cluster(Some("5m"), None, healthy());
        let down = missed(&object, at(20)).unwrap();
        let mut status = healthy();
        for (k, v) in &down.status {
            status[k] = v.clone();
        }
        let later = cluster(Some("5m"), None, status.clone());
        assert_eq!(missed(&later, at(21)), None, "the same count: nothing to write");
        let more = missed(&later, at(25)).expect("four missed");
        assert_eq!(more.status["connectionFailures"], 4);
        assert!(more.status["failureMessage"].as_str().unwrap().contains(": 4 report intervals of 5m missed"), "{:?}", more.status);
    }

    #[test]
    fn a_cluster_that_never_reported_is_left_alone() {
        assert_eq!(missed(&cluster(Some("5m"), None, json!({})), at(600)), None);
        assert_eq!(missed(&json!({"metadata": {}}), at(600)), None);
    }
}
