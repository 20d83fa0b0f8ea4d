//! The drift a cluster's puller found and corrected, per profile, kept on the cluster's
//! ClusterConfiguration beside what each profile deployed (`addons`): the annotation
//! [`DRIFT_ANNOTATION`](airlock_bundle::vocabulary::DRIFT_ANNOTATION), a JSON object that
//! totals, per profile, the drifted objects of every ingested report, with the time and the
//! objects of the last report that found some.
//!
//! Sveltos counts drift in the counter `projectsveltos_total_drifts` of its addon-controller,
//! labelled by cluster and profile; the totals here are that count for a cluster that pulls,
//! kept where it survives restarts and is read with `kubectl` (the reason is in
//! docs/sveltos-compatibility.md). A pure function over the report and the annotation's
//! previous value; the report's `finishedAt` recorded in it keeps a report that is ingested
//! again (after a failed write) from being counted twice.

use std::collections::{BTreeMap, BTreeSet};

use airlock_bundle::ClusterId;
use airlock_bundle::statement::rfc3339;
use serde::{Deserialize, Serialize};

use super::configuration::{ProfileRef, ours};
use super::report::PullReport;

/// Objects named per profile, the newest report's: enough to see what drifts, while the
/// annotation stays far below the apiserver's limit on all annotations of an object.
const MAX_OBJECTS: usize = 20;

/// The annotation's value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftRecord {
    /// `finishedAt` of the newest report counted, at full precision.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub counted_through: String,
    /// Keyed `ClusterProfile/<name>` or `Profile/<name>` (a Profile of the cluster's
    /// namespace), as `sveltosctl` names profiles.
    pub profiles: BTreeMap<String, ProfileDrift>,
}

/// The drift of one profile on the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileDrift {
    /// Objects found changed or deleted, over every report counted.
    pub found: u64,
    /// Of those, re-applied.
    pub corrected: u64,
    /// `finishedAt` of the last report that found drift in the profile.
    pub last_drift_time: String,
    /// The objects that report says it re-applied, `Kind namespace/name` (`Kind name` when
    /// cluster-scoped), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<String>,
}

/// How `sveltosctl` names a profile: `ClusterProfile/web`, `Profile/monitoring`.
pub fn profile_key(profile: &ProfileRef) -> String {
    match profile {
        ProfileRef::ClusterProfile(name) => format!("ClusterProfile/{name}"),
        ProfileRef::Profile { name, .. } => format!("Profile/{name}"),
    }
}

