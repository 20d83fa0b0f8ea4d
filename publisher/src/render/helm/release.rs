//! A rendered release split into Helm's phases: the CRDs of the charts' `crds/`
//! directories, the release's objects, and its hooks.
//!
//! Input is what `helm template` prints: documents after `---`, each opened by a
//! `# Source: <chart>/<path>` comment (a `crds/` file's later documents have none and
//! belong to the file before). Helm prints the `crds/` files first (with
//! `--include-crds`), then the release's objects in its install order (kind by kind), then
//! the hooks in kind order. The objects keep that order; hooks are grouped per event in the
//! order Helm runs them (`hooks`).
//!
//! Every object gets the labels [`RELEASE_LABEL`], [`RELEASE_NAMESPACE_LABEL`] and
//! [`CHART_LABEL`], so the site can find a release's objects, and the chart's exact
//! version, repository and app version as annotations, so its report can name them. Helm's own
//! `app.kubernetes.io/managed-by: Helm` and `meta.helm.sh/release-*` are not added: no
//! Helm release record exists on the cluster, and `helm` must not believe it owns them.

use airlock_bundle::Digest;
use airlock_bundle::vocabulary::{
    APP_VERSION_ANNOTATION, CHART_LABEL, CHART_VERSION_ANNOTATION, RELEASE_LABEL, RELEASE_NAMESPACE_LABEL, REPOSITORY_ANNOTATION,
};
use serde_json::{Map, Value};

use super::hooks::{HookEvent, HookSpec, run_order};

/// Which chart, exactly, a release was rendered from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartId {
    pub name: String,
    pub version: String,
    pub digest: Digest,
    /// The repository's URL, as the profile's `repositoryURL` gives it.
    pub repository: String,
    pub app_version: Option<String>,
}

/// One rendered object and the chart file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// `ingress-nginx/templates/controller-deployment.yaml`.
    pub source: String,
    pub object: Value,
}

/// A hook object with its annotations read.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub manifest: Manifest,
    pub spec: HookSpec,
}

/// A chart rendered for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub name: String,
    /// The release namespace: where namespaced objects without a namespace belong (the
    /// site knows which kinds are namespaced; this renderer does not).
    pub namespace: String,
    pub chart: ChartId,
    /// From the charts' `crds/` directories: applied first and waited for; never updated
    /// by helm v3 once they exist, and never deleted.
    pub crds: Vec<Manifest>,
    /// The release manifest, in Helm's install order.
    pub objects: Vec<Manifest>,
    /// Every hook, in Helm's kind order; [`Release::hooks_for`] gives one event's run order.
    pub hooks: Vec<Hook>,
}

impl Release {
    /// The hooks of `event` in the order Helm runs them.
    pub fn hooks_for(&self, event: HookEvent) -> Vec<&Hook> {
        let mut hooks: Vec<&Hook> = self.hooks.iter().filter(|h| h.spec.events.contains(&event)).collect();
        run_order(&mut hooks, |h| (h.spec.weight, name_of(&h.manifest.object)));
        hooks
    }
}

