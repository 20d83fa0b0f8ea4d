//! The signed statement: an in-toto Statement v1 with the Airlock predicate (spec section 5).
//!
//! These types parse strictly (unknown and duplicate fields are errors) and serialise in
//! field order, so what the publisher signs is stable. Optional fields are left out when
//! they hold their default, so a bundle that needs none of them reads as it always did,
//! and a puller that does not know one refuses the bundle rather than ignore it. Semantic
//! checks live in `verify`; the profile entry and its settings are in `profile`.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

mod check;
mod evaluation;
mod profile;
mod scoped;
mod settings;
pub mod tenant;

pub use check::{CelRule, Check, Checks, JobCheck, MetricQuery, Metrics, SecretName, Selection, list as check_list};
pub use evaluation::{Evaluation, EvaluationKind, Selector};
pub use profile::{DriftExclusion, FieldNote, ProfileEntry, RenderFailure, Rendering, Support, Target};
pub use scoped::{ClusterScopedObject, parse_cluster_scoped};
pub use settings::ClusterSettings;
pub use tenant::ServiceAccountRef;

pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://airlock.dev/bundle/v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Predicate,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    pub name: String,
    pub digest: SubjectDigest,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubjectDigest {
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Predicate {
    pub cluster: String,
    pub version: u64,
    #[serde(with = "rfc3339")]
    pub issued_at: Timestamp,
    #[serde(with = "rfc3339")]
    pub expires: Timestamp,
    pub keyring_version: u64,
    /// The cluster's settings, flattened into the predicate's fields. `decommission` comes
    /// after them, where the spec's table has it before `clusterScoped`: a final bundle never
    /// has `clusterScoped`, so the JSON keeps the table's order.
    #[serde(flatten)]
    pub settings: ClusterSettings,
    /// The final bundle of a cluster leaving Airlock (spec 2.5.5): no parts, no files, and
    /// `allowMassPrune`; its puller prunes everything it applied, then stops.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decommission: bool,
    pub profiles: Vec<ProfileEntry>,
    pub files: Vec<FileEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    pub path: String,
    pub size: u64,
    pub sha256: String,
    /// What an encrypted file decrypts to (spec 2.7); absent for a file in clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plaintext: Option<Plaintext>,
}

/// The size and SHA-256 of an encrypted file's plaintext (spec 2.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plaintext {
    pub size: u64,
    pub sha256: String,
}

/// A SveltosCluster's `activeWindow`: two cron expressions, UTC (spec 5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActiveWindow {
    pub from: String,
    pub to: String,
}

/// Sveltos `syncMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum SyncMode {
    OneTime,
    #[default]
    Continuous,
    ContinuousWithDriftDetection,
    DryRun,
}

/// Sveltos `stopMatchingBehavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum StopMatchingBehavior {
    #[default]
    WithdrawPolicies,
    LeavePolicies,
}

/// The Sveltos default tier.
pub const DEFAULT_TIER: u32 = 100;

/// Integers in the payload stay below 2^53 so every JSON reader sees them exactly.
pub const MAX_JSON_INT: u64 = (1 << 53) - 1;

impl Statement {
    /// Compact JSON in field order: the bytes that get signed.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("statement serialises")
    }
}

/// Timestamps as the spec writes them: RFC 3339, UTC, whole seconds, `Z`.
pub mod rfc3339 {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn format(t: &Timestamp) -> String {
        t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    /// Parses only the exact form `format` writes.
    pub fn parse(s: &str) -> Option<Timestamp> {
        let t: Timestamp = s.parse().ok()?;
        (format(&t) == s).then_some(t)
    }

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        parse(&s).ok_or_else(|| D::Error::custom(format!("timestamp {s:?} is not YYYY-MM-DDTHH:MM:SSZ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_exact() {
        assert!(rfc3339::parse("2026-11-29T16:00:00Z").is_some());
        for bad in ["2026-11-29T16:00:00.5Z", "2026-11-29T16:00:00+00:00", "2026-11-29 16:00:00Z", "2026-11-29T16:00Z"] {
            assert!(rfc3339::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn rejects_duplicate_and_unknown_fields() {
        let dup = r#"{"path":"a","size":1,"size":2,"sha256":"x"}"#;
        assert!(serde_json::from_str::<FileEntry>(dup).unwrap_err().to_string().contains("duplicate field"));
        let unknown = r#"{"path":"a","size":1,"sha256":"x","mode":420}"#;
        assert!(serde_json::from_str::<FileEntry>(unknown).unwrap_err().to_string().contains("unknown field"));
    }
}
