//! What a verified report means for the cluster's Classifiers (bundles-format.md 14.5),
//! as Sveltos's classifier controller decides it: whether the cluster matches each one,
//! which Classifier owns each label key on the cluster, which labels it gets or loses,
//! and the ClassifierReport of each (classifier, cluster) pair. Pure: `classifier_target`
//! reads the Classifiers and the reports kept, and writes what this decides.
//!
//! A cluster matches a Classifier when its version satisfies every
//! `kubernetesVersionConstraints` entry (decided here, from the version the report
//! carries, or the one ingested before when it carries none) and its puller found the
//! `deployedResourceConstraint` met. A report whose result names another definition
//! (the Classifier changed since the bundle was published), or an error, says nothing:
//! the match recorded before stays until a report of the current definition arrives.
//!
//! One Classifier owns a label key on a cluster at a time: the one whose report already
//! lists the key as managed, while it still matches and still sets the key; otherwise,
//! of the matching Classifiers that set it, the first by name (Sveltos gives it to the
//! first to register, which depends on its controller's reconcile order). Every other
//! claimant records the key as unmanaged, naming the owner. A key no Classifier owns any
//! more is removed from the cluster, but only one that a report recorded as managed:
//! labels an operator set are never touched.

use std::collections::{BTreeMap, BTreeSet};

use airlock_bundle::ClusterId;
use airlock_bundle::report::Evaluated;
use airlock_bundle::statement::EvaluationKind;
use serde_json::{Value, json};

use super::report::PullReport;
use crate::sources::classifier::Classifier;

/// Labels of a ClassifierReport, as libsveltos names them.
pub const CLASSIFIER_NAME_LABEL: &str = "projectsveltos.io/classifier-name";
pub const REPORT_CLUSTER_NAME_LABEL: &str = "classifier.projectsveltos.io/cluster-name";
pub const REPORT_CLUSTER_TYPE_LABEL: &str = "classifier.projectsveltos.io/cluster-type";
/// The cluster type in the report's labels (lower case) and spec.
const CLUSTER_TYPE: &str = "Sveltos";

/// What a kept ClassifierReport says of its pair.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    pub matched: bool,
    pub managed: Vec<String>,
}

/// The ClassifierReport of one Classifier on the cluster, as it must be now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub classifier: String,
    pub matched: bool,
    pub managed: Vec<String>,
    /// Keys it sets but another owns: `(key, owner)`.
    pub unmanaged: Vec<(String, String)>,
}

/// Everything a report changes for the cluster's Classifiers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classified {
    pub pairs: Vec<Pair>,
    /// Labels to set (`Some`) or remove (`None`) on the SveltosCluster.
    pub labels: BTreeMap<String, Option<String>>,
    /// Kept reports of Classifiers that no longer exist, to delete.
    pub gone: Vec<String>,
}

/// Decides, for the cluster whose labels are `labels`, what `evaluated` (the report's
/// results) and `version` (its Kubernetes version) mean, given the Classifiers and the
/// reports `kept` before, by Classifier name.
pub fn classify(
    classifiers: &[Classifier],
    evaluated: &[Evaluated],
    version: Option<&str>,
    kept: &BTreeMap<String, Kept>,
    labels: &BTreeMap<String, String>,
) -> Classified {
    let mut matched: BTreeMap<&str, bool> = BTreeMap::new();
    for c in classifiers {
        let digest = c.evaluation.digest();
        // Nothing to list needs no puller: such a constraint is met, as Sveltos meets it.
        let nothing_to_list = c.evaluation.selectors.is_empty() && c.evaluation.aggregate.is_none();
        let resources = evaluated
            .iter()
            .find(|e| e.kind == EvaluationKind::Classifier && e.name == c.name && e.definition == digest && e.error.is_none())
            .map(|e| e.matched)
            .or(nothing_to_list.then_some(true));
        let versions = if c.versions.is_empty() { Some(true) } else { version.and_then(|v| c.version_matches(v)) };
        let decided = match (versions, resources) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        };
        if let Some(m) = decided.or_else(|| kept.get(&c.name).map(|k| k.matched)) {
            matched.insert(&c.name, m);
        }
    }
    let owners = owners(classifiers, &matched, kept);
    let mut out = Classified::default();
    for c in classifiers {
        let Some(&is_match) = matched.get(c.name.as_str()) else { continue };
        let (mut managed, mut unmanaged) = (Vec::new(), Vec::new());
        for (key, _) in c.labels.iter().filter(|_| is_match) {
            match owners.get(key.as_str()) {
                Some(owner) if *owner == c.name => managed.push(key.clone()),
                Some(owner) => unmanaged.push((key.clone(), owner.to_string())),
                None => {}
            }
        }
        out.pairs.push(Pair { classifier: c.name.clone(), matched: is_match, managed, unmanaged });
    }
    for (key, owner) in &owners {
        let value = classifiers.iter().find(|c| c.name == *owner).and_then(|c| c.labels.iter().find(|(k, _)| k == key)).map(|(_, v)| v);
        if let Some(value) = value
            && labels.get(*key) != Some(value)
        {
            out.labels.insert(key.to_string(), Some(value.clone()));
        }
    }
    let was_managed: BTreeSet<&str> = kept.values().flat_map(|k| k.managed.iter().map(String::as_str)).collect();
    for key in was_managed {
        if !owners.contains_key(key) && labels.contains_key(key) {
            out.labels.insert(key.to_string(), None);
        }
    }
    out.gone = kept.keys().filter(|name| !classifiers.iter().any(|c| c.name == **name)).cloned().collect();
    out
}

