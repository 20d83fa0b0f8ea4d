//! The charts of a run, looked up before any cluster is fingerprinted: each distinct
//! chart a cluster's rendering reads is fetched once (a range resolved against its
//! repository), and its exact version, archive digest and the helm that will render it
//! are kept among the resources under the chart's revision key. A new chart version, a
//! re-pushed archive or another helm then changes the fingerprints of exactly the clusters
//! that render that chart; a chart that cannot be fetched fails the profiles that use it,
//! each keeping its last good part.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rayon::prelude::*;
use serde_json::{Value, json};

use crate::render::ClusterPlan;
use crate::render::helm::{Access, ChartRef, Credentials, LazyRenderer};
use crate::sources::model::helm_chart::HelmChartRef;
use crate::sources::{Lookup, ObjectKey, Resources};

/// The charts `plans` render, each once, by revision key: those they install, and those
/// they uninstall with the chart's delete hooks.
pub fn wanted<'a>(plans: impl IntoIterator<Item = &'a ClusterPlan<'a>>) -> BTreeMap<ObjectKey, HelmChartRef> {
    let mut charts = BTreeMap::new();
    for plan in plans.into_iter().flat_map(ClusterPlan::charts).filter(|h| h.chart.renders() && h.chart.verification.is_none()) {
        charts.entry(plan.revision.key.clone()).or_insert_with(|| plan.chart.clone().into_owned());
    }
    charts
}

/// Looks up every chart of `charts` and records each under its revision key.
pub fn resolve_into(charts: &BTreeMap<ObjectKey, HelmChartRef>, resources: &mut Resources, helm: &LazyRenderer) {
    let looked_up: Vec<(ObjectKey, Result<Option<serde_json::Value>, String>)> = charts
        .par_iter()
        .map(|(key, chart)| {
            let outcome = chart_ref(chart, resources, &chart.chart_version).and_then(|chart| {
                let renderer = helm.get().map_err(|e| e.to_string())?;
                let fetched = renderer.fetch(&chart).map_err(|e| e.to_string())?;
                let helm_version = &renderer.helm().version().text;
                Ok(Some(json!({"version": fetched.version, "digest": fetched.digest.hex(), "helm": helm_version})))
            });
            (key.clone(), outcome)
        })
        .collect();
    for (key, outcome) in looked_up {
        resources.record(key, outcome);
    }
}

/// The chart `spec` names, at `version`, with its repository's login and CA read from
/// their Secrets.
pub fn chart_ref(spec: &HelmChartRef, resources: &Resources, version: &str) -> Result<ChartRef, String> {
    let secret = |name: &crate::sources::model::SecretName| -> Result<BTreeMap<String, Vec<u8>>, String> {
        let key = ObjectKey::new("v1", "Secret", &name.namespace, &name.name);
        match resources.lookup(&key) {
            Lookup::Found(value) => secret_data(value).map_err(|m| format!("{key}: {m}")),
            Lookup::Missing => Err(format!("registryCredentialsConfig: {key} not found")),
            Lookup::Failed(why) => Err(format!("registryCredentialsConfig: {key}: {why}")),
        }
    };
    let credentials = match &spec.access.credentials {
        Some(name) => {
            let data = secret(name)?;
            let key = Some(spec.access.key.as_str()).filter(|k| !k.is_empty());
            Some(Credentials::from_secret_data(&data, key).map_err(|m| format!("registryCredentialsConfig.credentials: {m}"))?)
        }
        None => None,
    };
    let ca_pem = match &spec.access.ca {
        Some(name) => Some(secret(name)?.remove("ca.crt").ok_or("registryCredentialsConfig.ca: the Secret has no ca.crt")?),
        None => None,
    };
    let access = Access {
        plain_http: spec.access.plain_http,
        insecure_skip_tls_verify: spec.access.insecure_skip_tls_verify,
        ca_pem,
        credentials,
        pass_credentials_all: spec.options.pass_credentials_all,
    };
    ChartRef::new("", &spec.repository_url, &spec.repository_name, &spec.chart_name, version, access).map_err(|e| e.to_string())
}

/// A Secret's data, decoded; `stringData` wins, as the API server stores it.
pub fn secret_data(value: &Value) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    for (key, encoded) in value["data"].as_object().into_iter().flatten() {
        let text = encoded.as_str().ok_or_else(|| format!("data key {key} is not a string"))?;
        out.insert(key.clone(), STANDARD.decode(text).map_err(|e| format!("data key {key} is not base64: {e}"))?);
    }
    for (key, text) in value["stringData"].as_object().into_iter().flatten() {
        out.insert(key.clone(), text.as_str().ok_or_else(|| format!("stringData key {key} is not a string"))?.as_bytes().to_vec());
    }
    Ok(out)
}

#[cfg(test)]
#[path = "charts_tests.rs"]
mod render_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::helm::RendererSettings;
    use crate::sources::Lookup;
    use crate::sources::model::SecretName;
    use crate::sources::model::helm_chart::{RegistryAccess, chart_revision_reference};

    fn chart(credentials: Option<SecretName>) -> HelmChartRef {
        HelmChartRef { access: RegistryAccess { credentials, ..RegistryAccess::default() }, ..HelmChartRef::example(0) }
    }

    fn looked_up(chart: HelmChartRef) -> String {
        let key = chart_revision_reference(&chart).key;
        let mut resources = Resources::found(BTreeMap::new());
        let helm = LazyRenderer::new(Some("/nonexistent/helm".into()), RendererSettings::default());
        resolve_into(&BTreeMap::from([(key.clone(), chart)]), &mut resources, &helm);
        match resources.lookup(&key) {
            Lookup::Failed(why) => why.to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_publisher_without_helm_fails_the_chart_naming_the_flag() {
        let why = looked_up(chart(None));
        assert!(why.contains("helm not found") && why.contains("--helm"), "{why}");
    }

    #[test]
    fn a_missing_credentials_secret_fails_the_chart_naming_it() {
        let why = looked_up(chart(Some(SecretName { namespace: "mgmt".into(), name: "login".into() })));
        assert!(why.contains("registryCredentialsConfig") && why.contains("mgmt/login") && why.contains("not found"), "{why}");
    }
}
