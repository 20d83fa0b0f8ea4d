//! The status report of a run: what was verified and applied, per-object results, drift,
//! refusals, errors and the Kubernetes version, so an operator can carry proof of what a
//! disconnected cluster did back across the gap, and the one line that sums it up.
//!
//! The payload, its file name and its signing are the contract's (`airlock_bundle::report`);
//! this module fills a report from a run. Writing it to `--report-to` is `report_writer`'s,
//! keeping the latest one in the cluster `kept::last_report`'s. Secret values never get
//! here: results carry object ids, and the detail of a Secret's result, or of any object
//! read from an encrypted file (a diff could show its data), is dropped.

pub use airlock_bundle::report::{BundleSeen, Drift, PartDrift, ProfileNotes, RunResult};
use jiff::Timestamp;

use crate::engine::{Action, ObjectResult, Outcome};
use crate::reports::failure::Failure;

/// One run's report: the payload of spec 14.3 with the engine's per-object results.
pub type Report = airlock_bundle::report::PullReport<ObjectResult>;

/// What a run adds to its report beyond the payload's own methods: the engine's outcome
/// and how the run ended.
pub trait RunReport {
    /// Records what the engine did; `drift_pass` when it was a drift check.
    fn record(&mut self, outcome: &Outcome, drift_pass: bool);
    /// Closes the report with the run's result.
    fn finish(&mut self, result: Result<RunResult, Failure>);
    /// How many objects got each action, for summaries and metrics.
    fn counts(&self) -> std::collections::BTreeMap<String, u64>;
}

impl RunReport for Report {
    fn record(&mut self, outcome: &Outcome, drift_pass: bool) {
        self.api_requests += outcome.api_requests;
        for r in &outcome.results {
            match r.action {
                Action::DriftCorrected => self.drift.count(&r.profile, true),
                Action::Failed | Action::WouldConfigure | Action::WouldCreate if drift_pass => self.drift.count(&r.profile, false),
                Action::Refused => self.refused.push(r.id.to_string()),
                _ => {}
            }
            self.objects.push(redacted(r));
        }
    }

    fn finish(&mut self, result: Result<RunResult, Failure>) {
        self.finished_at = Timestamp::now();
        self.duration_ms = (self.finished_at - self.started_at).get_milliseconds().max(0) as u64;
        match result {
            Ok(r) => self.result = r,
            Err(f) => {
                self.result = if f.is_rejection() { RunResult::Rejected } else { RunResult::Error };
                self.error = Some(f.to_string());
            }
        }
    }

    fn counts(&self) -> std::collections::BTreeMap<String, u64> {
        let mut counts = std::collections::BTreeMap::new();
        for r in &self.objects {
            *counts.entry(action_name(r.action)).or_insert(0) += 1;
        }
        counts
    }
}

/// A result safe to show: the detail of a Secret, or of any object read from an encrypted
/// file, is dropped, since a diff or a validation error can quote its data.
pub fn redacted(result: &ObjectResult) -> ObjectResult {
    let mut r = result.clone();
    if r.sealed {
        r.detail = r.detail.map(|_| "(detail of an object from an encrypted file withheld)".into());
    } else if r.id.kind == "Secret" && r.id.group.is_empty() {
        r.detail = r.detail.map(|_| "(detail of a Secret withheld)".into());
    }
    r
}