/// [`classify`] for `report` of the cluster whose SveltosCluster is `object`: its labels,
/// and the Kubernetes version the report carries or the one ingested before.
pub fn of_report(classifiers: &[Classifier], report: &PullReport, object: &Value, kept: &BTreeMap<String, Kept>) -> Classified {
    let labels: BTreeMap<String, String> = serde_json::from_value(object["metadata"]["labels"].clone()).unwrap_or_default();
    let version = report.kubernetes_version.clone().or_else(|| object["status"]["version"].as_str().map(String::from));
    classify(classifiers, &report.evaluations, version.as_deref(), kept, &labels)
}

/// The owner of each label key some matching Classifier sets.
fn owners<'a>(classifiers: &'a [Classifier], matched: &BTreeMap<&str, bool>, kept: &BTreeMap<String, Kept>) -> BTreeMap<&'a str, &'a str> {
    let mut claimants: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in classifiers.iter().filter(|c| matched.get(c.name.as_str()) == Some(&true)) {
        for (key, _) in &c.labels {
            claimants.entry(key).or_default().push(&c.name);
        }
    }
    claimants
        .into_iter()
        .map(|(key, names)| {
            let holder = names.iter().find(|n| kept.get(**n).is_some_and(|k| k.managed.iter().any(|m| m == key)));
            (key, *holder.unwrap_or(&names[0]))
        })
        .collect()
}

/// The ClassifierReport `sveltos--<classifier>--<cluster>` of `pair`, whole: metadata and
/// spec, with its status under `status`.
pub fn report_object(cluster: &ClusterId, pair: &Pair) -> Value {
    let unmanaged: Vec<Value> = pair
        .unmanaged
        .iter()
        .map(|(key, owner)| json!({"key": key, "failureMessage": format!("Classifier {owner} manages this label on the cluster")}))
        .collect();
    let mut status = json!({});
    if !pair.managed.is_empty() {
        status["managedLabels"] = json!(pair.managed);
    }
    if !unmanaged.is_empty() {
        status["unmanagedLabels"] = json!(unmanaged);
    }
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1",
        "kind": "ClassifierReport",
        "metadata": {
            "name": report_name(&pair.classifier, cluster),
            "namespace": cluster.namespace(),
            "labels": {
                CLASSIFIER_NAME_LABEL: pair.classifier,
                REPORT_CLUSTER_NAME_LABEL: cluster.name(),
                REPORT_CLUSTER_TYPE_LABEL: CLUSTER_TYPE.to_lowercase(),
            },
        },
        "spec": {
            "classifierName": pair.classifier,
            "clusterName": cluster.name(),
            "clusterNamespace": cluster.namespace(),
            "clusterType": CLUSTER_TYPE,
            "match": pair.matched,
        },
        "status": status,
    })
}

/// `sveltos--<classifier>--<cluster name>`, as libsveltos names a pair's report.
pub fn report_name(classifier: &str, cluster: &ClusterId) -> String {
    format!("{}--{classifier}--{}", CLUSTER_TYPE.to_lowercase(), cluster.name())
}

/// The label selector of every ClassifierReport of `cluster` in its namespace.
pub fn reports_selector(cluster: &ClusterId) -> String {
    format!("{REPORT_CLUSTER_NAME_LABEL}={},{REPORT_CLUSTER_TYPE_LABEL}={}", cluster.name(), CLUSTER_TYPE.to_lowercase())
}

/// What a kept ClassifierReport says, by its Classifier's name.
pub fn kept_of(report: &Value) -> Option<(String, Kept)> {
    let name = report["spec"]["classifierName"].as_str().or_else(|| report["metadata"]["labels"][CLASSIFIER_NAME_LABEL].as_str())?;
    let managed = report["status"]["managedLabels"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
    Some((name.to_string(), Kept { matched: report["spec"]["match"].as_bool().unwrap_or(false), managed }))
}

#[cfg(test)]
#[path = "classified_tests.rs"]
mod tests;
