//! What a `HealthCheck` result says of each object its script judged (spec 14.3
//! `evaluations[].health`, from spec 5.14): the object's identity, one of Sveltos's four
//! health statuses, the script's message, and, when the definition asks (`collect`), the
//! object itself. Bounded, because a report crosses the air gap in one envelope: at most
//! [`MAX_HEALTH_RESOURCES`] entries per result, messages cut as any result's, one collected
//! object at most [`MAX_HEALTH_OBJECT_BYTES`] and all those of one report together at most
//! [`MAX_REPORT_HEALTH_BYTES`], and the entries of all the results of one report at most
//! [`MAX_REPORT_HEALTH_ENTRIES`]; a `Secret` is never collected.
//!
//! The puller fills it ([`ResourceHealth::judged`], one [`Collector`] per report); ingest
//! reads it and cuts again ([`ResourceHealth::bounded`]), as a report is input.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::message::cut;
use crate::seal::is_secret;

/// Entries of one result: a namespace's Deployments, with room to spare. A script that
/// judges more makes its result an error.
pub const MAX_HEALTH_RESOURCES: usize = 256;
/// Compact JSON bytes of one collected object; a larger one is reported without it.
pub const MAX_HEALTH_OBJECT_BYTES: usize = 16 * 1_024;
/// Compact JSON bytes of every object collected in one report, which is one envelope of
/// at most 4 MiB with everything else it says.
pub const MAX_REPORT_HEALTH_BYTES: usize = 1_024 * 1_024;

/// Entries of all the `HealthCheck` results of one report: with their messages and the
/// objects collected, well within the report's one envelope. A result that would pass
/// it is an error.
pub const MAX_REPORT_HEALTH_ENTRIES: usize = 1_024;

/// Sveltos's health statuses, as its HealthCheckReport spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HealthStatus {
    Healthy,
    Progressing,
    Degraded,
    Suspended,
}

impl HealthStatus {
    /// The status a script wrote, exactly as Sveltos's CRD accepts it.
    pub fn parse(text: &str) -> Option<HealthStatus> {
        Some(match text {
            "Healthy" => HealthStatus::Healthy,
            "Progressing" => HealthStatus::Progressing,
            "Degraded" => HealthStatus::Degraded,
            "Suspended" => HealthStatus::Suspended,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            HealthStatus::Healthy => "Healthy",
            HealthStatus::Progressing => "Progressing",
            HealthStatus::Degraded => "Degraded",
            HealthStatus::Suspended => "Suspended",
        }
    }
}

/// The health of one judged object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceHealth {
    pub api_version: String,
    pub kind: String,
    /// Absent for a cluster-scoped object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub status: HealthStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The object as listed (without `metadata.managedFields`), when the definition
    /// collects and the bounds allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Value>,
}

/// What a report may still carry: [`MAX_REPORT_HEALTH_BYTES`] of collected objects and
/// [`MAX_REPORT_HEALTH_ENTRIES`] entries, spent in order.
#[derive(Debug, Clone)]
pub struct Collector {
    left: usize,
    entries: usize,
}

impl Default for Collector {
    fn default() -> Collector {
        Collector { left: MAX_REPORT_HEALTH_BYTES, entries: MAX_REPORT_HEALTH_ENTRIES }
    }
}

impl Collector {
    /// Takes room for `count` entries; false, taking none, when the report has not that
    /// much left.
    pub fn entries(&mut self, count: usize) -> bool {
        let fits = count <= self.entries;
        if fits {
            self.entries -= count;
        }
        fits
    }

    /// `object` as a result may carry it, or `None` when it is a `Secret` or over a bound.
    pub fn take(&mut self, object: &Value) -> Option<Value> {
        if is_secret(object) {
            return None;
        }
        let mut object = object.clone();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        let size = serde_json::to_vec(&object).map_or(usize::MAX, |b| b.len());
        if size > MAX_HEALTH_OBJECT_BYTES || size > self.left {
            return None;
        }
        self.left -= size;
        Some(object)
    }
}

impl ResourceHealth {
    /// The entry for `object` judged `status` with `message`: the message cut, withheld
    /// for a `Secret` (its script may quote its data), and the object collected when
    /// `collector` is given and has room.
    pub fn judged(object: &Value, status: HealthStatus, message: String, collector: Option<&mut Collector>) -> ResourceHealth {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let meta = &object["metadata"];
        let message =
            if is_secret(object) && !message.is_empty() { Some(WITHHELD.to_string()) } else { (!message.is_empty()).then(|| cut(message)) };
        ResourceHealth {
            api_version: text(&object["apiVersion"]),
            kind: text(&object["kind"]),
            namespace: meta["namespace"].as_str().filter(|n| !n.is_empty()).map(String::from),
            name: text(&meta["name"]),
            status,
            message,
            resource: collector.and_then(|c| c.take(object)),
        }
    }

