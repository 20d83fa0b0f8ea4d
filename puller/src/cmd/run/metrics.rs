//! What `airlock-puller run` tells Prometheus and the kubelet: metrics folded from each
//! run's [`Report`], rendered in the Prometheus text format (version 0.0.4), and the
//! health rule behind `/healthz`. Serving them over HTTP is `serve`'s job.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use airlock_cli::http::family;
use jiff::{SignedDuration, Timestamp};

use crate::reports::report::{Report, RunReport, RunResult};

/// Runs without a success before `/healthz` turns unhealthy.
const HEALTHY_INTERVALS: u32 = 3;

/// Everything the puller exports, updated after each run.
#[derive(Debug, Default)]
pub struct Metrics {
    runs: BTreeMap<&'static str, u64>,
    applied_version: Option<u64>,
    bundle_expires: Option<Timestamp>,
    last_success: Option<Timestamp>,
    /// Objects per action in the last run.
    objects: BTreeMap<String, u64>,
    drift_corrected: u64,
}

impl Metrics {
    pub fn new() -> Metrics {
        // Every result starts at zero so `rate()` works from the first scrape.
        let runs = ["ok", "error", "rejected"].into_iter().map(|r| (r, 0)).collect();
        Metrics { runs, ..Metrics::default() }
    }

    pub fn record(&mut self, report: &Report) {
        *self.runs.entry(report.result.metric_label()).or_insert(0) += 1;
        if report.applied_version.is_some() {
            self.applied_version = report.applied_version;
        }
        if let Some(bundle) = &report.bundle {
            self.bundle_expires = Some(bundle.expires);
        }
        if matches!(report.result, RunResult::Applied | RunResult::UpToDate | RunResult::DryRun | RunResult::Deferred) {
            self.last_success = Some(report.finished_at);
        }
        self.objects = report.counts();
        self.drift_corrected += report.drift.corrected;
    }

    /// Healthy when a run succeeded within the last few intervals.
    pub fn healthy(&self, now: Timestamp, interval: Duration) -> bool {
        let window = SignedDuration::try_from(interval * HEALTHY_INTERVALS).unwrap_or(SignedDuration::MAX);
        self.last_success.is_some_and(|t| now.duration_since(t) <= window)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        family(&mut out, "airlock_sync_runs_total", "counter", "Sync runs by result.");
        for (result, n) in &self.runs {
            let _ = writeln!(out, "airlock_sync_runs_total{{result=\"{result}\"}} {n}");
        }
        let gauges = [
            ("airlock_applied_version", "Bundle version applied to this cluster.", self.applied_version.map(|v| v as i64)),
            (
                "airlock_bundle_expires_timestamp_seconds",
                "Expiry of the newest verified bundle, Unix time.",
                self.bundle_expires.map(Timestamp::as_second),
            ),
            (
                "airlock_last_success_timestamp_seconds",
                "End of the last successful run, Unix time.",
                self.last_success.map(Timestamp::as_second),
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(v) = value {
                family(&mut out, name, "gauge", help);
                let _ = writeln!(out, "{name} {v}");
            }
        }
        family(&mut out, "airlock_objects", "gauge", "Objects per action in the last run.");
        for (action, n) in &self.objects {
            let _ = writeln!(out, "airlock_objects{{action=\"{action}\"}} {n}");
        }
        family(&mut out, "airlock_drift_corrected_total", "counter", "Drifted objects re-applied.");
        let _ = writeln!(out, "airlock_drift_corrected_total {}", self.drift_corrected);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Action, Outcome};
    use crate::reports::failure::Failure;
    use crate::reports::report::test_result;

    fn report(result: Result<RunResult, Failure>, actions: &[Action]) -> Report {
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        let results = actions.iter().enumerate().map(|(i, a)| test_result("ConfigMap", &format!("c{i}"), *a, None)).collect();
        r.record(&Outcome { results, ..Outcome::default() }, false);
        r.applied_version = Some(4);
        r.finish(result);
        r
    }

    #[test]
    fn renders_the_text_format() {
        let mut m = Metrics::new();
        m.record(&report(Ok(RunResult::Applied), &[Action::Created, Action::Created, Action::DriftCorrected]));
        m.record(&report(Err(Failure::BelowFloor { version: 3, floor: 4 }), &[]));
        let text = m.render();
        for line in [
            "# TYPE airlock_sync_runs_total counter",
            "airlock_sync_runs_total{result=\"ok\"} 1",
            "airlock_sync_runs_total{result=\"rejected\"} 1",
            "airlock_sync_runs_total{result=\"error\"} 0",
            "airlock_applied_version 4",
            "airlock_drift_corrected_total 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} missing in\n{text}");
        }
        assert!(text.lines().any(|l| l.starts_with("airlock_last_success_timestamp_seconds ")), "{text}");
        // Every sample line is `name{labels} value` with a numeric value, after its TYPE.
        let mut typed = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                typed.push(rest.split(' ').next().unwrap().to_string());
            } else if !line.starts_with('#') {
                let (name, value) = line.rsplit_once(' ').unwrap();
                assert!(value.parse::<f64>().is_ok(), "{line}");
                let metric = name.split('{').next().unwrap();
                assert_eq!(typed.last().map(String::as_str), Some(metric), "{line}");
            }
        }
    }

    #[test]
    fn objects_gauge_is_the_last_run() {
        let mut m = Metrics::new();
        m.record(&report(Ok(RunResult::Applied), &[Action::Created]));
        m.record(&report(Ok(RunResult::UpToDate), &[Action::Unchanged]));
        let text = m.render();
        assert!(text.contains("airlock_objects{action=\"unchanged\"} 1"), "{text}");
        assert!(!text.contains("action=\"created\""), "{text}");
    }

    #[test]
    fn healthy_only_after_a_recent_success() {
        let mut m = Metrics::new();
        let interval = Duration::from_secs(60);
        let now = Timestamp::now();
        assert!(!m.healthy(now, interval), "no run yet");
        m.record(&report(Err(Failure::KubeClient("down".into())), &[]));
        assert!(!m.healthy(now, interval), "only a failed run");
        m.record(&report(Ok(RunResult::UpToDate), &[]));
        assert!(m.healthy(Timestamp::now(), interval));
        m.record(&report(Ok(RunResult::Deferred), &[]));
        assert!(m.healthy(Timestamp::now(), interval), "a run deferred by the active window is a success");
        assert!(m.render().contains("airlock_sync_runs_total{result=\"ok\"} 2"), "{}", m.render());
        assert!(!m.healthy(Timestamp::now() + SignedDuration::from_secs(181), interval), "three intervals passed");
    }
}
