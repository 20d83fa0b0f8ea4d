//! The definitions a bundle carries for evaluation (spec 5.14), evaluated against this
//! cluster with the evaluator checks use: the same object lists, the same Lua sandbox
//! and budget, the same CEL. [`validate`] compiles every script and rule when the
//! bundle is read, so one that does not compile refuses the bundle before any write;
//! [`evaluate`] runs them and gives one bounded result per definition for the report.
//!
//! A `Classifier` matches as Sveltos's agent decides: each selector lists its objects
//! and keeps those its script calls `matching` (every one, without a script) and, with
//! CEL rules, of which one is true. Without an aggregate script the cluster matches when
//! every selector kept at least one object; with one, the script judges every object
//! kept, together. A kind the cluster does not serve lists nothing. A list that fails or
//! a script that fails makes the result an error, which says nothing about the cluster.
//! A `HealthCheck` keeps objects as a Classifier does, then its script judges each
//! (`health`); an `EventSource` keeps them the same way too (`events`).

use airlock_bundle::report::{Collector, Evaluated, WITHHELD};
use airlock_bundle::seal::is_secret;
use airlock_bundle::statement::{Evaluation, EvaluationKind, Selector};
use airlock_lua::{LuaBudget, LuaSource, MatchInput, check_health_syntax, evaluate_match};

use crate::engine::checks::{cel::Rules, objects};
use crate::engine::model::error::EngineError;

mod events;
mod health;

/// Compiles every script and CEL rule of `evaluations`.
pub fn validate(evaluations: &[Evaluation]) -> Result<(), EngineError> {
    for e in evaluations {
        let definition = format!("{} {:?}", e.kind.name(), e.name);
        let refuse = |field: String, message: String| EngineError::Evaluation { definition: definition.clone(), field, message };
        for (i, selector) in e.selectors.iter().enumerate() {
            let field = format!("selectors[{i}]");
            Rules::compile(&selector.cel).map_err(|why| refuse(field.clone(), why))?;
            if let Some(script) = &selector.script {
                let source = LuaSource { profile: &definition, resource: &field, key: "script" };
                check_health_syntax(&source, script, &LuaBudget::DEFAULT).map_err(|err| refuse(field.clone(), err.to_string()))?;
            }
        }
        if let Some(script) = &e.aggregate {
            let source = LuaSource { profile: &definition, resource: "aggregate", key: "script" };
            check_health_syntax(&source, script, &LuaBudget::DEFAULT).map_err(|err| refuse("aggregate".into(), err.to_string()))?;
        }
    }
    Ok(())
}

/// One result per definition of `evaluations`, in their order.
pub async fn evaluate(client: &kube::Client, evaluations: &[Evaluation]) -> Vec<Evaluated> {
    let mut results = Vec::with_capacity(evaluations.len());
    // One budget of collected objects for the whole report, per kind of result.
    let (mut budget, mut collector) = (events::ReportBudget::default(), Collector::default());
    for e in evaluations {
        let result = match e.kind {
            EvaluationKind::Classifier => Evaluated::of(e, classify(client, e).await),
            EvaluationKind::EventSource => Evaluated::event(e, budget.spend(events::event(client, e).await)),
            EvaluationKind::HealthCheck => match health::judge(client, e, &mut collector).await {
                Ok((said, found)) => Evaluated { health: Some(found), ..Evaluated::of(e, Ok(said)) },
                Err(why) => Evaluated::of(e, Err(why)),
            },
        };
        if let Some(why) = &result.error {
            tracing::warn!("{} {:?} could not be evaluated: {why}", e.kind.name(), e.name);
        }
        results.push(result);
    }
    results
}

/// Whether the cluster matches a Classifier's `deployedResourceConstraint`, and what its
/// aggregate script said.
async fn classify(client: &kube::Client, e: &Evaluation) -> Result<(bool, String), String> {
    let definition = format!("{} {:?}", e.kind.name(), e.name);
    let mut kept = Vec::new();
    for (i, selector) in e.selectors.iter().enumerate() {
        let found = select(client, &definition, i, selector).await?;
        if found.is_empty() && e.aggregate.is_none() {
            return Ok((false, String::new()));
        }
        kept.extend(found);
    }
    let Some(script) = &e.aggregate else { return Ok((true, String::new())) };
    let source = LuaSource { profile: &definition, resource: "aggregate", key: "script" };
    let secret = kept.iter().any(is_secret);
    let said = evaluate_match(&source, script, MatchInput::Objects(&kept), &LuaBudget::DEFAULT)
        .map_err(|err| if secret { WITHHELD.to_string() } else { err.to_string() })?;
    Ok((said.matching, withheld_if(secret, said.message)))
}

