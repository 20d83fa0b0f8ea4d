//! A `helmCharts` entry instantiated for one cluster: every string field Sveltos
//! templates before it uses the entry (addon-controller's `getInstantiatedChart`), rendered
//! with the cluster's data, then checked as what it must be before any of it reaches
//! helm's command line. Entry point: [`instantiate`].
//!
//! The fields are `repositoryURL`, `repositoryName`, `chartName`, `chartVersion`,
//! `releaseName`, `releaseNamespace` and `registryCredentialsConfig`'s `key` and Secret
//! names; `values` is a template rendered later with the full data (`render::helm`), and
//! `valuesFrom` names are resolved like every reference's (`names`). The fields see
//! `.Cluster`, `.ClusterNamespace`, `.ClusterName` and nil `.InfrastructureProvider` and
//! `.KubeadmControlPlane`: they are resolved while the run is planned, before anything is
//! fetched (a templated version decides which chart to fetch), so `.MgmtResources` is not
//! there and a field naming it is refused.
//!
//! Sveltos writes each field as YAML, templates that text and reads the result back as
//! YAML. For an output on one line that is the output itself, so the field's text is
//! rendered directly. An output that spans lines has no one meaning there (a quoted or
//! plain scalar folds the lines into one with spaces, a block keeps the breaks; helm
//! refuses either as a name or a version), so it is refused, naming the field.

use std::borrow::Cow;
use std::cell::OnceCell;

use airlock_bundle::cluster::{is_dns_label, is_dns_subdomain};
use serde_json::Value;

use crate::render::names;
use crate::render::template::{self, TemplateSource};
use crate::sources::model::helm_chart::HelmChartRef;
use crate::sources::model::{SecretName, SveltosCluster};

/// Helm's limit on a release name (`chartutil.ValidateReleaseName`).
const RELEASE_NAME_MAX: usize = 53;

/// `chart` for `cluster`, its templated fields rendered and every field checked; borrowed
/// when nothing of it is a template. `data` is built on first use. The error names the
/// field (`spec.helmCharts[0].chartVersion`) and says what is wrong.
pub fn instantiate<'a>(
    chart: &'a HelmChartRef,
    profile: &str,
    cluster: &SveltosCluster,
    data: &OnceCell<Value>,
) -> Result<Cow<'a, HelmChartRef>, String> {
    let out = if chart.fields_templated() {
        let mut c = chart.clone();
        let base = chart.field();
        let render = |name: &str, text: &mut String| -> Result<(), String> {
            if text.contains("{{") {
                *text = render_field(profile, &format!("{base}.{name}"), text, data.get_or_init(|| field_data(cluster)))?;
            }
            Ok(())
        };
        render("repositoryURL", &mut c.repository_url)?;
        render("repositoryName", &mut c.repository_name)?;
        render("chartName", &mut c.chart_name)?;
        render("chartVersion", &mut c.chart_version)?;
        render("releaseName", &mut c.release_name)?;
        render("releaseNamespace", &mut c.release_namespace)?;
        render("registryCredentialsConfig.key", &mut c.access.key)?;
        for (name, secret) in [("credentials", &mut c.access.credentials), ("ca", &mut c.access.ca)] {
            if let Some(SecretName { namespace, name: secret_name }) = secret {
                render(&format!("registryCredentialsConfig.{name}.namespace"), namespace)?;
                render(&format!("registryCredentialsConfig.{name}.name"), secret_name)?;
            }
        }
        Cow::Owned(c)
    } else {
        Cow::Borrowed(chart)
    };
    check(&out)?;
    Ok(out)
}

/// The data the fields are rendered with: the content data without `.MgmtResources`.
pub(crate) fn field_data(cluster: &SveltosCluster) -> Value {
    let mut data = names::name_data(cluster);
    let map = data.as_object_mut().expect("name data is a map");
    map.insert("InfrastructureProvider".into(), Value::Null);
    map.insert("KubeadmControlPlane".into(), Value::Null);
    data
}

