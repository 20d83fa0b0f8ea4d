//! What a bundle asks its puller to evaluate on the cluster and report back, beside what
//! it applies (spec 5.14): definitions the management side cannot evaluate itself, since
//! only the puller reaches the cluster. One shape for every kind: selectors that list
//! objects and judge each (a Lua script, CEL rules, or neither), and an optional script
//! over everything the selectors kept. What a result means is the kind's: for a
//! `Classifier` (Sveltos's `deployedResourceConstraint`) it is whether the cluster
//! matches; for an `EventSource`, which objects make the event; for a `HealthCheck`,
//! the health of each object its script judged (`report::health`). The results travel
//! back in the report (spec 14.3 `evaluations`).

use serde::{Deserialize, Serialize};

use super::check::{CelRule, Selection};
use crate::Digest;

/// The kinds of definitions a bundle may carry for evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EvaluationKind {
    /// Sveltos `Classifier`: whether the cluster runs what its `deployedResourceConstraint`
    /// asks for.
    Classifier,
    /// Sveltos `EventSource`: which objects of the cluster make an event, for the
    /// EventTriggers that name it.
    EventSource,
    /// Sveltos `HealthCheck`: the health of each object its `evaluateHealth` judges.
    HealthCheck,
}

impl EvaluationKind {
    pub fn name(self) -> &'static str {
        match self {
            EvaluationKind::Classifier => "Classifier",
            EvaluationKind::EventSource => "EventSource",
            EvaluationKind::HealthCheck => "HealthCheck",
        }
    }
}

/// One definition to evaluate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Evaluation {
    pub kind: EvaluationKind,
    /// The name of the management-side object it comes from.
    pub name: String,
    /// What to list and how to judge each object listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<Selector>,
    /// Lua whose `evaluate` judges every object the selectors kept, together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<String>,
    /// Sveltos's `collectResources`, for an `EventSource` or a `HealthCheck`: the result
    /// carries the objects whole, not only their names.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub collect_resources: bool,
}

impl Evaluation {
    /// The digest of the definition's compact JSON, which a result names so that the
    /// management side never takes a result for a definition that has changed since.
    pub fn digest(&self) -> Digest {
        Digest::of(&serde_json::to_vec(self).expect("an evaluation serialises"))
    }
}

/// Which objects one selector lists, and how each is judged: an object is kept when its
/// script says so (absent: kept) and, with CEL rules, when one of them is true.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Selector {
    pub objects: Selection,
    /// Lua whose `evaluate` is called with each object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cel: Vec<CelRule>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classifier(json: &str) -> Result<Evaluation, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn parses_strictly() {
        let ok = r#"{"kind":"Classifier","name":"gpu","selectors":[{"objects":{"version":"v1","kind":"Node"},"script":"x"}]}"#;
        let parsed = classifier(ok).unwrap();
        assert_eq!(String::from_utf8(serde_json::to_vec(&parsed).unwrap()).unwrap(), ok, "written back as read");
        assert!(classifier(r#"{"kind":"HealthProbe","name":"a"}"#).unwrap_err().to_string().contains("unknown variant"));
        let event = r#"{"kind":"EventSource","name":"lb","aggregate":"x","collectResources":true}"#;
        assert_eq!(String::from_utf8(serde_json::to_vec(&classifier(event).unwrap()).unwrap()).unwrap(), event);
        assert!(!classifier(r#"{"kind":"EventSource","name":"lb","collectResources":false}"#).unwrap().collect_resources);
        assert!(classifier(r#"{"kind":"Classifier","name":"a","labels":[]}"#).unwrap_err().to_string().contains("unknown field"));
    }

    #[test]
    fn the_digest_follows_the_definition() {
        let a = classifier(r#"{"kind":"Classifier","name":"a"}"#).unwrap();
        let b = Evaluation { aggregate: Some("function evaluate() end".into()), ..a.clone() };
        assert_eq!(a.digest(), a.clone().digest());
        assert_ne!(a.digest(), b.digest());
    }
}
