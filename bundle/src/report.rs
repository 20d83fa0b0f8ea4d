//! The status report's payload (spec 14.3), as the puller writes it and ingest reads it:
//! one definition for both sides, with what spec 14.1 and 14.2 fix about its file (name,
//! JSON, signature). Filling it from a run is the puller's business, checking a signed one
//! ingest's.
//!
//! Parsing is as strict as spec 14.4 step 4 asks: `result` must be one of the six values
//! and every field present must have its type. Unknown fields are ignored (14.3: a puller
//! may add fields within version 1). Besides `apiVersion`, `kind`, `cluster`, `finishedAt`,
//! `result` and a bundle's `version` and `digest`, every field may be missing and reads as
//! empty, as ingest has always accepted; the puller always writes them all. Whether
//! `apiVersion` and `kind` have their values is the reader's check.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::envelope;
use super::key::SigningKey;
use super::verify::VerifiedEnvelope;
use crate::{ClusterId, Digest};

mod collected;
mod evaluated;
mod findings;
mod health;
mod message;

pub use super::envelope::REPORT_PAYLOAD_TYPE;
pub use collected::{Collected, MAX_COLLECTED_BYTES, MAX_MATCHING, MAX_REPORT_COLLECTED_BYTES, ObjectRef, withheld};
pub use evaluated::Evaluated;
pub use findings::{BundleSeen, Drift, PartDrift, ProfileNotes, ReleaseOperation, ReleaseSeen};
pub use health::{
    Collector, HealthStatus, MAX_HEALTH_OBJECT_BYTES, MAX_HEALTH_RESOURCES, MAX_REPORT_HEALTH_BYTES, MAX_REPORT_HEALTH_ENTRIES,
    ResourceHealth, WITHHELD,
};
pub use message::MAX_MESSAGE_BYTES;

/// `apiVersion` of a report.
pub const API_VERSION: &str = "airlock.dev/v1";
/// `kind` of a report.
pub const KIND: &str = "PullReport";

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunResult {
    Applied,
    UpToDate,
    /// `--dry-run`: computed, nothing written.
    DryRun,
    /// Verified, but the bundle's active window is closed: nothing changed (spec 5.6).
    Deferred,
    Rejected,
    Error,
}

impl RunResult {
    /// The result as the report writes it: `applied`, `up-to-date`...
    pub fn name(self) -> &'static str {
        match self {
            RunResult::Applied => "applied",
            RunResult::UpToDate => "up-to-date",
            RunResult::DryRun => "dry-run",
            RunResult::Deferred => "deferred",
            RunResult::Rejected => "rejected",
            RunResult::Error => "error",
        }
    }

    /// The result as a condition reason: `Applied`, `UpToDate`, `DryRun`...
    pub fn reason(self) -> &'static str {
        match self {
            RunResult::Applied => "Applied",
            RunResult::UpToDate => "UpToDate",
            RunResult::DryRun => "DryRun",
            RunResult::Deferred => "Deferred",
            RunResult::Rejected => "Rejected",
            RunResult::Error => "Error",
        }
    }

    /// The `result` label of the puller's `airlock_sync_runs_total`: `ok`, `rejected` or
    /// `error`, the three classes a caller acts on differently.
    pub fn metric_label(self) -> &'static str {
        match self {
            RunResult::Applied | RunResult::UpToDate | RunResult::DryRun | RunResult::Deferred => "ok",
            RunResult::Rejected => "rejected",
            RunResult::Error => "error",
        }
    }
}

