//! Sending a run's signed report to the store (bundles-format.md 14.7 and 14.8): which
//! reports a run sends, from what `kept::last_report::keep` found ([`due`]), and sending
//! them ([`send`]), after which the kept report ConfigMap records what the store accepted.
//!
//! A run sends nothing when its outcome is the one kept, the store has it, and the report
//! interval has not passed: an unchanged run costs the store nothing beyond its fetch.
//! A push that fails is a warning and nothing more: the run's result, report and exit code
//! stay what they were, the report stays kept in the cluster, and the next run sends it.
//! The store moves the bytes (`airlock_store::ReportStore`); signing is the report's own.

use std::time::Duration;

use airlock_bundle::SigningKey;
use airlock_store::{ReportPush, ReportStore};
use jiff::{SignedDuration, Timestamp};

use crate::config::SyncSettings;
use crate::kept::meta::Names;
use crate::reports::last_report::{self, KeptNow};
use crate::reports::report::Report;
use crate::source;

/// How much sooner than the report interval a report counts as due: runs of a CronJob start
/// a few seconds apart from one period to the next, and an interval equal to the period
/// must not skip every other run.
const HEARTBEAT_SLACK: SignedDuration = SignedDuration::from_secs(10);

/// Which reports a run sends, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// The kept report, which an earlier run could not send.
    pub kept: bool,
    /// This run's own report.
    pub own: bool,
}

/// What a run whose report is `own` sends, given what it found kept (`None`: the kept
/// report could not be read or written) and the report interval `every`.
pub fn due(own: &Report, kept: Option<&KeptNow>, every: Duration) -> Due {
    let Some(kept) = kept else { return Due { kept: false, own: true } };
    let sent = |finished: Timestamp| kept.pushed.is_some_and(|pushed| pushed >= finished);
    let unsent = !kept.written && kept.found.as_ref().is_some_and(|found| !sent(found.finished_at));
    let every = SignedDuration::try_from(every).unwrap_or(SignedDuration::MAX);
    let heartbeat = kept.pushed.is_none_or(|pushed| own.finished_at.duration_since(pushed) + HEARTBEAT_SLACK >= every);
    Due { kept: unsent, own: kept.written || unsent || heartbeat }
}

/// Sends what [`due`] says to the store of `settings`, and marks on the report ConfigMap of
/// `names` what the store accepted. Does nothing unless the settings push reports.
pub async fn send(settings: &SyncSettings, client: &kube::Client, names: &Names, own: &Report, kept: Option<KeptNow>) {
    let (true, Some(key)) = (settings.reporting.push, &settings.report_key) else { return };
    let due = due(own, kept.as_ref(), settings.reporting.every);
    let reports: Vec<&Report> =
        kept.as_ref().and_then(|k| k.found.as_ref()).filter(|_| due.kept).into_iter().chain(due.own.then_some(own)).collect();
    if reports.is_empty() {
        tracing::debug!("the store has this outcome's report; none sent");
        return;
    }
    let store = match source::open(&settings.source).await {
        Ok(store) => store,
        Err(e) => return tracing::warn!("report not sent to the store (kept in the cluster; the next run sends it): {e}"),
    };
    let Some(reports_store) = store.reports() else {
        return tracing::warn!(store = %store.describe(), "this kind of store keeps no reports; none sent");
    };
    if let Some(finished) = push_all(reports_store, key, &reports).await
        && let Err(e) = last_report::mark_pushed(client, names, finished).await
    {
        // The next run sends the report again; ingest takes it once.
        tracing::warn!("the store has the report, but the cluster does not know it: {e}");
    }
}

