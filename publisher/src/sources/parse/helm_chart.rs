//! `helmCharts`: the entries the publisher renders. An entry without the fields Sveltos
//! requires, or with a value of the wrong type, is an error naming the field; what an
//! entry's `options` and verification fields do that rendering does not is noted by
//! `fields` and `crate::sources::model::helm_options`.

use airlock_bundle::statement::FieldNote;

use super::kustomization::values_from;
use super::reader::Fields;
use crate::sources::model::helm_chart::{HelmAction, HelmChartRef, RegistryAccess};
use crate::sources::model::{ModelError, SecretName};

/// `helmCharts`; a Profile's own namespace replaces its valuesFrom and credentials
/// namespaces, as Sveltos confines a Profile to its namespace.
pub fn helm_charts(spec: &Fields<'_>, own: Option<&str>, notes: &mut Vec<FieldNote>) -> Result<Vec<HelmChartRef>, ModelError> {
    let mut out = Vec::new();
    for (index, h) in spec.items("helmCharts")? {
        let required = |key: &str| -> Result<String, ModelError> {
            let value: String = h.or_default(key)?;
            if value.trim().is_empty() { Err(h.error(key, "is required and empty".into())) } else { Ok(value) }
        };
        let action = match h.get::<String>("helmChartAction")?.as_deref() {
            None | Some("Install") => HelmAction::Install,
            Some("Uninstall") => HelmAction::Uninstall,
            Some(other) => return Err(h.error("helmChartAction", format!("{other:?} is neither Install nor Uninstall"))),
        };
        let access = match h.raw("registryCredentialsConfig") {
            serde_json::Value::Null => RegistryAccess::default(),
            _ => {
                let r = h.nested("registryCredentialsConfig")?;
                RegistryAccess {
                    credentials: secret(&r, "credentials", own)?,
                    key: r.or_default("key")?,
                    ca: secret(&r, "ca", own)?,
                    plain_http: r.or_default("plainHTTP")?,
                    insecure_skip_tls_verify: r.or_default("insecureSkipTLSVerify")?,
                }
            }
        };
        let mut options = crate::sources::model::helm_options::read(Some(h.raw("options")), h.path("").trim_end_matches('.'))
            .map_err(|m| h.error("options", m))?;
        notes.append(&mut options.notes);
        out.push(HelmChartRef {
            index,
            repository_url: required("repositoryURL")?,
            repository_name: h.or_default("repositoryName")?,
            chart_name: required("chartName")?,
            chart_version: h.or_default("chartVersion")?,
            release_name: required("releaseName")?,
            release_namespace: required("releaseNamespace")?,
            action,
            values: h.or_default("values")?,
            values_from: values_from(&h, own)?,
            access,
            options,
            verification: ["provenanceVerification", "signatureVerification"].into_iter().find(|k| !h.raw(k).is_null()).map(|k| h.path(k)),
        });
    }
    Ok(out)
}

/// A `{name, namespace}` Secret reference; an empty namespace is the profile's own for a
/// Profile, and must be written for a ClusterProfile.
fn secret(r: &Fields<'_>, key: &str, own: Option<&str>) -> Result<Option<SecretName>, ModelError> {
    if r.raw(key).is_null() {
        return Ok(None);
    }
    let s = r.nested(key)?;
    let (namespace, name): (String, String) = (s.or_default("namespace")?, s.or_default("name")?);
    let namespace = own.map_or(namespace, str::to_string);
    if namespace.is_empty() || name.is_empty() {
        return Err(r.error(key, "needs both name and namespace".into()));
    }
    Ok(Some(SecretName { namespace, name }))
}