/// One run's report. `O` is a per-object result: the puller's own type, which it writes;
/// a reader that does not look at them (ingest) leaves the default, which skips them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullReport<O = serde::de::IgnoredAny> {
    pub api_version: String,
    pub kind: String,
    pub cluster: String,
    #[serde(default)]
    pub started_at: Timestamp,
    pub finished_at: Timestamp,
    #[serde(default)]
    pub duration_ms: u64,
    pub result: RunResult,
    /// The version and digest the cluster runs after this run (from the state).
    pub applied_version: Option<u64>,
    pub applied_digest: Option<Digest>,
    /// The bundle this run verified.
    pub bundle: Option<BundleSeen>,
    /// `gitVersion` of the API server, when it was read.
    pub kubernetes_version: Option<String>,
    /// Every `group/version` the API server serves (`v1` for the core group), sorted, read
    /// with `kubernetes_version` by a run that applied a bundle; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_versions: Option<Vec<String>>,
    // A path, not `default`: that would ask the entry type for a `Default` it need not have.
    #[serde(default = "Vec::new")]
    pub objects: Vec<O>,
    #[serde(default)]
    pub drift: Drift,
    /// Objects refused by the namespace policy.
    #[serde(default)]
    pub refused: Vec<String>,
    pub error: Option<String>,
    /// Requests the apply engine made (the puller's own Lease, state and report calls
    /// not included).
    #[serde(default)]
    pub api_requests: u64,
    /// The parts of the bundle verified that carry notes or a failure; absent when none does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<ProfileNotes>,
    /// The Helm releases of the bundle a run applied (`result` `applied`), sorted by part,
    /// namespace and name; absent otherwise, and when the bundle has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub releases: Vec<ReleaseSeen>,
    /// When the puller applied its cluster's final bundle (spec 2.5.5): it has pruned what
    /// it applied and acts no more; absent while it serves the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decommissioned: Option<Timestamp>,
    /// What the run found evaluating the definitions of the bundle it verified (spec
    /// 5.14), in the bundle's order; absent when it evaluated none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluations: Vec<Evaluated>,
}

impl<O> PullReport<O> {
    /// The report of a run of `cluster` starting now; until it is finished it says `error`.
    pub fn start(cluster: &ClusterId) -> PullReport<O> {
        let now = Timestamp::now();
        PullReport {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            cluster: cluster.to_string(),
            started_at: now,
            finished_at: now,
            duration_ms: 0,
            result: RunResult::Error,
            applied_version: None,
            applied_digest: None,
            bundle: None,
            kubernetes_version: None,
            api_versions: None,
            objects: Vec::new(),
            drift: Drift::default(),
            refused: Vec::new(),
            error: None,
            api_requests: 0,
            profiles: Vec::new(),
            releases: Vec::new(),
            decommissioned: None,
            evaluations: Vec::new(),
        }
    }

    /// Records the verified envelope of this run's bundle, and what its publisher noted.
    pub fn saw(&mut self, envelope: &VerifiedEnvelope) {
        self.bundle = Some(BundleSeen::of(envelope));
        self.profiles = ProfileNotes::of(envelope.predicate());
    }

    /// `report-<ns>.<name>-<time>.json` (spec 14.1); milliseconds keep two runs in a
    /// second apart.
    pub fn file_name(&self) -> String {
        let cluster = self.cluster.replacen('/', ".", 1);
        format!("report-{cluster}-{}.json", self.finished_at.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"))
    }
}

impl<O: Clone + PartialEq> PullReport<O> {
    /// Whether `other` tells the same: equal but for the times, the server version and
    /// APIs and the request count, which differ from run to run when nothing else does.
    pub fn same_outcome(&self, other: &PullReport<O>) -> bool {
        let plain = |r: &PullReport<O>| PullReport {
            started_at: Timestamp::UNIX_EPOCH,
            finished_at: Timestamp::UNIX_EPOCH,
            duration_ms: 0,
            kubernetes_version: None,
            api_versions: None,
            api_requests: 0,
            ..r.clone()
        };
        plain(self) == plain(other)
    }
}

impl<O: Serialize> PullReport<O> {
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("report serialises")
    }