/// Pushes `reports` in order, signed with `key`, stopping at the first the store refuses.
/// Returns when the newest one accepted finished.
async fn push_all(store: &dyn ReportStore, key: &SigningKey, reports: &[&Report]) -> Option<Timestamp> {
    let mut accepted = None;
    for report in reports {
        let push = ReportPush {
            cluster: report.cluster.parse().expect("a report names its cluster by id"),
            finished_at: report.finished_at,
            result: report.result.name().to_string(),
            envelope: report.file_bytes(Some(key)),
        };
        match store.push_report(&push).await {
            Ok(()) => {
                tracing::info!(store = %store.describe_reports(), finished = %report.finished_at, "report sent to the store");
                accepted = accepted.max(Some(report.finished_at));
            }
            Err(e) => {
                tracing::warn!("report not sent to the store (kept in the cluster; the next run sends it): {e}");
                break;
            }
        }
    }
    accepted
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use airlock_bundle::Limits;
    use airlock_store::{Latest, StoreError};
    use async_trait::async_trait;

    use super::*;
    use crate::reports::report::{RunReport, RunResult};

    const EVERY: Duration = Duration::from_secs(30 * 60);

    fn report(at: &str) -> Report {
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        r.finish(Ok(RunResult::UpToDate));
        r.finished_at = at.parse().unwrap();
        r
    }

    fn kept(written: bool, found: Option<&str>, pushed: Option<&str>) -> KeptNow {
        KeptNow { written, found: found.map(report), pushed: pushed.map(|p| p.parse().unwrap()) }
    }

    #[test]
    fn an_unchanged_run_sends_nothing_until_the_interval_passed() {
        let own = report("2026-03-01T10:05:00Z");
        let quiet = kept(false, Some("2026-03-01T10:00:00Z"), Some("2026-03-01T10:00:00Z"));
        assert_eq!(due(&own, Some(&quiet), EVERY), Due { kept: false, own: false });
        let late = report("2026-03-01T10:30:00Z");
        assert_eq!(due(&late, Some(&quiet), EVERY), Due { kept: false, own: true }, "the heartbeat");
        let minute = Duration::from_secs(60);
        let next = report("2026-03-01T10:00:57Z");
        assert_eq!(due(&next, Some(&quiet), minute), Due { kept: false, own: true }, "the next run of a CronJob, a little early");
        assert_eq!(due(&report("2026-03-01T10:00:45Z"), Some(&quiet), minute), Due { kept: false, own: false });
    }

    #[test]
    fn news_is_sent_at_once() {
        let own = report("2026-03-01T10:05:00Z");
        let news = kept(true, Some("2026-03-01T10:00:00Z"), Some("2026-03-01T10:00:00Z"));
        assert_eq!(due(&own, Some(&news), EVERY), Due { kept: false, own: true }, "the kept one is superseded");
        assert_eq!(due(&own, None, EVERY), Due { kept: false, own: true }, "an unreadable kept report");
        assert_eq!(due(&own, Some(&kept(false, None, None)), EVERY), Due { kept: false, own: true }, "never sent before");
    }

    #[test]
    fn a_report_a_failed_push_left_is_sent_by_the_next_run_before_its_own() {
        let own = report("2026-03-01T10:05:00Z");
        let left = kept(false, Some("2026-03-01T10:04:00Z"), Some("2026-03-01T10:00:00Z"));
        assert_eq!(due(&own, Some(&left), EVERY), Due { kept: true, own: true });
        let unmarked = kept(false, Some("2026-03-01T10:04:00Z"), None);
        assert_eq!(due(&own, Some(&unmarked), EVERY), Due { kept: true, own: true });
    }

    /// A store that accepts `accept` pushes, then refuses, recording what it took.
    struct Flaky {
        accept: usize,
        took: Mutex<Vec<ReportPush>>,
    }

    #[async_trait]
    impl ReportStore for Flaky {
        fn describe_reports(&self) -> String {
            "flaky".into()
        }
        async fn push_report(&self, report: &ReportPush) -> Result<(), StoreError> {
            let mut took = self.took.lock().unwrap();
            if took.len() == self.accept {
                return Err(StoreError::Config { store: "flaky".into(), message: "read-only for reports".into() });
            }
            took.push(report.clone());
            Ok(())
        }
        async fn latest_report(&self, _: &airlock_bundle::ClusterId, _: Option<&str>, _: &Limits) -> Result<Latest, StoreError> {
            Ok(Latest::None)
        }
    }

    #[tokio::test]
    async fn a_refused_push_stops_there_and_changes_no_report() {
        let key = SigningKey::from_seed([4; 32]);
        let (older, own) = (report("2026-03-01T10:04:00Z"), report("2026-03-01T10:05:00Z"));
        let before = own.clone();
        let store = Flaky { accept: 1, took: Mutex::new(Vec::new()) };
        assert_eq!(push_all(&store, &key, &[&older, &own]).await, Some(older.finished_at), "only the first was accepted");
        assert_eq!(own, before, "the run's report is as it was");
        let took = store.took.into_inner().unwrap();
        assert_eq!(took.len(), 1);
        assert_eq!(took[0].envelope, older.file_bytes(Some(&key)), "the report file's exact bytes");
        let refusing = Flaky { accept: 0, took: Mutex::new(Vec::new()) };
        assert_eq!(push_all(&refusing, &key, &[&own]).await, None, "nothing is marked as sent");
    }
}
