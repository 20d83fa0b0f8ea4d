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
//! Both the Classifiers and the kept reports ([`KeptFiles::read`]) are read once per
//! ingest, before the first report is written.

use std::collections::{BTreeMap, HashMap};
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

#[cfg(test)]
thread_local! {
    /// How many times [`DirClassifiers::read`] ran on this thread: tests that a pass reads
    /// them once however it is split.
    pub static READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl DirClassifiers {
    /// Reads every manifest under `dir`; only a directory that cannot be read is an error.
    pub fn read(dir: &Path) -> Result<DirClassifiers, TargetError> {
        #[cfg(test)]
        READS.with(|n| n.set(n.get() + 1));
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

/// The ClassifierReport files of a `--to-dir` directory, read in one listing and kept in
/// step with what [`write()`] writes and deletes, so that a pass over a whole fleet reads
/// the directory once rather than once per cluster.
#[derive(Debug, Clone, Default)]
pub struct KeptFiles {
    /// By namespace (the part of the file name before its first dot): the first file of
    /// the namespace that cannot be read, else the namespace's reports by cluster name
    /// (their `REPORT_CLUSTER_NAME_LABEL`) and path.
    namespaces: HashMap<String, Result<Clusters, TargetError>>,
}

type Clusters = HashMap<String, BTreeMap<PathBuf, Value>>;

impl KeptFiles {
    /// Reads every `*.classifierreport.yaml` file of `dir`. A file that cannot be read is
    /// the error of every cluster of its namespace, at [`write()`]; only a directory that
    /// cannot be listed is an error here.
    pub fn read(dir: &Path) -> Result<KeptFiles, TargetError> {
        let err = |e: std::io::Error| TargetError::File { path: dir.display().to_string(), message: e.to_string() };
        let mut namespaces: HashMap<String, Result<Clusters, TargetError>> = HashMap::new();
        for entry in std::fs::read_dir(dir).map_err(err)? {
            let path = entry.map_err(err)?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let Some((namespace, _)) = name.split_once('.').filter(|_| name.ends_with(REPORT_SUFFIX)) else { continue };
            let slot = namespaces.entry(namespace.to_string()).or_insert_with(|| Ok(Clusters::new()));
            let Ok(clusters) = slot else { continue };
            match read_report(&path) {
                Ok(report) => {
                    if report["metadata"]["namespace"] != namespace {
                        continue;
                    }
                    if let Some(cluster) = report["metadata"]["labels"][REPORT_CLUSTER_NAME_LABEL].as_str() {
                        clusters.entry(cluster.to_string()).or_default().insert(path, report);
                    }
                }
                Err(e) => *slot = Err(e),
            }
        }
        Ok(KeptFiles { namespaces })
    }

    /// The ClassifierReports of `cluster`.
    fn of(&self, cluster: &ClusterId) -> Result<Vec<&Value>, TargetError> {
        match self.namespaces.get(cluster.namespace()) {
            None => Ok(Vec::new()),
            Some(Err(e)) => Err(e.clone()),
            Some(Ok(clusters)) => Ok(clusters.get(cluster.name()).into_iter().flat_map(BTreeMap::values).collect()),
        }
    }

    /// Records that `path`, a ClassifierReport file of `cluster`, now holds `report`, or
    /// is gone.
    fn set(&mut self, cluster: &ClusterId, path: PathBuf, report: Option<Value>) {
        let slot = self.namespaces.entry(cluster.namespace().to_string()).or_insert_with(|| Ok(Clusters::new()));
        // A namespace with a file that cannot be read stays in error until that file is fixed.
        let Ok(clusters) = slot else { return };
        let reports = clusters.entry(cluster.name().to_string()).or_default();
        match report {
            Some(report) => reports.insert(path, report),
            None => reports.remove(&path),
        };
    }
}

/// Records what `report` means for the Classifiers of `cluster`, whose SveltosCluster is
/// `object`, with `kept` the ClassifierReport files of `dir`. Returns the object with the
/// Classifiers' labels set and removed, for the caller to write, and how many
/// ClassifierReport files were written or deleted.
pub fn write(
    dir: &Path,
    found: &DirClassifiers,
    kept: &mut KeptFiles,
    cluster: &ClusterId,
    object: &Value,
    report: &PullReport,
) -> Result<(Value, usize), TargetError> {
    let previous: BTreeMap<String, Kept> =
        kept.of(cluster)?.into_iter().filter_map(classified::kept_of).filter(|(name, _)| !found.broken.contains(name)).collect();
    let out = classified::of_report(&found.classifiers, report, object, &previous);
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
        let (path, object) = (report_file(dir, &pair.classifier, cluster), classified::report_object(cluster, pair));
        write_file(&path, &object)?;
        kept.set(cluster, path, Some(object));
        written += 1;
    }
    for gone in &out.gone {
        let path = report_file(dir, gone, cluster);
        match std::fs::remove_file(&path) {
            Ok(()) => written += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(TargetError::File { path: path.display().to_string(), message: e.to_string() }),
        }
        kept.set(cluster, path, None);
    }
    Ok((labelled, written))
}

/// The ClassifierReport in the file `path`.
fn read_report(path: &Path) -> Result<Value, TargetError> {
    let err = |message: String| TargetError::File { path: path.display().to_string(), message };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let mut docs = yaml::parse_documents(&text).map_err(|e| err(format!("not valid YAML: {e}")))?;
    match (docs.pop(), docs.is_empty()) {
        (Some(report), true) if report["kind"] == "ClassifierReport" => Ok(report),
        _ => Err(err("expected exactly one YAML document, a ClassifierReport".into())),
    }
}

#[cfg(test)]
#[path = "classifier_files_tests.rs"]
mod tests;
