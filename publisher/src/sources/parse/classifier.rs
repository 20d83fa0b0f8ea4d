//! A Classifier ([`parse_classifier`]): its labels, its version constraints, and its
//! `deployedResourceConstraint` as the evaluation a bundle carries (bundles-format.md
//! 5.14). Each resource selector's `labelFilters` and `selector` are joined into one
//! label selector (both must hold, as Sveltos ANDs them); its `evaluate` and
//! `evaluateCEL` are carried as written, for the puller to compile. A Classifier that
//! cannot be used (a label that is no label, a version that is no version) is a
//! [`ModelError`] naming the field, and is carried to no cluster.

use airlock_bundle::cluster::{is_label_key, is_label_name};
use airlock_bundle::statement::{CelRule, Evaluation, EvaluationKind, Selection, Selector as EvaluationSelector};
use serde_json::Value;

use super::checks::label_selector;
use super::reader::{Fields, Metadata, check_version};
use crate::sources::classifier::{Classifier, Comparison, VersionConstraint, constraint_version};
use crate::sources::model::ModelError;
use crate::sources::selector::Selector;

/// Parses a Classifier object.
pub fn parse_classifier(value: &Value) -> Result<Classifier, ModelError> {
    let meta = Metadata::of(value, "Classifier")?;
    let name = meta.name.to_string();
    let object = format!("Classifier/{name}");
    check_version(value, &object)?;
    let spec = Fields::of(&value["spec"], "spec", &object)?;
    let mut labels = Vec::new();
    for (_, label) in spec.items("classifierLabels")? {
        let (key, value): (String, String) = (label.or_default("key")?, label.or_default("value")?);
        if !is_label_key(&key) {
            return Err(label.error("key", format!("{key:?} is not a label key")));
        }
        if !value.is_empty() && !is_label_name(&value) {
            return Err(label.error("value", format!("{value:?} is not a label value")));
        }
        labels.push((key, value));
    }
    let mut versions = Vec::new();
    for (_, constraint) in spec.items("kubernetesVersionConstraints")? {
        let text: String = constraint.or_default("comparison")?;
        let comparison = Comparison::parse(&text).ok_or_else(|| {
            constraint.error(
                "comparison",
                format!("{text:?} is none of Equal, NotEqual, GreaterThan, LessThan, GreaterThanOrEqualTo, LessThanOrEqualTo"),
            )
        })?;
        let version = constraint_version(&constraint.or_default::<String>("version")?).map_err(|m| constraint.error("version", m))?;
        versions.push(VersionConstraint { comparison, version });
    }
    let deployed = spec.nested("deployedResourceConstraint")?;
    let selectors = deployed.items("resourceSelectors")?.iter().map(|(_, s)| selector(s)).collect::<Result<_, _>>()?;
    let aggregate = deployed.get::<String>("aggregatedClassification")?.filter(|s| !s.is_empty());
    let evaluation = Evaluation { kind: EvaluationKind::Classifier, name: name.clone(), selectors, aggregate, collect_resources: false };
    Ok(Classifier { name, labels, versions, evaluation })
}

/// One resource selector, as a Classifier's and a HealthCheck's `resourceSelectors` write it.
pub(super) fn selector(s: &Fields<'_>) -> Result<EvaluationSelector, ModelError> {
    let (version, kind): (String, String) = (s.or_default("version")?, s.or_default("kind")?);
    if version.is_empty() || kind.is_empty() {
        return Err(s.own_error("a resource selector needs a version and a kind".into()));
    }
    let mut terms: Vec<String> = vec![label_selector(s)?].into_iter().filter(|t| !t.is_empty()).collect();
    match s.raw("selector") {
        Value::Null => {}
        raw => {
            if let Some(parsed) = Selector::parse(raw).map_err(|m| s.error("selector", m))? {
                terms.push(parsed.query());
            }
        }
    }
    let cel = s
        .items("evaluateCEL")?
        .iter()
        .map(|(_, r)| Ok(CelRule { name: r.or_default("name")?, rule: r.or_default("rule")? }))
        .collect::<Result<_, ModelError>>()?;
    let objects = Selection {
        group: s.or_default("group")?,
        version,
        kind,
        namespace: s.get::<String>("namespace")?.filter(|n| !n.is_empty()),
        name: s.get::<String>("name")?.filter(|n| !n.is_empty()),
        label_selector: terms.join(","),
    };
    Ok(EvaluationSelector { objects, script: s.get::<String>("evaluate")?.filter(|e| !e.is_empty()), cel })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn parse(text: &str) -> Result<Classifier, ModelError> {
        parse_classifier(&yaml::parse_documents(text).unwrap()[0])
    }

    #[test]
    fn reads_the_documented_service_classifier() {
        let c = parse(
            "apiVersion: lib.projectsveltos.io/v1beta1
kind: Classifier
metadata: {name: sveltos-service}
spec:
  classifierLabels: [{key: sveltos-service, value: present}]
  deployedResourceConstraint:
    resourceSelectors:
    - group: ''
      version: v1
      kind: Service
      labelFilters: [{key: sveltos, operation: Equal, value: fv}]
      selector: {matchExpressions: [{key: tier, operator: In, values: [web]}]}
",
        )
        .unwrap();
        assert_eq!(c.labels, vec![("sveltos-service".to_string(), "present".to_string())]);
        let selection = &c.evaluation.selectors[0].objects;
        assert_eq!((selection.kind.as_str(), selection.label_selector.as_str()), ("Service", "sveltos=fv,tier in (web)"));
        assert_eq!((selection.namespace.as_ref(), c.evaluation.aggregate.as_ref()), (None, None));
    }

    #[test]
    fn refuses_what_cannot_be_used_naming_the_field() {
        let base = "apiVersion: lib.projectsveltos.io/v1beta1\nkind: Classifier\nmetadata: {name: c}\nspec:\n";
        for (spec, field) in [
            ("  classifierLabels: [{key: 'a b', value: x}]", "spec.classifierLabels[0].key"),
            ("  kubernetesVersionConstraints: [{comparison: Above, version: 1.2.3}]", "spec.kubernetesVersionConstraints[0].comparison"),
            ("  kubernetesVersionConstraints: [{comparison: Equal, version: latest}]", "spec.kubernetesVersionConstraints[0].version"),
            ("  deployedResourceConstraint: {resourceSelectors: [{version: v1}]}", "spec.deployedResourceConstraint.resourceSelectors[0]"),
        ] {
            let err = parse(&format!("{base}{spec}\n")).unwrap_err().to_string();
            assert!(err.contains("Classifier/c") && err.contains(field), "{spec}: {err}");
        }
    }
}