fn render_field(profile: &str, field: &str, text: &str, data: &Value) -> Result<String, String> {
    if text.contains("MgmtResources") {
        return Err(format!(
            "{field}: the template {text:?} reads .MgmtResources, which chart fields cannot: they are resolved before the templateResourceRefs are read"
        ));
    }
    let source = TemplateSource { profile, resource: field, key: "" };
    let value = template::render(&source, text, data).map_err(|e| format!("{field}: the template {text:?}: {e}"))?;
    if value.contains(['\n', '\r']) {
        return Err(format!(
            "{field}: the template {text:?} gave {value:?}, which spans lines; a chart field takes one line (Sveltos reads it back as YAML, which gives no usable value)"
        ));
    }
    Ok(value)
}

/// Checks every field as what it must be where it goes: helm's command line, a Kubernetes
/// name, a Secret lookup.
fn check(chart: &HelmChartRef) -> Result<(), String> {
    let base = chart.field();
    let bad = |name: &str, value: &str, what: &str| Err(format!("{base}.{name}: {value:?} is not {what}"));
    let line = |s: &str| !s.is_empty() && !s.chars().any(|c| c.is_control() || c.is_whitespace());
    if !is_dns_subdomain(&chart.release_name) || chart.release_name.len() > RELEASE_NAME_MAX {
        return bad("releaseName", &chart.release_name, "a Helm release name (lower-case letters, digits, '-' and '.', at most 53)");
    }
    if !is_dns_label(&chart.release_namespace) {
        return bad("releaseNamespace", &chart.release_namespace, "a Kubernetes namespace name");
    }
    let url = &chart.repository_url;
    if !line(url) || url.split_once("://").is_none_or(|(scheme, rest)| scheme.is_empty() || rest.is_empty()) {
        return bad("repositoryURL", url, "a URL (scheme://host/path, one line, no spaces)");
    }
    if !line(&chart.chart_name) || chart.chart_name.starts_with('-') {
        return bad("chartName", &chart.chart_name, "a chart name");
    }
    if !chart.repository_name.is_empty() && !line(&chart.repository_name) {
        return bad("repositoryName", &chart.repository_name, "a repository name");
    }
    if !is_version(&chart.chart_version) {
        return bad("chartVersion", &chart.chart_version, "a version or a version range");
    }
    for (name, secret) in [("credentials", &chart.access.credentials), ("ca", &chart.access.ca)] {
        if let Some(s) = secret
            && (!is_dns_label(&s.namespace) || !is_dns_subdomain(&s.name))
        {
            return bad(&format!("registryCredentialsConfig.{name}"), &format!("{}/{}", s.namespace, s.name), "a Secret's namespace/name");
        }
    }
    if !chart.access.key.is_empty() && !line(&chart.access.key) {
        return bad("registryCredentialsConfig.key", &chart.access.key, "a data key");
    }
    Ok(())
}

