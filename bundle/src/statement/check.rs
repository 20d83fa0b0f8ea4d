//! The checks of a part (spec 5.11): Sveltos's `validateHealths`, `preDeployChecks`,
//! `preDeleteChecks` and `postDeleteChecks`, which the puller runs against its own
//! cluster, since only it can reach it. Each judges objects it lists (by a Lua script,
//! CEL rules or both), metrics alone (a script over Prometheus query results), or the
//! outcome of a Job the check runs.

use serde::{Deserialize, Serialize};

/// The name of each list of checks, in the statement as in Sveltos's profile spec.
pub mod list {
    pub const VALIDATE_HEALTHS: &str = "validateHealths";
    pub const PRE_DEPLOY: &str = "preDeployChecks";
    pub const PRE_DELETE: &str = "preDeleteChecks";
    pub const POST_DELETE: &str = "postDeleteChecks";
}

/// A part's checks, by when they run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Checks {
    /// After the part is applied: the part is deployed only once they pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validate_healths: Vec<Check>,
    /// Before the part is applied: while one fails, the part is held back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_deploy: Vec<Check>,
    /// Before the part's objects are pruned, once the part leaves the bundle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_delete: Vec<Check>,
    /// After the part's objects are pruned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_delete: Vec<Check>,
}

impl Checks {
    pub fn is_empty(&self) -> bool {
        self.validate_healths.is_empty() && self.pre_deploy.is_empty() && self.pre_delete.is_empty() && self.post_delete.is_empty()
    }

    /// Every check, each with the name of its list in the statement.
    pub fn all(&self) -> impl Iterator<Item = (&'static str, &Check)> {
        let lists = [
            (list::VALIDATE_HEALTHS, &self.validate_healths),
            (list::PRE_DEPLOY, &self.pre_deploy),
            (list::PRE_DELETE, &self.pre_delete),
            (list::POST_DELETE, &self.post_delete),
        ];
        lists.into_iter().flat_map(|(list, checks)| checks.iter().map(move |c| (list, c)))
    }
}

/// One check (Sveltos `ValidateHealth`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Check {
    pub name: String,
    /// Sveltos's `featureID`: `Resources`, `Helm` or `Kustomize`.
    pub feature: String,
    /// The objects judged; absent for a check on metrics alone or a Job check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<Selection>,
    /// A Lua program whose `evaluate` judges each object (or the metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// CEL rules over `resource`: an object passes when one of them is true.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cel: Vec<CelRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobCheck>,
}

/// Which objects a check lists: one kind, in one namespace or all, filtered by labels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Selection {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only the object of this name; absent means every name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A Kubernetes label selector (`app=web,!canary`), Sveltos's `labelFilters` joined.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
}

impl Selection {
    /// Every object of one kind, in every namespace.
    pub fn every(group: &str, version: &str, kind: &str) -> Selection {
        Selection {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            namespace: None,
            name: None,
            label_selector: String::new(),
        }
    }
}

/// A named CEL rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CelRule {
    pub name: String,
    pub rule: String,
}

/// Prometheus instant queries whose scalar results the script reads as `metrics[name]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metrics {
    /// Base URL of the Prometheus-compatible endpoint.
    pub url: String,
    /// The query path under `url`.
    pub path: String,
    /// A Secret of the managed cluster with `token`, or `username` and `password`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretName>,
    pub queries: Vec<MetricQuery>,
}

/// A Secret by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretName {
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricQuery {
    pub name: String,
    pub query: String,
}

/// A Job the check creates; Complete passes, Failed or the timeout fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JobCheck {
    /// The `batch/v1` Job, as the publisher read it from the referenced ConfigMap or Secret.
    pub manifest: serde_json::Value,
    pub timeout_seconds: u64,
}