    /// The report file's bytes (spec 14.2): a report envelope signed with the cluster's
    /// report key when there is one, else the bare report JSON.
    pub fn file_bytes(&self, key: Option<&SigningKey>) -> Vec<u8> {
        match key {
            Some(key) => envelope::sign(REPORT_PAYLOAD_TYPE, &self.to_json(), std::slice::from_ref(key)),
            None => self.to_json(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report as a puller writes it, with a field a later version of it might add.
    fn written() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": API_VERSION, "kind": KIND, "cluster": "fleet/a",
            "startedAt": "2026-03-01T09:59:58Z", "finishedAt": "2026-03-01T10:00:00.250Z", "durationMs": 2000,
            "result": "up-to-date", "appliedVersion": 3, "appliedDigest": Digest::of(b"v3"),
            "bundle": {"version": 3, "digest": Digest::of(b"v3"), "issuedAt": "2026-03-01T09:00:00Z",
                       "expires": "2026-03-31T09:00:00Z", "keyringVersion": 1, "signers": ["ab"]},
            "kubernetesVersion": "v1.20.2", "objects": [{"any": "shape"}], "drift": {"found": 2, "corrected": 1},
            "refused": [], "error": null, "apiRequests": 9, "addedLater": {"x": 1},
        })
    }

    #[test]
    fn reads_a_written_report_ignoring_unknown_fields_and_skipping_objects() {
        let report: PullReport = serde_json::from_value(written()).unwrap();
        let drift = Drift { found: 2, corrected: 1, profiles: vec![] };
        assert_eq!((report.result, report.applied_version, report.drift), (RunResult::UpToDate, Some(3), drift));
        assert_eq!(report.bundle.unwrap().signers, ["ab"]);
        assert_eq!(report.objects.len(), 1);
    }

    #[test]
    fn counts_drift_per_part_sorted_and_writes_the_list_only_when_there_is_one() {
        let mut drift = Drift::default();
        assert_eq!(serde_json::to_value(&drift).unwrap(), serde_json::json!({"found": 0, "corrected": 0}));
        drift.count("Profile.fleet.mon", true);
        drift.count("ClusterProfile.web", false);
        drift.count("Profile.fleet.mon", true);
        let part = |name: &str, found, corrected| PartDrift { name: name.into(), found, corrected };
        assert_eq!((drift.found, drift.corrected), (3, 2));
        assert_eq!(drift.profiles, [part("ClusterProfile.web", 1, 0), part("Profile.fleet.mon", 2, 2)]);
        let json = serde_json::to_value(&drift).unwrap();
        assert_eq!(json["profiles"][1], serde_json::json!({"name": "Profile.fleet.mon", "found": 2, "corrected": 2}));
        assert_eq!(serde_json::from_value::<Drift>(json).unwrap(), drift);
    }

