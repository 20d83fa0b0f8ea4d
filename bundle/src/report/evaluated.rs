//! What a run found when it evaluated the definitions its bundle carries (spec 14.3
//! `evaluations`, from spec 5.14): one result per definition, naming the definition by
//! kind, name and digest, so the management side acts only on results of the definition
//! it holds now. Bounded: a message or an error is cut to
//! [`MAX_MESSAGE_BYTES`](super::MAX_MESSAGE_BYTES).

use serde::{Deserialize, Serialize};

use super::collected::Collected;
use super::health::ResourceHealth;
use super::message::cut;
use crate::Digest;
use crate::statement::{Evaluation, EvaluationKind};

/// The result of one definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluated {
    pub kind: EvaluationKind,
    pub name: String,
    /// [`Evaluation::digest`] of the definition evaluated.
    pub definition: Digest,
    /// For a `Classifier`: whether the cluster matches; for a `HealthCheck`: whether
    /// every object judged is `Healthy`. False when `error` is set.
    pub matched: bool,
    /// What the aggregate script said, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Why the definition could not be evaluated (a list refused, a script that failed):
    /// the result says nothing about the cluster then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a `HealthCheck` evaluated without error: each object its script judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Vec<ResourceHealth>>,
    /// For an `EventSource` evaluated without error: the objects that make the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collected: Option<Collected>,
}

impl Evaluated {
    /// The result of `definition`: `Ok(matched, message)` or the error.
    pub fn of(definition: &Evaluation, outcome: Result<(bool, String), String>) -> Evaluated {
        let (matched, message, error) = match outcome {
            Ok((matched, message)) => (matched, (!message.is_empty()).then(|| cut(message)), None),
            Err(error) => (false, None, Some(cut(error))),
        };
        let (kind, name) = (definition.kind, definition.name.clone());
        Evaluated { kind, name, definition: definition.digest(), matched, message, error, health: None, collected: None }
    }

    /// The result of an `EventSource`: the event's objects and what the aggregated
    /// selection said, or the error. It matched when some object makes the event.
    pub fn event(definition: &Evaluation, outcome: Result<(Collected, String), String>) -> Evaluated {
        match outcome {
            Ok((collected, message)) => {
                let matched = !collected.matching_resources.is_empty();
                Evaluated { collected: Some(collected), ..Evaluated::of(definition, Ok((matched, message))) }
            }
            Err(error) => Evaluated::of(definition, Err(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::MAX_MESSAGE_BYTES;

    #[test]
    fn messages_and_errors_are_bounded() {
        let definition =
            Evaluation { kind: EvaluationKind::Classifier, name: "a".into(), selectors: vec![], aggregate: None, collect_resources: false };
        let long = "é".repeat(MAX_MESSAGE_BYTES);
        let said = Evaluated::of(&definition, Ok((true, long.clone())));
        assert!(said.message.as_ref().unwrap().len() <= MAX_MESSAGE_BYTES && said.matched);
        let failed = Evaluated::of(&definition, Err(long));
        assert!(!failed.matched && failed.error.unwrap().len() <= MAX_MESSAGE_BYTES);
        assert_eq!(Evaluated::of(&definition, Ok((false, String::new()))).message, None);
        assert_eq!(said.definition, definition.digest());
    }
}
