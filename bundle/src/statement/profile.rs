//! One part's entry in the predicate (spec 5.3): its identity, and how the puller treats
//! its objects. Besides the settings every entry carries, the optional ones Sveltos
//! profiles may set (`continueOnError`, `maxConsecutiveFailures`, `driftExclusions`,
//! `reloader`, the checks), and
//! what the publisher must tell the site about the profile: fields it did not honour
//! (`notes`), a render that failed (`failure`) and when a clock-reading render ran
//! (`rendered`).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::{Checks, ServiceAccountRef, StopMatchingBehavior, SyncMode, rfc3339};
use crate::digest::Digest;

/// One part and how the puller treats its objects (spec 5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProfileEntry {
    pub name: String,
    pub digest: Digest,
    pub size: u64,
    pub sync_mode: SyncMode,
    pub tier: u32,
    pub depends_on: Vec<String>,
    pub stop_matching_behavior: StopMatchingBehavior,
    pub force_conflicts: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub continue_on_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_consecutive_failures: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift_exclusions: Vec<DriftExclusion>,
    /// Sveltos `reloader`: restart the part's workloads when a ConfigMap or Secret they
    /// mount as a volume changes (spec 5.10).
    #[serde(default, skip_serializing_if = "is_false")]
    pub reloader: bool,
    /// Checks the puller runs against its cluster (spec 5.11).
    #[serde(default, skip_serializing_if = "Checks::is_empty")]
    pub checks: Checks,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<FieldNote>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<RenderFailure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered: Option<Rendering>,
    /// The tenant whose rights the part is applied with: every write of the part
    /// impersonates this ServiceAccount (spec 5.3); absent means the puller's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountRef>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Fields of the objects of a part that drift detection ignores and a correction leaves
/// as the cluster has them (Sveltos `driftExclusions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftExclusion {
    /// JSON pointers (RFC 6901), e.g. `/spec/replicas`.
    pub paths: Vec<String>,
    /// Which objects; absent means all of the part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// Which objects a drift exclusion applies to, as Sveltos's `PatchSelector`: group,
/// version, kind, name and namespace are regular expressions matched against the whole
/// value; the selectors are Kubernetes label-selector strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Target {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_selector: Option<String>,
}

/// A profile field the publisher did not honour as Sveltos would, so the site's report
/// says so instead of the difference passing unseen.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldNote {
    /// The field's path in the profile, e.g. `spec.validateHealths`.
    pub field: String,
    pub support: Support,
    /// What was done instead, or why nothing was.
    pub detail: String,
}

/// How far a field is honoured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Support {
    /// Airlock does not implement it; what Sveltos would do with it did not happen.
    NotSupported,
    /// It has no meaning when the cluster pulls (a management-cluster feature).
    NotApplicable,
    /// Sveltos skips part of it for some objects, and so did the publisher; the detail
    /// says what and for which object (a patch operation that does not apply there).
    Skipped,
}

/// This publish could not render the profile; the part holds what it held before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenderFailure {
    pub message: String,
    /// The version whose content the part keeps; absent when the profile never rendered
    /// for this cluster and the part is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_from: Option<u64>,
}

/// When the part was rendered, for a render that read the clock (`now`, certificates):
/// the publisher renders with this time again while the inputs keep their digest, so an
/// unchanged profile renders unchanged bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rendering {
    /// Digest of everything the render read.
    pub inputs: Digest,
    #[serde(with = "rfc3339")]
    pub at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> ProfileEntry {
        ProfileEntry {
            name: "ClusterProfile.web".into(),
            digest: Digest::of(b""),
            size: 1024,
            sync_mode: SyncMode::Continuous,
            tier: 100,
            depends_on: vec![],
            stop_matching_behavior: StopMatchingBehavior::WithdrawPolicies,
            force_conflicts: false,
            continue_on_error: false,
            max_consecutive_failures: None,
            drift_exclusions: vec![],
            reloader: false,
            checks: Checks::default(),
            notes: vec![],
            failure: None,
            rendered: None,
            service_account: None,
        }
    }

    #[test]
    fn defaults_are_left_out() {
        let json = serde_json::to_string(&entry()).unwrap();
        assert!(
            !json.contains("continueOnError") && !json.contains("notes") && !json.contains("failure") && !json.contains("serviceAccount"),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<ProfileEntry>(&json).unwrap(), entry());
    }

    #[test]
    fn optional_settings_round_trip() {
        let full = ProfileEntry {
            continue_on_error: true,
            max_consecutive_failures: Some(3),
            drift_exclusions: vec![DriftExclusion {
                paths: vec!["/spec/replicas".into()],
                target: Some(Target { kind: Some("Deployment".into()), ..Target::default() }),
            }],
            reloader: true,
            notes: vec![FieldNote { field: "spec.helmCharts".into(), support: Support::NotSupported, detail: "no charts".into() }],
            failure: Some(RenderFailure { message: "template: missing key".into(), kept_from: Some(4) }),
            rendered: Some(Rendering { inputs: Digest::of(b"x"), at: "2026-12-01T00:00:00Z".parse().unwrap() }),
            service_account: Some(ServiceAccountRef { namespace: "team-a".into(), name: "deployer".into() }),
            ..entry()
        };
        let json = serde_json::to_string(&full).unwrap();
        assert!(json.contains(r#""support":"not-supported""#) && json.contains(r#""keptFrom":4"#), "{json}");
        assert!(json.ends_with(r#","serviceAccount":{"namespace":"team-a","name":"deployer"}}"#), "{json}");
        assert_eq!(serde_json::from_str::<ProfileEntry>(&json).unwrap(), full);
    }

    #[test]
    fn rejects_unknown_fields_in_the_new_settings() {
        let json = serde_json::to_string(&entry()).unwrap().replace('}', r#","driftExclusions":[{"paths":[],"match":1}]}"#);
        assert!(serde_json::from_str::<ProfileEntry>(&json).unwrap_err().to_string().contains("unknown field"));
    }
}