/// The annotation after `report` of `cluster`, given its value `old` (absent: `None`; a
/// value that does not parse starts the totals again). `None` when there is nothing to
/// record; unchanged when the report was counted before or found no drift.
pub fn record(report: &PullReport, cluster: &ClusterId, old: Option<&str>) -> Option<String> {
    let mut record: DriftRecord = old.and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default();
    let finished = rfc3339::format(&report.finished_at);
    let counted = record.counted_through.parse::<jiff::Timestamp>().is_ok_and(|t| t >= report.finished_at);
    if !counted && !report.drift.profiles.is_empty() {
        // Sorted: the puller lists objects in the order its work finished.
        let mut corrected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for object in report.objects.iter().filter(|o| o.action == "driftCorrected") {
            let Some(profile) = ours(&object.profile, cluster) else { continue };
            let id = &object.id;
            let name = id.namespace.as_ref().map_or(id.name.clone(), |ns| format!("{ns}/{}", id.name));
            corrected.entry(profile_key(&profile)).or_default().insert(format!("{} {name}", id.kind));
        }
        for part in &report.drift.profiles {
            let Some(profile) = ours(&part.name, cluster) else { continue };
            let key = profile_key(&profile);
            let entry = record.profiles.entry(key.clone()).or_default();
            entry.found += part.found;
            entry.corrected += part.corrected;
            entry.last_drift_time = finished.clone();
            entry.objects = corrected.remove(&key).unwrap_or_default().into_iter().take(MAX_OBJECTS).collect();
        }
        // At full precision: two reports can finish within one second.
        record.counted_through = report.finished_at.to_string();
    }
    if record.profiles.is_empty() {
        return None;
    }
    Some(serde_json::to_string(&record).expect("a drift record serialises"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::testkit::{cluster, report_with};
    use super::*;

    fn report(finished: &str, drift: Value, objects: Value) -> PullReport {
        report_with(finished, "up-to-date", json!({"objects": objects, "drift": drift}))
    }

    fn corrected(part: &str, kind: &str, namespace: Option<&str>, name: &str) -> Value {
        json!({"id": {"group": "", "version": "v1", "kind": kind, "namespace": namespace, "name": name}, "profile": part, "action": "driftCorrected"})
    }

    #[test]
    fn totals_drift_per_profile_over_reports_and_names_the_last_objects_corrected() {
        let drift = json!({"found": 3, "corrected": 2, "profiles": [
            {"name": "ClusterProfile.web", "found": 2, "corrected": 2},
            {"name": "Profile.fleet.mon", "found": 1, "corrected": 0},
            {"name": "Profile.other.x", "found": 1, "corrected": 1},
        ]});
        let objects = json!([
            corrected("ClusterProfile.web", "ConfigMap", Some("apps"), "settings"),
            corrected("ClusterProfile.web", "Namespace", None, "apps"),
            {"id": {"group": "", "version": "v1", "kind": "Secret", "namespace": "mon", "name": "s"}, "profile": "Profile.fleet.mon", "action": "failed"},
        ]);
        let first = record(&report("2026-03-01T10:00:00Z", drift, objects), &cluster(), None).unwrap();
        let parsed: DriftRecord = serde_json::from_str(&first).unwrap();
        let web = ProfileDrift {
            found: 2,
            corrected: 2,
            last_drift_time: "2026-03-01T10:00:00Z".into(),
            objects: vec!["ConfigMap apps/settings".into(), "Namespace apps".into()],
        };
        let mon = ProfileDrift { found: 1, corrected: 0, last_drift_time: "2026-03-01T10:00:00Z".into(), objects: vec![] };
        let expected = DriftRecord {
            counted_through: "2026-03-01T10:00:00Z".into(),
            profiles: BTreeMap::from([("ClusterProfile/web".into(), web.clone()), ("Profile/mon".into(), mon.clone())]),
        };
        assert_eq!(parsed, expected, "a Profile of another namespace is not this cluster's");

        // Ingested again: not counted twice. A later report adds to the totals of its profiles.
        let again = json!({"found": 3, "corrected": 2, "profiles": [{"name": "ClusterProfile.web", "found": 2, "corrected": 2}]});
        assert_eq!(record(&report("2026-03-01T10:00:00Z", again, json!([])), &cluster(), Some(&first)).as_deref(), Some(first.as_str()));
        let later = json!({"found": 1, "corrected": 1, "profiles": [{"name": "ClusterProfile.web", "found": 1, "corrected": 1}]});
        let objects = json!([corrected("ClusterProfile.web", "ConfigMap", Some("apps"), "settings")]);
        let second: DriftRecord =
            serde_json::from_str(&record(&report("2026-03-02T10:00:00Z", later, objects), &cluster(), Some(&first)).unwrap()).unwrap();
        let web = ProfileDrift {
            found: 3,
            corrected: 3,
            last_drift_time: "2026-03-02T10:00:00Z".into(),
            objects: vec!["ConfigMap apps/settings".into()],
        };
        assert_eq!(second.profiles, BTreeMap::from([("ClusterProfile/web".into(), web), ("Profile/mon".into(), mon)]));
        assert_eq!(second.counted_through, "2026-03-02T10:00:00Z");
    }

    #[test]
    fn a_report_without_drift_changes_nothing_and_a_cluster_that_never_drifted_gets_no_annotation() {
        let none = json!({"found": 0, "corrected": 0});
        assert_eq!(record(&report("2026-03-01T10:00:00Z", none.clone(), json!([])), &cluster(), None), None);
        let held = r#"{"countedThrough":"2026-03-01T10:00:00Z","profiles":{"ClusterProfile/web":{"found":1,"corrected":1,"lastDriftTime":"2026-03-01T10:00:00Z"}}}"#;
        assert_eq!(record(&report("2026-03-02T10:00:00Z", none.clone(), json!([])), &cluster(), Some(held)).as_deref(), Some(held));
        assert_eq!(record(&report("2026-03-02T10:00:00Z", none, json!([])), &cluster(), Some("not json")), None, "starts again");
    }
}
