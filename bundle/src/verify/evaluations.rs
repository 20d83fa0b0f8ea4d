//! Step 6 of spec section 8 for the definitions a bundle carries for evaluation (spec
//! 5.14): at most [`MAX_EVALUATIONS`], sorted by kind and name without repeats, each
//! named, each selector naming a version and a kind, a `HealthCheck` with the script that
//! judges health (`aggregate`). Whether a script or a CEL rule
//! compiles is the puller's to find out when it reads the manifests, as for checks.

use super::error::VerifyError;
use crate::statement::{Evaluation, EvaluationKind};

/// Definitions in one bundle: a fleet's classifiers, with room to spare.
pub const MAX_EVALUATIONS: usize = 1_000;
/// Selectors of one definition.
pub const MAX_SELECTORS: usize = 64;

pub(super) fn check_evaluations(evaluations: &[Evaluation]) -> Result<(), VerifyError> {
    let bad = |what: String| VerifyError::BadField(format!("evaluations: {what}"));
    if evaluations.len() > MAX_EVALUATIONS {
        return Err(bad(format!("{} definitions, at most {MAX_EVALUATIONS}", evaluations.len())));
    }
    for pair in evaluations.windows(2) {
        if (pair[0].kind, &pair[0].name) >= (pair[1].kind, &pair[1].name) {
            return Err(bad(format!("{} {:?} is out of order or repeated", pair[1].kind.name(), pair[1].name)));
        }
    }
    for e in evaluations {
        let named = format!("{} {:?}", e.kind.name(), e.name);
        if e.name.is_empty() {
            return Err(bad(format!("a {} has no name", e.kind.name())));
        }
        if e.selectors.len() > MAX_SELECTORS {
            return Err(bad(format!("{named} has {} selectors, at most {MAX_SELECTORS}", e.selectors.len())));
        }
        if e.kind == EvaluationKind::HealthCheck && e.aggregate.as_deref().is_none_or(str::is_empty) {
            return Err(bad(format!("{named} has no aggregate script to judge health")));
        }
        if let Some(i) = e.selectors.iter().position(|s| s.objects.version.is_empty() || s.objects.kind.is_empty()) {
            return Err(bad(format!("{named} selectors[{i}] names no version or no kind")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::{Selection, Selector};

    fn named(name: &str) -> Evaluation {
        Evaluation { kind: EvaluationKind::Classifier, name: name.into(), selectors: vec![], aggregate: None, collect_resources: false }
    }

    #[test]
    fn rejects_definitions_out_of_order_or_repeated() {
        assert_eq!(check_evaluations(&[named("a"), named("b")]), Ok(()));
        for list in [[named("b"), named("a")], [named("a"), named("a")]] {
            let err = check_evaluations(&list).unwrap_err().to_string();
            assert!(err.contains("out of order or repeated"), "{err}");
        }
    }

    #[test]
    fn rejects_a_selector_without_a_kind_and_a_nameless_definition() {
        let selection = Selection::every("", "v1", "");
        let selector = Selector { objects: selection, script: None, cel: vec![] };
        let err = check_evaluations(&[Evaluation { selectors: vec![selector], ..named("a") }]).unwrap_err().to_string();
        assert!(err.contains("Classifier \"a\" selectors[0] names no version or no kind"), "{err}");
        assert!(check_evaluations(&[named("")]).unwrap_err().to_string().contains("has no name"));
    }

    #[test]
    fn rejects_a_health_check_without_its_script() {
        let check = Evaluation { kind: EvaluationKind::HealthCheck, ..named("deployments") };
        let err = check_evaluations(std::slice::from_ref(&check)).unwrap_err().to_string();
        assert!(err.contains("HealthCheck \"deployments\" has no aggregate script"), "{err}");
        let scripted = Evaluation { aggregate: Some("function evaluate() return {} end".into()), ..check };
        assert_eq!(check_evaluations(&[named("a"), scripted]), Ok(()), "sorted by kind: Classifier before HealthCheck");
    }

    #[test]
    fn rejects_too_many_definitions() {
        let many: Vec<Evaluation> = (0..=MAX_EVALUATIONS).map(|i| named(&format!("c{i:05}"))).collect();
        assert!(check_evaluations(&many).unwrap_err().to_string().contains("at most 1000"));
    }
}