/// Every object the selectors of `e` kept, in their order.
pub(super) async fn kept(client: &kube::Client, e: &Evaluation) -> Result<Vec<serde_json::Value>, String> {
    let definition = format!("{} {:?}", e.kind.name(), e.name);
    let mut kept = Vec::new();
    for (i, selector) in e.selectors.iter().enumerate() {
        kept.extend(select(client, &definition, i, selector).await?);
    }
    Ok(kept)
}

/// The objects `selector` (the `i`th of `definition`) lists and keeps: those its script
/// calls `matching` (every one, without a script) and, with CEL rules, of which one is
/// true. A kind the cluster does not serve lists nothing.
pub(super) async fn select(
    client: &kube::Client,
    definition: &str,
    i: usize,
    selector: &Selector,
) -> Result<Vec<serde_json::Value>, String> {
    let field = format!("selectors[{i}]");
    let rules = Rules::compile(&selector.cel)?;
    let listed = objects::list(client, &selector.objects).await?.unwrap_or_default();
    let mut kept = Vec::new();
    for object in listed {
        let by_script = match &selector.script {
            None => true,
            Some(script) => {
                let source = LuaSource { profile: definition, resource: &field, key: "script" };
                let judged = evaluate_match(&source, script, MatchInput::Object(&object), &LuaBudget::DEFAULT);
                judged.map_err(|err| if is_secret(&object) { WITHHELD.to_string() } else { err.to_string() })?.matching
            }
        };
        if by_script && (selector.cel.is_empty() || rules.matched(&object).is_some()) {
            kept.push(object);
        }
    }
    Ok(kept)
}

/// A script's `message`, or the note that it is withheld when the script saw a Secret.
pub(super) fn withheld_if(secret: bool, message: String) -> String {
    if secret && !message.is_empty() { WITHHELD.to_string() } else { message }
}

#[cfg(test)]
mod tests {
    use airlock_bundle::PartSettings;
    use airlock_bundle::statement::{CelRule, Selection, Selector};

    use super::*;
    use crate::engine::testing;

    fn classifier(selectors: Vec<Selector>, aggregate: Option<&str>) -> Evaluation {
        Evaluation {
            kind: EvaluationKind::Classifier,
            name: "c".into(),
            selectors,
            aggregate: aggregate.map(String::from),
            collect_resources: false,
        }
    }

    fn selector(script: Option<&str>, cel: &[&str]) -> Selector {
        let objects = Selection::every("", "v1", "Service");
        let cel = cel.iter().map(|r| CelRule { name: "r".into(), rule: r.to_string() }).collect();
        Selector { objects, script: script.map(String::from), cel }
    }

    #[test]
    fn refuses_a_definition_whose_script_or_rule_does_not_compile() {
        assert_eq!(validate(&[classifier(vec![selector(Some("function evaluate() return {} end"), &["true"])], None)]), Ok(()));
        let err = validate(&[classifier(vec![selector(Some("function evaluate("), &[])], None)]).unwrap_err();
        assert!(matches!(&err, EngineError::Evaluation { field, .. } if field == "selectors[0]"), "{err}");
        assert!(err.is_rejection());
        let err = validate(&[classifier(vec![selector(None, &["resource.("])], None)]).unwrap_err().to_string();
        assert!(err.contains("evaluation Classifier \"c\": selectors[0]: CEL rule"), "{err}");
        let err = validate(&[classifier(vec![], Some("function evaluate( return"))]).unwrap_err().to_string();
        assert!(err.contains("aggregate"), "{err}");
    }

    #[test]
    fn a_bundle_carrying_a_script_that_does_not_compile_is_refused_when_read() {
        let files =
            [("ClusterProfile.p/cm.yaml".to_string(), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n".to_string())];
        let broken = classifier(vec![selector(Some("function evaluate("), &[])], None);
        let bundle = testing::verified_with(1, &files, &|_| PartSettings::default(), |r| r.settings.evaluations = vec![broken]);
        let err = crate::engine::desired(&bundle, &testing::settings("fleet/edge-1")).unwrap_err();
        assert!(matches!(err, EngineError::Evaluation { .. }) && err.is_rejection(), "{err}");
    }
}
