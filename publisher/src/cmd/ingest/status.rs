//! What an ingested report changes on its SveltosCluster (spec 14.5), and reading that back
//! for `airlock-publisher status`. Pure functions over JSON values: writing them to the
//! management cluster or to files is `target`'s job, what missing reports change
//! `liveness`'.

use std::collections::BTreeMap;

use airlock_bundle::statement::rfc3339;
use airlock_bundle::vocabulary::{
    API_VERSIONS_ANNOTATION, APPLIED_VERSION_ANNOTATION, DECOMMISSIONED_ANNOTATION, DRIFT_CORRECTED_ANNOTATION, LAST_ERROR_ANNOTATION,
    REPORT_TIME_ANNOTATION, RESULT_ANNOTATION, RESULT_MESSAGE_ANNOTATION,
};
use jiff::Timestamp;
use serde_json::{Map, Value};

use super::report::{PullReport, RunResult};
use crate::cmd::table;

/// Annotation values are limited to 256 KiB for all of an object's annotations together; an
/// error message is cut well below that (on a character boundary).
const MAX_ERROR_CHARS: usize = 1024;
/// The result message holds the error and a few words more.
const MAX_MESSAGE_CHARS: usize = MAX_ERROR_CHARS + 256;
/// The most API versions recorded: a large cluster serves a few hundred.
const MAX_API_VERSIONS: usize = 1000;

/// The status fields ingest owns, all of them fields of Sveltos's own SveltosCluster CRD:
/// its schema declares no others, and a server-side apply of an undeclared field is refused
/// whole. A status written leaves out only those that are to go (a server-side apply drops
/// what its manager no longer sets).
pub const OWNED_STATUS: [&str; 6] = ["ready", "version", "agentLastReportTime", "connectionStatus", "connectionFailures", "failureMessage"];

/// The change one report makes.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The status fields of [`OWNED_STATUS`] that are to be there, with their values.
    pub status: Map<String, Value>,
    /// Annotations to set, or to remove (`None`).
    pub annotations: BTreeMap<&'static str, Option<String>>,
}

/// The update `report` makes to the SveltosCluster `object` (as it is now).
pub fn update(report: &PullReport, object: &Value) -> Update {
    let existing = &object["status"];
    let finished = rfc3339::format(&report.finished_at);
    // An error run may not have reached the API server; the version last reported stays.
    let version = report.kubernetes_version.clone().or_else(|| existing["version"].as_str().map(str::to_string));
    let mut status = Map::new();
    // Sveltos's pull-mode agent sets ready once it reaches the management side and nothing
    // clears it on a failed apply; every selector reads `false` as "stopped matching", so a
    // failed run must not say it. What failed is the failing profile's status (`addons`).
    status.insert("ready".into(), true.into());
    if let Some(v) = version {
        status.insert("version".into(), v.into());
    }
    status.insert("agentLastReportTime".into(), finished.into());
    // What Sveltos's cluster manager keeps for a cluster whose agent reports: a report is
    // the puller reaching the management side (spec 14.5). Its failureMessage is about the
    // connection only (any message counts as a failure there), so the run's error goes to
    // an annotation instead.
    status.insert("connectionStatus".into(), "Healthy".into());
    status.insert("connectionFailures".into(), 0.into());
    let mut annotations = BTreeMap::from([
        (APPLIED_VERSION_ANNOTATION, report.applied_version.map(|v| v.to_string())),
        // Full precision, unlike the status times: two runs in one second must still order.
        (REPORT_TIME_ANNOTATION, Some(report.finished_at.to_string())),
        (DRIFT_CORRECTED_ANNOTATION, Some(report.drift.corrected.to_string())),
        (LAST_ERROR_ANNOTATION, report.error.as_deref().map(|e| e.chars().take(MAX_ERROR_CHARS).collect())),
        (RESULT_ANNOTATION, Some(report.result.reason().to_string())),
        (RESULT_MESSAGE_ANNOTATION, Some(message(report).chars().take(MAX_MESSAGE_CHARS).collect())),
        // The final bundle applied (spec 2.5.5); a cluster registered again loses it.
        (DECOMMISSIONED_ANNOTATION, report.decommissioned.as_ref().map(rfc3339::format)),
    ]);
    // A run that did not read them leaves the ones reported before.
    if let Some(versions) = &report.api_versions {
        annotations.insert(API_VERSIONS_ANNOTATION, Some(api_versions(versions)));
    }
    Update { status, annotations }
}

/// The reported API versions as the annotation holds them: those that are well-formed
/// `group/version`s (or `v1`), at most [`MAX_API_VERSIONS`], sorted, comma-separated.
fn api_versions(reported: &[String]) -> String {
    let well_formed = |v: &&String| {
        let (group, version) = v.rsplit_once('/').unwrap_or(("", v));
        let word = |s: &str, extra: &[u8]| {
            !s.is_empty() && s.len() <= 253 && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || extra.contains(&b))
        };
        word(version, b"") && (group.is_empty() && !v.contains('/') || word(group, b".-"))
    };
    let mut versions: Vec<&str> = reported.iter().filter(well_formed).map(String::as_str).collect();
    versions.sort_unstable();
    versions.dedup();
    versions.truncate(MAX_API_VERSIONS);
    versions.join(",")
}

