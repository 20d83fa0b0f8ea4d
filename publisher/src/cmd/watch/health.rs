//! What `watch` tells the kubelet and Prometheus (`--metrics-addr`): the outcome of each
//! publish folded into counters, and the rule behind `/healthz`. Serving them is
//! `airlock_cli::http`'s job; nothing here talks to the cluster or the store.
//!
//! A standby replica is healthy: waiting on the Lease is its job. The publishing one turns
//! unhealthy only when every run failed for [`UNHEALTHY_AFTER`] resync periods, so that a
//! registry down for a while does not have the kubelet restart a publisher that would
//! fail the same way, while one stuck failing is restarted (and its Lease handed over).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_cli::http::{self, Respond, family};
use jiff::{SignedDuration, Timestamp};

use crate::publish::{Published, Status};

/// Resync periods of failures only before `/healthz` says so.
pub const UNHEALTHY_AFTER: u32 = 3;

/// The counters of one `watch` process.
#[derive(Debug, Default)]
pub struct Health {
    runs: BTreeMap<&'static str, u64>,
    bundles: u64,
    last_success: Option<Timestamp>,
    /// When the current run of failures began; none after a success.
    failing_since: Option<Timestamp>,
    leader: bool,
}

impl Health {
    pub fn new() -> Health {
        // Every result starts at zero so `rate()` works from the first scrape.
        let runs = ["ok", "partial", "error"].into_iter().map(|r| (r, 0)).collect();
        Health { runs, ..Health::default() }
    }

    /// This replica holds the Lease (or lost it).
    pub fn lead(&mut self, leader: bool) {
        self.leader = leader;
    }

    /// A finished run: what it published, or why it failed as a whole.
    pub fn record(&mut self, run: Result<&Published, ()>, now: Timestamp) {
        let result = match run {
            Ok(p) if p.any_failed() => "partial",
            Ok(_) => "ok",
            Err(()) => "error",
        };
        *self.runs.entry(result).or_insert(0) += 1;
        if let Ok(published) = run {
            let written = published.rows.iter().filter(|r| matches!(r.status, Status::Published | Status::Refreshed)).count();
            self.bundles += written as u64;
        }
        // A partial run still published every cluster it could: the publisher works.
        if result == "error" {
            self.failing_since.get_or_insert(now);
        } else {
            self.last_success = Some(now);
            self.failing_since = None;
        }
    }

    /// Unhealthy only while leading and failing for [`UNHEALTHY_AFTER`] periods of `resync`.
    pub fn healthy(&self, now: Timestamp, resync: Duration) -> bool {
        let window = SignedDuration::try_from(resync * UNHEALTHY_AFTER).unwrap_or(SignedDuration::MAX);
        !self.leader || self.failing_since.is_none_or(|since| now.duration_since(since) <= window)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        family(&mut out, "airlock_publish_runs_total", "counter", "Publish runs by result.");
        for (result, n) in &self.runs {
            let _ = writeln!(out, "airlock_publish_runs_total{{result=\"{result}\"}} {n}");
        }
        family(&mut out, "airlock_publish_bundles_total", "counter", "Bundles signed and written (new versions and refreshes).");
        let _ = writeln!(out, "airlock_publish_bundles_total {}", self.bundles);
        family(&mut out, "airlock_publisher_leader", "gauge", "1 while this replica holds the Lease and publishes.");
        let _ = writeln!(out, "airlock_publisher_leader {}", u8::from(self.leader));
        if let Some(t) = self.last_success {
            let name = "airlock_publish_last_success_timestamp_seconds";
            family(&mut out, name, "gauge", "End of the last run that published, Unix time.");
            let _ = writeln!(out, "{name} {}", t.as_second());
        }
        out
    }
}

/// `/healthz` and `/metrics` over `health`.
pub fn responder(health: Arc<Mutex<Health>>, resync: Duration) -> Respond {
    Arc::new(move |path: &str| {
        let health = health.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let healthy = if health.healthy(Timestamp::now(), resync) { Ok(()) } else { Err("every publish failed for 3 resync periods") };
        http::health_or_metrics(path, healthy, || health.render())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::Row;

    fn published(statuses: &[Status]) -> Published {
        let row = |status: &Status| Row {
            cluster: "fleet/edge".parse().unwrap(),
            version: None,
            digest: None,
            objects: None,
            status: status.clone(),
            warnings: vec![],
            failures: vec![],
        };
        let rows = statuses.iter().map(row).collect();
        Published { rows, ..Published::default() }
    }

    #[test]
    fn a_standby_is_healthy_and_a_leader_only_until_it_failed_for_three_periods() {
        let (mut h, resync, t0) = (Health::new(), Duration::from_secs(60), Timestamp::now());
        h.record(Err(()), t0);
        assert!(h.healthy(t0 + SignedDuration::from_secs(3600), resync), "standing by");
        h.lead(true);
        assert!(h.healthy(t0 + SignedDuration::from_secs(180), resync));
        assert!(!h.healthy(t0 + SignedDuration::from_secs(181), resync), "failing for three periods");
        h.record(Ok(&published(&[Status::Failed("x".into()), Status::Published])), t0 + SignedDuration::from_secs(200));
        assert!(h.healthy(t0 + SignedDuration::from_secs(300), resync), "a partial run published");
    }

    #[test]
    fn renders_runs_bundles_and_the_lease() {
        let mut h = Health::new();
        h.lead(true);
        h.record(Ok(&published(&[Status::Published, Status::Unchanged, Status::Refreshed])), Timestamp::now());
        h.record(Ok(&published(&[Status::Unchanged])), Timestamp::now());
        h.record(Err(()), Timestamp::now());
        let text = h.render();
        for line in [
            "# TYPE airlock_publish_runs_total counter",
            "airlock_publish_runs_total{result=\"ok\"} 2",
            "airlock_publish_runs_total{result=\"error\"} 1",
            "airlock_publish_runs_total{result=\"partial\"} 0",
            "airlock_publish_bundles_total 2",
            "airlock_publisher_leader 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} missing in\n{text}");
        }
        assert!(text.lines().any(|l| l.starts_with("airlock_publish_last_success_timestamp_seconds ")), "{text}");
    }

    #[test]
    fn answers_by_path() {
        let health = Arc::new(Mutex::new(Health::new()));
        let respond = responder(health.clone(), Duration::from_secs(60));
        assert_eq!(respond("/healthz").status, "200 OK");
        assert_eq!(respond("/metrics").content_type, http::PROMETHEUS);
        assert_eq!(respond("/other").status, "404 Not Found");
        let mut h = health.lock().unwrap();
        h.lead(true);
        h.failing_since = Some(Timestamp::now() - SignedDuration::from_secs(181));
        drop(h);
        assert_eq!(respond("/healthz").status, "503 Service Unavailable");
    }
}
