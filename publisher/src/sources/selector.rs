//! Kubernetes label selectors as Sveltos's clusterSelector and `export --selector` write
//! them: matchLabels and matchExpressions with the four set operators, parsed strictly
//! (kube's own conversion takes an `In` without values and an `Exists` with them), then
//! matched by [`kube::core::Selector`]. Which objects carry the labels is the caller's
//! business.

use std::collections::BTreeMap;

use kube::core::{Expression, SelectorExt};
use serde::Deserialize;
use serde_json::Value;

/// A Kubernetes label selector: matchLabels and matchExpressions, all of which must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector(kube::core::Selector);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSelector {
    #[serde(default)]
    match_labels: BTreeMap<String, String>,
    #[serde(default)]
    match_expressions: Vec<RawRequirement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequirement {
    key: String,
    operator: String,
    #[serde(default)]
    values: Vec<String>,
}

impl RawRequirement {
    fn expression(self, index: usize) -> Result<Expression, String> {
        let needs_values = matches!(self.operator.as_str(), "In" | "NotIn");
        if !needs_values && !matches!(self.operator.as_str(), "Exists" | "DoesNotExist") {
            return Err(format!("matchExpressions[{index}]: operator {:?} is not In, NotIn, Exists or DoesNotExist", self.operator));
        }
        if needs_values == self.values.is_empty() {
            let want = if needs_values { "needs values" } else { "takes no values" };
            return Err(format!("matchExpressions[{index}]: operator {} {want}", self.operator));
        }
        let values = self.values.into_iter().collect();
        Ok(match self.operator.as_str() {
            "In" => Expression::In(self.key, values),
            "NotIn" => Expression::NotIn(self.key, values),
            "Exists" => Expression::Exists(self.key),
            _ => Expression::DoesNotExist(self.key),
        })
    }
}

impl Selector {
    /// Parses a clusterSelector. `None` for an empty one, which selects nothing in Sveltos
    /// (where Kubernetes's empty selector selects everything).
    pub fn parse(value: &Value) -> Result<Option<Selector>, String> {
        let raw = RawSelector::deserialize(value).map_err(|e| e.to_string())?;
        let expressions =
            raw.match_expressions.into_iter().enumerate().map(|(i, r)| r.expression(i)).collect::<Result<Vec<_>, String>>()?;
        if raw.match_labels.is_empty() && expressions.is_empty() {
            return Ok(None);
        }
        let mut selector: kube::core::Selector = raw.match_labels.into_iter().collect();
        selector.extend(expressions);
        Ok(Some(Selector(selector)))
    }

    /// The selector as the Kubernetes API takes it in a list's `labelSelector`.
    pub fn query(&self) -> String {
        self.0.to_string()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.matches(labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn selector(v: Value) -> Selector {
        Selector::parse(&v).unwrap().unwrap()
    }

    #[test]
    fn every_operator_and_match_labels() {
        let eu_edge = labels(&[("region", "eu"), ("tier", "edge")]);
        let us = labels(&[("region", "us")]);
        let none = labels(&[]);
        let cases = [
            (json!({"matchLabels": {"region": "eu"}}), [true, false, false]),
            (json!({"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu", "ap"]}]}), [true, false, false]),
            (json!({"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["eu"]}]}), [false, true, true]),
            (json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}), [true, false, false]),
            (json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}), [false, true, true]),
            (
                json!({"matchLabels": {"region": "eu"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["edge"]}]}),
                [false, false, false],
            ),
        ];
        for (sel, want) in cases {
            let s = selector(sel.clone());
            assert_eq!([s.matches(&eu_edge), s.matches(&us), s.matches(&none)], want, "{sel}");
        }
    }

    #[test]
    fn empty_selectors_match_nothing_and_bad_ones_are_refused() {
        assert_eq!(Selector::parse(&json!({})), Ok(None));
        assert_eq!(Selector::parse(&json!({"matchLabels": {}, "matchExpressions": []})), Ok(None));
        for bad in [
            json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            json!({"matchLabel": {"a": "b"}}),
        ] {
            assert!(Selector::parse(&bad).is_err(), "{bad}");
        }
    }
}
