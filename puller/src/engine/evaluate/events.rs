//! An `EventSource` (spec 5.14), evaluated as Sveltos's agent evaluates one: every
//! selector lists its objects and keeps those its script and CEL rules keep (the same
//! evaluator, sandbox and budget as a Classifier's); the objects of every selector
//! together make the event, or, with an aggregated selection, those of them its script
//! returns. The result names them, and with `collectResources` carries them whole
//! (a Secret without its data), within the bounds of [`airlock_bundle::report::Collected`]
//! and, over the whole report, [`MAX_REPORT_COLLECTED_BYTES`].

use airlock_bundle::report::{Collected, MAX_REPORT_COLLECTED_BYTES, WITHHELD};
use airlock_bundle::seal::is_secret;
use airlock_bundle::statement::Evaluation;
use airlock_lua::{LuaBudget, LuaSource, evaluate_selection};

use super::{kept, withheld_if};

/// The objects that make the event `e`, and what its aggregated selection said.
pub(super) async fn event(client: &kube::Client, e: &Evaluation) -> Result<(Collected, String), String> {
    let definition = format!("{} {:?}", e.kind.name(), e.name);
    let kept = kept(client, e).await?;
    let (kept, message) = match &e.aggregate {
        None => (kept, String::new()),
        Some(script) => aggregated(&definition, script, kept)?,
    };
    Ok((Collected::of(&kept, e.collect_resources)?, message))
}

/// The objects of `kept` the aggregated selection `script` returns.
fn aggregated(definition: &str, script: &str, kept: Vec<serde_json::Value>) -> Result<(Vec<serde_json::Value>, String), String> {
    let source = LuaSource { profile: definition, resource: "aggregate", key: "script" };
    let secret = kept.iter().any(is_secret);
    let selected = evaluate_selection(&source, script, &kept, &LuaBudget::DEFAULT)
        .map_err(|err| if secret { WITHHELD.to_string() } else { err.to_string() })?;
    let message = withheld_if(secret, selected.message);
    let mut kept: Vec<Option<serde_json::Value>> = kept.into_iter().map(Some).collect();
    Ok((selected.kept.iter().filter_map(|&i| kept[i].take()).collect(), message))
}

/// What the results of one report have collected so far: a result that would take the
/// report past [`MAX_REPORT_COLLECTED_BYTES`] becomes an error instead.
#[derive(Debug, Default)]
pub(super) struct ReportBudget {
    spent: usize,
}

impl ReportBudget {
    pub(super) fn spend(&mut self, outcome: Result<(Collected, String), String>) -> Result<(Collected, String), String> {
        let (collected, message) = outcome?;
        let bytes = collected.collected_bytes();
        if self.spent + bytes > MAX_REPORT_COLLECTED_BYTES {
            return Err(format!(
                "the objects collected take {bytes} bytes, and the report's results already {}: at most {MAX_REPORT_COLLECTED_BYTES} in all",
                self.spent
            ));
        }
        self.spent += bytes;
        Ok((collected, message))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn services() -> Vec<serde_json::Value> {
        ["a", "b"].iter().map(|n| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "web", "name": n}})).collect()
    }

    #[test]
    fn an_aggregated_selection_keeps_what_it_returns() {
        let script = "function evaluate() return {resources = {resources[2]}, message = 'one'} end";
        let (kept, message) = aggregated("EventSource \"e\"", script, services()).unwrap();
        assert_eq!((kept, message.as_str()), (vec![services()[1].clone()], "one"));
    }

    #[test]
    fn a_script_that_saw_a_secret_says_nothing_of_it() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "a", "name": "s"}, "data": {"k": "c2VjcmV0"}});
        let err = aggregated("EventSource \"e\"", "function evaluate() error(resources[1].data.k) end", vec![secret.clone()]).unwrap_err();
        assert_eq!(err, WITHHELD);
        let (_, message) =
            aggregated("EventSource \"e\"", "function evaluate() return {message = resources[1].data.k} end", vec![secret]).unwrap();
        assert_eq!(message, WITHHELD);
    }

    #[test]
    fn the_report_budget_turns_the_result_that_overflows_it_into_an_error() {
        let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "x".repeat(200 * 1024)}});
        let mut budget = ReportBudget::default();
        let one = Collected::of(std::slice::from_ref(&big), true).unwrap();
        let results: Vec<_> = (0..12).map(|_| budget.spend(Ok((one.clone(), String::new())))).collect();
        let fitted = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(fitted, MAX_REPORT_COLLECTED_BYTES / one.collected_bytes(), "as many as fit, then errors");
        assert!(results.last().unwrap().as_ref().unwrap_err().contains("at most 2097152 in all"));
        assert!(budget.spend(Err("listing failed".into())).is_err());
    }
}