    /// `entries` as read from a report, within the bounds whoever wrote them: the first
    /// [`MAX_HEALTH_RESOURCES`], messages cut, collected objects over a bound or of a
    /// `Secret` dropped.
    pub fn bounded(entries: &[ResourceHealth]) -> Vec<ResourceHealth> {
        let mut collector = Collector::default();
        entries
            .iter()
            .take(MAX_HEALTH_RESOURCES)
            .map(|e| ResourceHealth {
                message: e.message.clone().map(cut),
                resource: e.resource.as_ref().and_then(|r| collector.take(r)),
                ..e.clone()
            })
            .collect()
    }
}

/// What an entry says instead of a script's words about a `Secret`.
pub const WITHHELD: &str = "(the script's message is withheld: it judged a Secret)";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::report::MAX_MESSAGE_BYTES;

    fn deployment(name: &str, pad: usize) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "web",
            "managedFields": [{"manager": "kubectl"}], "annotations": {"pad": "x".repeat(pad)}}})
    }

    #[test]
    fn parses_only_sveltos_statuses() {
        for s in ["Healthy", "Progressing", "Degraded", "Suspended"] {
            assert_eq!(HealthStatus::parse(s).unwrap().name(), s);
        }
        assert_eq!(HealthStatus::parse("healthy"), None);
        assert_eq!(HealthStatus::parse(""), None);
    }

    #[test]
    fn an_entry_names_its_object_and_cuts_its_message() {
        let long = "é".repeat(MAX_MESSAGE_BYTES);
        let entry = ResourceHealth::judged(&deployment("a", 0), HealthStatus::Degraded, long, None);
        assert_eq!(
            (entry.api_version.as_str(), entry.kind.as_str(), entry.namespace.as_deref(), entry.name.as_str()),
            ("apps/v1", "Deployment", Some("web"), "a")
        );
        assert!(entry.message.unwrap().len() <= MAX_MESSAGE_BYTES);
        assert_eq!(entry.resource, None, "collected only when asked");
        let quiet = ResourceHealth::judged(&deployment("a", 0), HealthStatus::Healthy, String::new(), None);
        assert_eq!(quiet.message, None);
        let text = serde_json::to_string(&quiet).unwrap();
        assert_eq!(text, r#"{"apiVersion":"apps/v1","kind":"Deployment","namespace":"web","name":"a","status":"Healthy"}"#);
    }

    #[test]
    fn never_collects_a_secret_nor_repeats_what_a_script_said_of_it() {
        let secret =
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "web"}, "data": {"k": "c2VjcmV0"}});
        let mut collector = Collector::default();
        let entry = ResourceHealth::judged(&secret, HealthStatus::Degraded, "password is c2VjcmV0".into(), Some(&mut collector));
        assert_eq!((entry.resource, entry.message.as_deref()), (None, Some(WITHHELD)));
        let carried = ResourceHealth {
            resource: Some(secret),
            ..ResourceHealth::judged(&deployment("a", 0), HealthStatus::Healthy, String::new(), None)
        };
        assert_eq!(ResourceHealth::bounded(&[carried])[0].resource, None, "ingest drops a Secret a puller collected");
    }

    #[test]
    fn collects_within_the_bounds_without_managed_fields() {
        let mut collector = Collector::default();
        let small = ResourceHealth::judged(&deployment("a", 10), HealthStatus::Healthy, String::new(), Some(&mut collector));
        let collected = small.resource.expect("small enough");
        assert!(collected["metadata"].get("managedFields").is_none() && collected["metadata"]["name"] == "a");
        let big =
            ResourceHealth::judged(&deployment("b", MAX_HEALTH_OBJECT_BYTES), HealthStatus::Healthy, String::new(), Some(&mut collector));
        assert_eq!(big.resource, None, "over one object's bound");
        let mut spent = 0;
        while collector.take(&deployment("c", MAX_HEALTH_OBJECT_BYTES - 200)).is_some() {
            spent += 1;
        }
        assert!((60..=64).contains(&spent), "the report's bound stops collecting: {spent}");
    }

    #[test]
    fn a_report_holds_at_most_its_entries() {
        let mut collector = Collector::default();
        assert!(collector.entries(MAX_REPORT_HEALTH_ENTRIES - 1));
        assert!(!collector.entries(2), "over the report's room: none taken");
        assert!(collector.entries(1));
        assert!(!collector.entries(1));
    }

    #[test]
    fn ingest_keeps_the_first_entries_within_the_bound() {
        let one = ResourceHealth::judged(&deployment("a", 0), HealthStatus::Healthy, String::new(), None);
        let many = vec![one; MAX_HEALTH_RESOURCES + 5];
        assert_eq!(ResourceHealth::bounded(&many).len(), MAX_HEALTH_RESOURCES);
    }
}