/// The result message: what the cluster runs, and what went wrong if anything did.
fn message(report: &PullReport) -> String {
    let runs = match (report.applied_version, &report.applied_digest) {
        (Some(v), Some(d)) => format!("bundle v{v} ({})", table::short(d)),
        (Some(v), None) => format!("bundle v{v}"),
        (None, _) => "no bundle yet".to_string(),
    };
    let error = report.error.as_deref().unwrap_or("no detail");
    let offered = report.bundle.as_ref().map_or(String::new(), |b| format!(" v{}", b.version));
    match report.result {
        RunResult::Applied => format!("applied {runs}"),
        RunResult::UpToDate => format!("{runs} applied and up to date"),
        RunResult::DryRun => format!("dry run of bundle{offered}; the cluster runs {runs}"),
        RunResult::Deferred => format!("bundle{offered} deferred: the active window is closed; the cluster runs {runs}"),
        RunResult::Rejected => format!("bundle{offered} rejected: {error}; the cluster runs {runs}"),
        RunResult::Error => format!("sync failed: {error}; the cluster runs {runs}"),
    }
}

/// When the newest ingested report of `object` finished; `None` when none was ingested
/// (or the annotation was edited into something else, which the next report repairs).
pub fn ingested_time(object: &Value) -> Option<Timestamp> {
    object["metadata"]["annotations"][REPORT_TIME_ANNOTATION].as_str()?.parse().ok()
}

/// What the ingested reports say about a cluster, for display.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ingested {
    pub applied_version: Option<String>,
    pub kubernetes_version: Option<String>,
    pub ready: Option<bool>,
    pub drift_corrected: Option<String>,
    pub report_time: Option<String>,
}

impl Ingested {
    pub fn of(object: &Value) -> Ingested {
        let annotation = |name: &str| object["metadata"]["annotations"][name].as_str().map(str::to_string);
        Ingested {
            applied_version: annotation(APPLIED_VERSION_ANNOTATION),
            kubernetes_version: object["status"]["version"].as_str().map(str::to_string),
            ready: object["status"]["ready"].as_bool(),
            drift_corrected: annotation(DRIFT_CORRECTED_ANNOTATION),
            report_time: ingested_time(object).map(|t| rfc3339::format(&t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The status fields of Sveltos's SveltosCluster CRD (`lib.projectsveltos.io`, v1beta1).
    const SVELTOS_STATUS: [&str; 10] = [
        "activeWindowHash",
        "agentLastReportTime",
        "connectionFailures",
        "connectionStatus",
        "failureMessage",
        "lastReconciledTokenRequestAt",
        "nextPause",
        "nextUnpause",
        "ready",
        "version",
    ];

    #[test]
    fn writes_only_status_fields_sveltos_declares() {
        assert!(OWNED_STATUS.iter().all(|f| SVELTOS_STATUS.contains(f)), "{OWNED_STATUS:?}");
        let report: PullReport = serde_json::from_value(json!({
            "apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": "fleet/a",
            "finishedAt": "2026-03-01T10:00:00Z", "result": "error", "appliedVersion": null, "appliedDigest": null,
            "bundle": null, "kubernetesVersion": "v1.20.2", "error": "forbidden",
        }))
        .unwrap();
        let written = update(&report, &json!({})).status;
        assert!(written.keys().all(|k| OWNED_STATUS.contains(&k.as_str())), "{written:?}");
    }

    #[test]
    fn records_the_well_formed_api_versions_reported_and_keeps_them_otherwise() {
        let report = |versions: Value| -> PullReport {
            let mut report = json!({
                "apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": "fleet/a",
                "finishedAt": "2026-03-01T10:00:00Z", "result": "up-to-date", "appliedVersion": 1, "appliedDigest": null, "bundle": null,
            });
            if !versions.is_null() {
                report["apiVersions"] = versions;
            }
            serde_json::from_value(report).unwrap()
        };
        let reported = json!(["v1", "apps/v1", "monitoring.coreos.com/v1", "apps/v1", "Bad/v1", "a,b/v1", "/v1", "x/", "a/b/c"]);
        let changed = update(&report(reported), &json!({}));
        assert_eq!(changed.annotations[API_VERSIONS_ANNOTATION].as_deref(), Some("apps/v1,monitoring.coreos.com/v1,v1"));
        assert!(
            !update(&report(Value::Null), &json!({})).annotations.contains_key(API_VERSIONS_ANNOTATION),
            "a run that read none changes none"
        );
    }

    #[test]
    fn a_deferred_run_is_ready_and_says_why() {
        let report: PullReport = serde_json::from_value(json!({
            "apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": "fleet/a",
            "finishedAt": "2026-03-01T10:00:00Z", "result": "deferred",
            "appliedVersion": 3, "appliedDigest": airlock_bundle::Digest::of(b"v3"),
            "bundle": {"version": 4, "digest": airlock_bundle::Digest::of(b"v4")},
        }))
        .unwrap();
        let changed = update(&report, &json!({}));
        assert_eq!(changed.status["ready"], true);
        assert_eq!(changed.annotations[RESULT_ANNOTATION].as_deref(), Some("Deferred"));
        let message = changed.annotations[RESULT_MESSAGE_ANNOTATION].as_deref().unwrap();
        assert!(message.starts_with("bundle v4 deferred: the active window is closed; the cluster runs bundle v3"), "{message}");
    }
}