/// The serde name of an action (`created`, `driftCorrected`...).
pub fn action_name(action: Action) -> String {
    serde_json::to_value(action).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// One line saying what the run did.
pub fn summary(report: &Report) -> String {
    let counts: Vec<String> = report.counts().iter().map(|(action, n)| format!("{n} {action}")).collect();
    let counts = if counts.is_empty() { String::new() } else { format!(": {}", counts.join(", ")) };
    let version = report.bundle.as_ref().map_or("?".to_string(), |b| b.version.to_string());
    let drift = if report.drift.found > 0 {
        format!(" (drift: {} found, {} corrected)", report.drift.found, report.drift.corrected)
    } else {
        String::new()
    };
    if let Some(at) = report.decommissioned {
        let at = airlock_bundle::statement::rfc3339::format(&at);
        return match report.result {
            RunResult::Applied => format!("{} applied its final bundle, version {version}{counts}: decommissioned at {at}", report.cluster),
            _ => format!("{} was decommissioned at {at}: nothing to do", report.cluster),
        };
    }
    match report.result {
        RunResult::Applied => format!("{} applied version {version}{counts}", report.cluster),
        RunResult::UpToDate => format!("{} is up to date at version {version}{drift}{counts}", report.cluster),
        RunResult::DryRun => format!("{} dry run of version {version}, nothing written{drift}{counts}", report.cluster),
        RunResult::Deferred => format!("{} deferred version {version}: the active window is closed, nothing changed", report.cluster),
        RunResult::Rejected | RunResult::Error => {
            format!("{}: {}", report.cluster, report.error.as_deref().unwrap_or("failed"))
        }
    }
}

/// A result for an object of a core kind in namespace `web`, profile `ClusterProfile.web`.
#[cfg(test)]
pub fn test_result(kind: &str, name: &str, action: Action, detail: Option<&str>) -> ObjectResult {
    let id = crate::engine::ObjectId {
        group: String::new(),
        version: "v1".into(),
        kind: kind.into(),
        namespace: Some("web".into()),
        name: name.into(),
    };
    ObjectResult { id, profile: "ClusterProfile.web".into(), action, detail: detail.map(str::to_string), sealed: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::Limits;
    use airlock_bundle::envelope::{self, REPORT_PAYLOAD_TYPE};
    use airlock_bundle::{Keyring, SigningKey};

    fn result(kind: &str, action: Action, detail: Option<&str>) -> ObjectResult {
        test_result(kind, "x", action, detail)
    }

    fn report() -> Report {
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        r.record(
            &Outcome {
                results: vec![
                    result("ConfigMap", Action::Created, None),
                    result("Secret", Action::Configured, Some("data.password: hunter2 -> swordfish")),
                    result("ConfigMap", Action::Refused, None),
                ],
                api_requests: 4,
                ..Outcome::default()
            },
            false,
        );
        r.finish(Ok(RunResult::Applied));
        r
    }

    #[test]
    fn signed_report_verifies_with_the_cluster_key() {
        let key = SigningKey::from_seed([9; 32]);
        let r = report();
        let bytes = r.file_bytes(Some(&key));
        let decoded = envelope::decode(&bytes, REPORT_PAYLOAD_TYPE, &Limits::SPEC).unwrap();
        let keyring = Keyring::new(1, 1, vec![key.public()], &Limits::SPEC).unwrap();
        assert_eq!(keyring.check(&decoded).unwrap(), vec![key.public().key_id()]);
        let back: Report = serde_json::from_slice(&decoded.payload).unwrap();
        assert_eq!(back, r);
        let other = Keyring::new(1, 1, vec![SigningKey::from_seed([8; 32]).public()], &Limits::SPEC).unwrap();
        assert!(other.check(&decoded).is_err(), "another cluster's key must not verify it");
    }

    #[test]
    fn unsigned_report_is_plain_json() {
        let r = report();
        let back: Report = serde_json::from_slice(&r.file_bytes(None)).unwrap();
        assert_eq!(back.result, RunResult::Applied);
        let json: serde_json::Value = serde_json::from_slice(&r.to_json()).unwrap();
        assert_eq!(json["result"], "applied");
        assert_eq!(json["apiRequests"], 4);
        assert_eq!(json["objects"][0]["action"], "created");
    }

    #[test]
    fn never_carries_secret_details() {
        let text = String::from_utf8(report().to_json()).unwrap();
        assert!(!text.contains("hunter2") && !text.contains("swordfish"), "{text}");
    }

    #[test]
    fn never_carries_details_of_an_object_read_from_an_encrypted_file() {
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        let sealed = |action, detail: &str| ObjectResult { sealed: true, ..result("ConfigMap", action, Some(detail)) };
        let results = vec![
            sealed(Action::DriftCorrected, "drifted: data.token: s3cr3t -> other"),
            sealed(Action::Failed, "ConfigMap \"x\" is invalid: data.token: Invalid value: \"s3cr3t\""),
            result("ConfigMap", Action::Configured, Some("data.color: blue -> green")),
        ];
        r.record(&Outcome { results, ..Outcome::default() }, true);
        let text = String::from_utf8(r.to_json()).unwrap();
        assert!(!text.contains("s3cr3t"), "{text}");
        assert_eq!(r.objects[0].detail.as_deref(), Some("(detail of an object from an encrypted file withheld)"));
        assert_eq!(r.objects[2].detail.as_deref(), Some("data.color: blue -> green"), "an object in clear keeps its detail");
        assert_eq!((r.drift.found, r.drift.corrected), (2, 1), "withheld, yet counted");
    }

    #[test]
    fn counts_refusals_and_drift() {
        let r = report();
        assert_eq!(r.refused, vec!["ConfigMap web/x".to_string()]);
        assert_eq!(r.counts().get("created"), Some(&1));
        let mut d = Report::start(&"fleet/edge-1".parse().unwrap());
        let outcome = Outcome {
            results: vec![
                result("ConfigMap", Action::DriftCorrected, None),
                result("ConfigMap", Action::Failed, Some("forbidden")),
                result("ConfigMap", Action::Unchanged, None),
            ],
            ..Outcome::default()
        };
        d.record(&outcome, true);
        let web = PartDrift { name: "ClusterProfile.web".into(), found: 2, corrected: 1 };
        assert_eq!(d.drift, Drift { found: 2, corrected: 1, profiles: vec![web] });
        let mut sync = Report::start(&"fleet/edge-1".parse().unwrap());
        sync.record(&outcome, false);
        let web = PartDrift { name: "ClusterProfile.web".into(), found: 1, corrected: 1 };
        assert_eq!(sync.drift, Drift { found: 1, corrected: 1, profiles: vec![web] }, "a sync's failure is not drift");
    }

    #[test]
    fn failures_carry_their_class_and_text() {
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        let refused = Failure::BelowFloor { version: 3, floor: 4 };
        let text = refused.to_string();
        r.finish(Err(refused));
        assert_eq!((r.result, r.error.as_deref()), (RunResult::Rejected, Some(text.as_str())));
        assert_eq!(r.result.metric_label(), "rejected");
    }
}