/// An exact version or a range as helm reads one (Masterminds semver constraints):
/// empty, or digits, letters, `.`, `-`, `+`, `*`, the operators `^ ~ < > = ! |`, `,` and
/// spaces, not starting with `-` (helm would read an option).
fn is_version(v: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-+*^~<>=!|, ".contains(c);
    v.is_empty() || (v.chars().all(allowed) && !v.trim_start().starts_with('-') && !v.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::parse::parse_cluster;
    use serde_json::json;

    fn cluster() -> SveltosCluster {
        parse_cluster(&json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": "edge-1", "namespace": "fleet", "labels": {"k8s-version": "1.25", "site": "west"}}}))
        .unwrap()
    }

    fn chart() -> HelmChartRef {
        HelmChartRef::example(2)
    }

    fn of(chart: &HelmChartRef) -> Result<HelmChartRef, String> {
        instantiate(chart, "ClusterProfile/p", &cluster(), &OnceCell::new()).map(Cow::into_owned)
    }

    #[test]
    fn renders_a_templated_chart_version_as_sveltos_does() {
        // The chained if/else of addon-controller's own getInstantiatedChart test.
        let mut c = chart();
        c.chart_version = "{{$version := index .Cluster.metadata.labels \"k8s-version\" }}{{- if eq $version \"1.20\"}}23.4.0\n{{- else if eq $version \"1.22\"}}24.1.0\n{{- else if eq $version \"1.25\"}}25.0.2\n{{- else }}23.4.0\n{{- end}}".into();
        assert_eq!(of(&c).unwrap().chart_version, "25.0.2");
    }

    #[test]
    fn renders_every_name_field_and_leaves_a_plain_entry_borrowed() {
        let mut c = chart();
        c.release_name = "web-{{ .Cluster.metadata.labels.site }}".into();
        c.release_namespace = "{{ .ClusterName }}".into();
        c.repository_url = "http://127.0.0.1:1/{{ .Cluster.metadata.labels.site }}".into();
        c.chart_name = "r/{{ .Cluster.metadata.labels.site }}".into();
        let out = of(&c).unwrap();
        assert_eq!(
            (out.release_name.as_str(), out.release_namespace.as_str(), out.repository_url.as_str(), out.chart_name.as_str()),
            ("web-west", "edge-1", "http://127.0.0.1:1/west", "r/west")
        );
        let plain = chart();
        assert!(matches!(instantiate(&plain, "p", &cluster(), &OnceCell::new()).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn rejects_an_output_that_spans_lines_naming_the_field() {
        let mut c = chart();
        c.chart_version = "{{ if true }}\n1.0.0\n{{ end }}".into();
        let err = of(&c).unwrap_err();
        assert!(err.starts_with("spec.helmCharts[2].chartVersion: the template") && err.contains("spans lines"), "{err}");
    }

    #[test]
    fn rejects_values_that_are_not_what_the_field_must_be() {
        type Change = fn(&mut HelmChartRef);
        let cases: [(&str, Change); 6] = [
            ("releaseName", |c| c.release_name = "{{ .Cluster.metadata.labels.site }}_x".into()),
            ("releaseName", |c| c.release_name = "a".repeat(54)),
            ("releaseNamespace", |c| c.release_namespace = "{{ .ClusterNamespace }}.x".into()),
            ("chartVersion", |c| c.chart_version = "{{ \"--set=x\" }}".into()),
            ("chartVersion", |c| c.chart_version = "1.0; rm".into()),
            ("repositoryURL", |c| c.repository_url = "{{ .ClusterName }}".into()),
        ];
        for (field, change) in cases {
            let mut c = chart();
            change(&mut c);
            let err = of(&c).unwrap_err();
            assert!(err.starts_with(&format!("spec.helmCharts[2].{field}: ")), "{field}: {err}");
        }
        for version in ["", "25.0.2", "v1.7.3", "^4.0", ">=1.2 <2", "4.0.x", "1.2.3 || 2.0.0", "1.0.0-rc.1+b5"] {
            let mut c = chart();
            c.chart_version = version.into();
            assert!(of(&c).is_ok(), "{version:?}");
        }
    }

    #[test]
    fn an_edge_reported_event_reaches_no_field_unchecked() {
        // What an event carries comes from the edge's report: a name there is not a name
        // the API server checked, and an option to helm must not pass as a chart field.
        let event = crate::sources::model::EventInstance {
            trigger: "lb".into(),
            data: json!({"Resource": {"metadata": {"name": "--post-renderer=/bin/sh", "namespace": "a b"}}}).as_object().cloned().unwrap(),
        };
        let data = OnceCell::from(names::with_event(field_data(&cluster()), &event));
        type Change = fn(&mut HelmChartRef);
        let cases: [(&str, Change); 4] = [
            ("chartVersion", |c| c.chart_version = "{{ .Resource.metadata.name }}".into()),
            ("chartName", |c| c.chart_name = "{{ .Resource.metadata.name }}".into()),
            ("releaseName", |c| c.release_name = "{{ .Resource.metadata.name }}".into()),
            ("releaseNamespace", |c| c.release_namespace = "{{ .Resource.metadata.namespace }}".into()),
        ];
        for (field, change) in cases {
            let mut c = chart();
            change(&mut c);
            let err = instantiate(&c, "ClusterProfile/sveltos-x", &cluster(), &data).unwrap_err();
            assert!(err.starts_with(&format!("spec.helmCharts[2].{field}: ")), "{field}: {err}");
        }
    }

    #[test]
    fn rejects_mgmt_resources_and_missing_keys_naming_the_field() {
        let mut c = chart();
        c.release_name = "{{ (getResource \"x\").metadata.name }}-{{ .MgmtResources.x }}".into();
        assert!(of(&c).unwrap_err().contains("spec.helmCharts[2].releaseName: the template"));
        let mut c = chart();
        c.chart_version = "{{ .Cluster.metadata.labels.zone }}".into();
        let err = of(&c).unwrap_err();
        assert!(err.starts_with("spec.helmCharts[2].chartVersion: the template") && err.contains("zone"), "{err}");
    }
}