fn name_of(object: &Value) -> &str {
    object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

/// Splits `helm template` output into a release; `Err((source, message))` names the chart
/// file of a document that is not a Kubernetes object.
pub(super) fn split(output: &str, name: &str, namespace: &str, chart: ChartId) -> Result<Release, (String, String)> {
    let chart_label = chart_label_value(&chart);
    let mut chart_annotations = vec![(CHART_VERSION_ANNOTATION, chart.version.clone()), (REPOSITORY_ANNOTATION, chart.repository.clone())];
    if let Some(app) = chart.app_version.clone().filter(|a| !a.is_empty()) {
        chart_annotations.push((APP_VERSION_ANNOTATION, app));
    }
    let mut release = Release { name: name.into(), namespace: namespace.into(), chart, crds: vec![], objects: vec![], hooks: vec![] };
    let mut source = String::new();
    for chunk in crate::yaml::split_documents(output) {
        if let Some(path) = chunk.lines().find(|l| !l.trim().is_empty()).and_then(|l| l.strip_prefix("# Source: ")) {
            source = path.trim().to_string();
        }
        let parsed = crate::yaml::parse_documents(chunk).map_err(|m| (source.clone(), m))?;
        for mut object in parsed {
            if object.is_null() {
                continue;
            }
            let named = object.get("apiVersion").is_some_and(Value::is_string)
                && object.get("kind").is_some_and(Value::is_string)
                && !name_of(&object).is_empty();
            if !named {
                return Err((source.clone(), "a document without apiVersion, kind or metadata.name".into()));
            }
            label(&mut object, name, namespace, &chart_label, &chart_annotations);
            let manifest = Manifest { source: source.clone(), object };
            if is_crds_dir(&source) {
                release.crds.push(manifest);
            } else if let Some(spec) = HookSpec::of(&manifest.object) {
                release.hooks.push(Hook { manifest, spec });
            } else {
                release.objects.push(manifest);
            }
        }
    }
    Ok(release)
}

/// Whether a `# Source:` path is in a chart's `crds/` directory: `<chart>/crds/...` or a
/// subchart's `<chart>/charts/<sub>/crds/...`.
fn is_crds_dir(source: &str) -> bool {
    let mut parts = source.split('/').skip(1).peekable();
    loop {
        match parts.next() {
            Some("charts") => {
                parts.next();
            }
            Some("crds") => return parts.peek().is_some(),
            _ => return false,
        }
    }
}

fn chart_label_value(chart: &ChartId) -> String {
    let text = format!("{}-{}", chart.name, chart.version).replace('+', "_");
    let cut: String = text.chars().take(63).collect();
    cut.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

fn label(object: &mut Value, release: &str, namespace: &str, chart: &str, annotations: &[(&str, String)]) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let labels = map_entry(metadata, "labels");
    labels.insert(RELEASE_LABEL.into(), release.into());
    labels.insert(RELEASE_NAMESPACE_LABEL.into(), namespace.into());
    labels.insert(CHART_LABEL.into(), chart.into());
    let annotated = map_entry(metadata, "annotations");
    for (key, value) in annotations {
        annotated.insert((*key).into(), value.clone().into());
    }
}

/// `metadata[key]` as a mapping, made one if it is missing or is not one.
fn map_entry<'a>(metadata: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = metadata.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("made an object above")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> ChartId {
        ChartId {
            name: "c".into(),
            version: "0.1.0+build".into(),
            digest: Digest::of(b"c"),
            repository: "oci://registry/charts".into(),
            app_version: Some("2.0".into()),
        }
    }

    const OUTPUT: &str = "---\n# Source: c/crds/two.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: as.x.io\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: bs.x.io\n\n---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n---\n# Source: c/templates/h.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: a-job\n  annotations:\n    helm.sh/hook: pre-install\n";

    #[test]
    fn splits_crds_objects_and_hooks() {
        let release = split(OUTPUT, "r", "ns", chart()).expect("splits");
        let names = |ms: &[Manifest]| ms.iter().map(|m| (m.source.clone(), name_of(&m.object).to_string())).collect::<Vec<_>>();
        assert_eq!(names(&release.crds), [("c/crds/two.yaml".into(), "as.x.io".into()), ("c/crds/two.yaml".into(), "bs.x.io".into())]);
        assert_eq!(names(&release.objects), [("c/templates/cm.yaml".into(), "plain".into())]);
        assert_eq!(release.hooks_for(HookEvent::PreInstall).len(), 1);
        assert!(release.hooks_for(HookEvent::PostInstall).is_empty());
        let labels = &release.objects[0].object["metadata"]["labels"];
        assert_eq!(labels[RELEASE_LABEL], "r");
        assert_eq!(labels[RELEASE_NAMESPACE_LABEL], "ns");
        assert_eq!(labels[CHART_LABEL], "c-0.1.0_build");
        for object in release.crds.iter().chain(&release.objects).chain(release.hooks.iter().map(|h| &h.manifest)) {
            let annotations = &object.object["metadata"]["annotations"];
            assert_eq!(annotations[CHART_VERSION_ANNOTATION], "0.1.0+build", "the exact version: {object:?}");
            assert_eq!(
                (&annotations[REPOSITORY_ANNOTATION], &annotations[APP_VERSION_ANNOTATION]),
                (&"oci://registry/charts".into(), &"2.0".into())
            );
        }
        assert_eq!(release.hooks[0].manifest.object["metadata"]["annotations"]["helm.sh/hook"], "pre-install", "its own annotations kept");
    }

    #[test]
    fn rejects_a_document_that_is_not_an_object() {
        let err = split("---\n# Source: c/templates/x.yaml\njust: values\n", "r", "ns", chart()).unwrap_err();
        assert_eq!(err.0, "c/templates/x.yaml");
    }

    #[test]
    fn knows_crds_directories_of_subcharts() {
        assert!(is_crds_dir("kps/crds/crd-alertmanagers.yaml"));
        assert!(is_crds_dir("kps/charts/sub/crds/nested/x.yaml"));
        assert!(!is_crds_dir("kps/templates/crds/x.yaml"));
        assert!(!is_crds_dir("cert-manager/templates/crds.yaml"));
        assert!(!is_crds_dir("kps/crds"));
    }
}