    #[test]
    fn carries_releases_only_when_there_are_some() {
        let mut report: PullReport<serde_json::Value> = serde_json::from_value(written()).unwrap();
        assert!(report.releases.is_empty());
        let release = ReleaseSeen {
            profile: "ClusterProfile.web".into(),
            name: "ingress".into(),
            namespace: "web".into(),
            chart_version: "4.0.2".into(),
            app_version: None,
            repo_url: "https://charts.example".into(),
            operation: ReleaseOperation::Upgrade,
        };
        let plain = serde_json::to_value(&report).unwrap();
        assert!(plain.get("releases").is_none(), "{plain}");
        report.releases = vec![release.clone()];
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json["releases"],
            serde_json::json!([{"profile": "ClusterProfile.web", "name": "ingress", "namespace": "web", "chartVersion": "4.0.2",
                                "repoURL": "https://charts.example", "operation": "upgrade"}])
        );
        assert_eq!(serde_json::from_value::<PullReport<serde_json::Value>>(json).unwrap().releases, [release]);
    }

    #[test]
    fn needs_only_what_ingest_reads_and_rejects_wrong_types_and_results() {
        let mut minimal = serde_json::Map::new();
        for key in ["apiVersion", "kind", "cluster", "finishedAt", "result"] {
            minimal.insert(key.into(), written()[key].clone());
        }
        let report: PullReport = serde_json::from_value(minimal.clone().into()).unwrap();
        assert_eq!((report.bundle, report.drift, report.api_requests), (None, Drift::default(), 0));
        for key in ["apiVersion", "kind", "cluster", "finishedAt", "result"] {
            let mut missing = minimal.clone();
            missing.remove(key);
            let err = serde_json::from_value::<PullReport>(missing.into()).unwrap_err();
            assert!(err.to_string().contains(&format!("missing field `{key}`")), "{err}");
        }
        for (key, bad) in [
            ("result", "done".into()),
            ("durationMs", "-1".into()),
            ("refused", serde_json::json!([1])),
            ("appliedDigest", "sha256:00".into()),
        ] {
            let mut wrong = written();
            wrong[key] = bad;
            assert!(serde_json::from_value::<PullReport>(wrong).is_err(), "{key}");
        }
    }

    #[test]
    fn a_bundle_seen_keeps_the_claims_verification_judged() {
        let fixture = crate::testkit::Fixture::new(1);
        let signed = fixture.signed(1, crate::testkit::Fixture::files());
        let floor = crate::Floor::default();
        let expect = fixture.expect(&floor);
        let verified = crate::verify::verify_envelope(&signed.envelope, None, &expect, &crate::Limits::SPEC).unwrap();
        let seen = BundleSeen::of(&verified);
        assert_eq!(seen.claims(signed.cluster()), verified.claims());
        let back: BundleSeen = serde_json::from_value(serde_json::to_value(&seen).unwrap()).unwrap();
        assert_eq!(back.claims(signed.cluster()), verified.claims(), "as the report writes it");
    }

    #[test]
    fn carries_the_notes_and_failures_of_the_bundle_verified_and_nothing_else() {
        use crate::statement::{FieldNote, RenderFailure, Support};
        use crate::testkit::Fixture;
        let fixture = Fixture::new(1);
        let note = FieldNote { field: "spec.reloader".into(), support: Support::NotSupported, detail: "no reloader".into() };
        let failure = RenderFailure { message: "template: no key".into(), kept_from: None };
        let settings = |name: &str| match name {
            "ClusterProfile.web" => crate::PartSettings { notes: vec![note.clone()], ..Default::default() },
            _ => crate::PartSettings { failure: Some(failure.clone()), ..Default::default() },
        };
        let signed = crate::sign::sign(Fixture::bundle(Fixture::files()), &fixture.release(2), &settings, &fixture.keys, None);
        let floor = crate::Floor::default();
        let verified = crate::verify::verify_envelope(&signed.envelope, None, &fixture.expect(&floor), &crate::Limits::SPEC).unwrap();
        let mut report = PullReport::<serde_json::Value>::start(&fixture.cluster);
        report.saw(&verified);
        let expected = vec![
            ProfileNotes { name: "ClusterProfile.web".into(), notes: vec![note], failure: None },
            ProfileNotes { name: "Profile.fleet.monitoring".into(), notes: vec![], failure: Some(failure) },
        ];
        assert_eq!(report.profiles, expected);
        let json: serde_json::Value = serde_json::from_slice(&report.to_json()).unwrap();
        assert_eq!(json["profiles"][0]["notes"][0]["support"], "not-supported");
        assert!(json["profiles"][0].get("failure").is_none() && json["profiles"][1].get("notes").is_none(), "{json}");
        let plain = fixture.signed(1, Fixture::files());
        let verified = crate::verify::verify_envelope(&plain.envelope, None, &fixture.expect(&floor), &crate::Limits::SPEC).unwrap();
        report.saw(&verified);
        assert!(report.profiles.is_empty());
        assert!(serde_json::from_slice::<serde_json::Value>(&report.to_json()).unwrap().get("profiles").is_none(), "absent when none");
    }

    #[test]
    fn names_results_as_written_as_reasons_and_as_classes() {
        for (result, name, reason, class) in [
            (RunResult::Applied, "applied", "Applied", "ok"),
            (RunResult::UpToDate, "up-to-date", "UpToDate", "ok"),
            (RunResult::DryRun, "dry-run", "DryRun", "ok"),
            (RunResult::Deferred, "deferred", "Deferred", "ok"),
            (RunResult::Rejected, "rejected", "Rejected", "rejected"),
            (RunResult::Error, "error", "Error", "error"),
        ] {
            assert_eq!(serde_json::to_value(result).unwrap(), name);
            assert_eq!((result.name(), result.reason(), result.metric_label()), (name, reason, class));
        }
    }
}
