//! A profile's `spec.helmCharts` as the publisher renders them: which chart of which
//! repository, the release it becomes, its values per cluster and how the repository is
//! reached. Rendering is `crate::render::helm`'s; this is what the profile says.
//!
//! A chart's version, when a range, and its archive's digest are resolved once per run and
//! kept among the fetched resources under [`chart_revision_reference`]'s key, as a Flux source's
//! commit is: a new chart version in the repository changes what a cluster's rendering
//! reads (and so its fingerprint) although no management object changed.

use airlock_bundle::Digest;

use super::SecretName;
use super::helm_options::ChartOptions;
use super::kustomization::{ValuesFromRef, revision_reference};
use crate::sources::{ObjectKey, Reference};

/// `helmChartAction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelmAction {
    Install,
    /// The release is withdrawn: nothing of it is published, so the puller prunes it.
    Uninstall,
}

/// `registryCredentialsConfig`, its Secrets named, not read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryAccess {
    /// A Secret holding a Docker config JSON.
    pub credentials: Option<SecretName>,
    /// The data key of `credentials` to read; empty for its only key.
    pub key: String,
    /// A Secret whose `ca.crt` verifies the repository.
    pub ca: Option<SecretName>,
    pub plain_http: bool,
    pub insecure_skip_tls_verify: bool,
}

/// A `spec.helmCharts` entry the publisher renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmChartRef {
    /// Its index in `spec.helmCharts`, for messages.
    pub index: usize,
    pub repository_url: String,
    pub repository_name: String,
    pub chart_name: String,
    /// Exact or a range; empty for the newest stable version.
    pub chart_version: String,
    pub release_name: String,
    pub release_namespace: String,
    pub action: HelmAction,
    /// A YAML document of values, a template over the cluster's data.
    pub values: String,
    /// ConfigMaps and Secrets each of whose data values is a YAML document of values,
    /// merged over `values` in order.
    pub values_from: Vec<ValuesFromRef>,
    pub access: RegistryAccess,
    /// `options`, read when the profile is parsed (its notes go to the profile's).
    pub options: ChartOptions,
    /// The verification field set (`provenanceVerification`, `signatureVerification`):
    /// charts are not verified, so such an entry is not rendered.
    pub verification: Option<String>,
}

impl HelmChartRef {
    /// Whether anything of it changes from cluster to cluster.
    pub fn templated(&self) -> bool {
        !self.values_from.is_empty() || self.values.contains("{{") || self.fields_templated()
    }

    /// Whether a field naming the chart, the release or the registry login is a template:
    /// Sveltos instantiates them all per cluster (`render::chart_fields`).
    pub fn fields_templated(&self) -> bool {
        let secrets = [&self.access.credentials, &self.access.ca].into_iter().flatten().flat_map(|s| [&s.namespace, &s.name]);
        [&self.repository_url, &self.repository_name, &self.chart_name, &self.chart_version, &self.release_name]
            .into_iter()
            .chain([&self.release_namespace, &self.access.key])
            .chain(secrets)
            .any(|t| t.contains("{{"))
    }

    /// Whether the chart is rendered: to install it, or to uninstall it firing its delete
    /// hooks (unless hooks are off). An `Uninstall` without them needs no chart.
    pub fn renders(&self) -> bool {
        self.action == HelmAction::Install || (self.options.delete_hooks && self.options.template.hooks)
    }

    /// The entry's place in messages: `spec.helmCharts[0]`.
    pub fn field(&self) -> String {
        format!("spec.helmCharts[{}]", self.index)
    }
}

#[cfg(test)]
impl HelmChartRef {
    /// Entry `index` of a test: chart `r/web` 1.0.0 of an HTTP repository on 127.0.0.1:1,
    /// released as `web` in `web`, with no values, login or options.
    pub fn example(index: usize) -> HelmChartRef {
        HelmChartRef {
            index,
            repository_url: "http://127.0.0.1:1".into(),
            repository_name: "r".into(),
            chart_name: "r/web".into(),
            chart_version: "1.0.0".into(),
            release_name: "web".into(),
            release_namespace: "web".into(),
            action: HelmAction::Install,
            values: String::new(),
            values_from: Vec::new(),
            access: RegistryAccess::default(),
            options: crate::sources::model::helm_options::read(None, &format!("spec.helmCharts[{index}]")).expect("no options read"),
            verification: None,
        }
    }
}

/// The reference a plan carries for the key a chart's resolved version and digest are
/// kept under: one per repository, chart, version asked for and login, so entries that ask
/// alike share one lookup.
pub fn chart_revision_reference(chart: &HelmChartRef) -> Reference {
    let login = |s: &Option<SecretName>| s.as_ref().map_or_else(String::new, |s| format!("{}/{}", s.namespace, s.name));
    let access = &chart.access;
    let text = format!(
        "{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}",
        chart.repository_url,
        chart.repository_name,
        chart.chart_name,
        chart.chart_version,
        login(&access.credentials),
        access.key,
        login(&access.ca),
        access.plain_http,
        access.insecure_skip_tls_verify,
    );
    revision_reference(&ObjectKey::new("v1", "HelmChart", "", &format!("chart-{}", Digest::of(text.as_bytes()).hex())))
}
