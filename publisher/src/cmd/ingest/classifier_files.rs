//! Writes what a report means for the cluster's Classifiers (`classified`) to a `--to-dir`
//! directory, as `classifier_target` writes it to a management cluster: the labels the
//! Classifiers give or take go into the SveltosCluster object the caller then writes to
//! `<ns>.<name>.sveltoscluster.yaml`, each (classifier, cluster) pair's ClassifierReport
//! is kept as `<ns>.sveltos--<classifier>--<cluster>.classifierreport.yaml`, and the
//! reports of Classifiers that are gone are deleted. A `publish --from-dir` of the
//! directory selects on the labels at the next publish and ignores the reports.
//!
//! The Classifiers are those of every manifest under the directory `--classifiers-from`
//! names (by default the `--to-dir` one), read as `publish --from-dir` reads them
//! ([`DirClassifiers::read`]). One that cannot be read is left out,
//! and so is its report: what it did to the cluster stays as it was until it is fixed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use airlock_bundle::ClusterId;
use serde_json::Value;

use super::classified::{self, Kept, REPORT_CLUSTER_NAME_LABEL};
use super::report::PullReport;
use super::target::{TargetError, write_file};
use crate::sources::classifier::Classifier;
use crate::sources::dir::DirSource;
use crate::sources::{SourceError, Touches};
use crate::yaml;

const REPORT_SUFFIX: &str = ".classifierreport.yaml";

/// The Classifiers of a directory, by name, and the names of those that cannot be read.
#[derive(Debug, Clone, Default)]
pub struct DirClassifiers {
    classifiers: Vec<Classifier>,
    broken: Vec<String>,
}

impl DirClassifiers {
    /// Reads every manifest under `dir`; only a directory that cannot be read is an error.
    pub fn read(dir: &Path) -> Result<DirClassifiers, TargetError> {
        let source = DirSource::read(dir).map_err(|e| match e {
            SourceError::Io { path, message } => TargetError::File { path, message },
            other => TargetError::File { path: dir.display().to_string(), message: other.to_string() },
        })?;
        let inventory = source.inventory();
        let broken = inventory
            .broken
            .iter()
            .filter_map(|b| match &b.what {
                Touches::Object(key) if key.kind == "Classifier" => {
                    tracing::warn!("{}: {}: its labels are left as they are", b.origin, b.message);
                    Some(key.name.clone())
                }
                _ => None,
            })
            .collect();
        Ok(DirClassifiers { classifiers: inventory.classifiers, broken })
    }
}

/// `<dir>/<ns>.<report name>.classifierreport.yaml` of the pair (`classifier`, `cluster`).
pub fn report_file(dir: &Path, classifier: &str, cluster: &ClusterId) -> PathBuf {
    dir.join(format!("{}.{}{REPORT_SUFFIX}", cluster.namespace(), classified::report_name(classifier, cluster)))
}

/// Records what `report` means for the Classifiers of `cluster`, whose SveltosCluster is
/// `object`. Returns the object with the Classifiers' labels set and removed, for the
/// caller to write, and how many ClassifierReport files were written or deleted.
pub fn write(
    dir: &Path,
    found: &DirClassifiers,
    cluster: &ClusterId,
    object: &Value,
    report: &PullReport,
) -> Result<(Value, usize), TargetError> {
    let kept: BTreeMap<String, Kept> =
        kept_reports(dir, cluster)?.iter().filter_map(classified::kept_of).filter(|(name, _)| !found.broken.contains(name)).collect();
    let out = classified::of_report(&found.classifiers, report, object, &kept);
    let mut labelled = object.clone();
    if !out.labels.is_empty() {
        if !labelled["metadata"]["labels"].is_object() {
            labelled["metadata"]["labels"] = Value::Object(Default::default());
        }
        let labels = labelled["metadata"]["labels"].as_object_mut().expect("made an object above");
        for (key, value) in &out.labels {
            match value {
                Some(value) => labels.insert(key.clone(), value.clone().into()),
                None => labels.remove(key),
            };
        }
    }
    let mut written = 0;
    for pair in &out.pairs {
        write_file(&report_file(dir, &pair.classifier, cluster), &classified::report_object(cluster, pair))?;
        written += 1;
    }
    for gone in &out.gone {
        let path = report_file(dir, gone, cluster);
        match std::fs::remove_file(&path) {
            Ok(()) => written += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(TargetError::File { path: path.display().to_string(), message: e.to_string() }),
        }
    }
    Ok((labelled, written))
}

/// The ClassifierReport files of `cluster` in `dir`.
fn kept_reports(dir: &Path, cluster: &ClusterId) -> Result<Vec<Value>, TargetError> {
    let err = |path: &Path, message: String| TargetError::File { path: path.display().to_string(), message };
    let prefix = format!("{}.", cluster.namespace());
    let mut reports = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| err(dir, e.to_string()))? {
        let path = entry.map_err(|e| err(dir, e.to_string()))?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !name.starts_with(&prefix) || !name.ends_with(REPORT_SUFFIX) {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| err(&path, e.to_string()))?;
        let mut docs = yaml::parse_documents(&text).map_err(|e| err(&path, format!("not valid YAML: {e}")))?;
        let report = match (docs.pop(), docs.is_empty()) {
            (Some(report), true) if report["kind"] == "ClassifierReport" => report,
            _ => return Err(err(&path, "expected exactly one YAML document, a ClassifierReport".into())),
        };
        let of_cluster = report["metadata"]["namespace"] == cluster.namespace()
            && report["metadata"]["labels"][REPORT_CLUSTER_NAME_LABEL] == cluster.name();
        if of_cluster {
            reports.push(report);
        }
    }
    Ok(reports)
}

#[cfg(test)]
#[path = "classifier_files_tests.rs"]
mod tests;
