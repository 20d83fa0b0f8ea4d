//! Resolving a cluster's profiles to the objects they reference, and reading manifests out
//! of them.
//!
//! [`plan`] works out, for one cluster, which ConfigMaps, Secrets and template resources
//! each matching profile needs (empty namespaces become the cluster's, templated
//! template-resource names are instantiated), so a source can fetch exactly those.
//! [`profile_manifests`] then reads each data key, instantiates templated ones with
//! `.Cluster` and `.MgmtResources`, and parses the documents. Tiers and bundle assembly
//! happen in the parent module.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::{Value, json};

use super::credentials::{self, Relay};
use super::error::RenderError;
use super::manifest::{Manifest, documents};
use crate::sveltos::model::{MANIFEST_SECRET_TYPE, PolicyKind, Profile, SveltosCluster, TEMPLATE_ANNOTATION};
use crate::sveltos::{ObjectKey, Reference, Resources, typed};
use crate::template::{self, TemplateSource};

/// What one cluster needs fetched, profile by profile.
#[derive(Debug, Clone)]
pub struct ClusterPlan<'a> {
    pub cluster: &'a SveltosCluster,
    pub profiles: Vec<ProfilePlan<'a>>,
    /// The store credentials to relay, for a cluster registered with `--token`.
    pub credentials: Option<Relay>,
}

#[derive(Debug, Clone)]
pub struct ProfilePlan<'a> {
    pub profile: &'a Profile,
    policies: Vec<(Reference, PolicyKind, bool)>,
    /// (identifier, reference, optional)
    templates: Vec<(String, Reference, bool)>,
}

/// Resolves every reference of `profiles` for `cluster`.
pub fn plan<'a>(cluster: &'a SveltosCluster, profiles: Vec<&'a Profile>) -> Result<ClusterPlan<'a>, RenderError> {
    let scoped = |ns: &str| if ns.is_empty() { cluster.id.namespace().to_string() } else { ns.to_string() };
    let profiles = profiles
        .into_iter()
        .map(|profile| {
            let policies = profile
                .policy_refs
                .iter()
                .map(|r| {
                    let kind = match r.kind {
                        PolicyKind::ConfigMap => "ConfigMap",
                        PolicyKind::Secret => "Secret",
                    };
                    let key = ObjectKey::new("v1", kind, &scoped(&r.namespace), &r.name);
                    (Reference { key, api_version: "v1".into() }, r.kind, r.optional)
                })
                .collect();
            let display = profile.display();
            let templates = profile
                .template_refs
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let resource = format!("spec.templateResourceRefs[{i}]");
                    let instantiate = |key: &str, text: &str| -> Result<String, RenderError> {
                        if !text.contains("{{") {
                            return Ok(text.to_string());
                        }
                        let source = TemplateSource { profile: &display, resource: &resource, key };
                        let data = json!({"Cluster": cluster.object, "MgmtResources": {}});
                        template::render(&source, text, &data)
                            .map(|s| s.trim().to_string())
                            .map_err(|e| RenderError::Template(e.to_string()))
                    };
                    let namespace = scoped(&instantiate("resource.namespace", &r.namespace)?);
                    let name = instantiate("resource.name", &r.name)?;
                    let key = ObjectKey::new(&r.api_version, &r.kind, &namespace, &name);
                    Ok((r.identifier.clone(), Reference { key, api_version: r.api_version.clone() }, r.optional))
                })
                .collect::<Result<_, RenderError>>()?;
            Ok(ProfilePlan { profile, policies, templates })
        })
        .collect::<Result<_, RenderError>>()?;
    Ok(ClusterPlan { cluster, profiles, credentials: credentials::relay_of(cluster)? })
}

impl ClusterPlan<'_> {
    /// Every object this cluster's rendering reads.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.profiles.iter().flat_map(ProfilePlan::references).chain(self.credentials.iter().map(|r| &r.source))
    }
}

/// What a profile without templates renders from: itself and the objects its references
/// resolved to. Within one run, equal keys render equal objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SharedKey {
    part: String,
    references: Vec<ObjectKey>,
}

impl ProfilePlan<'_> {
    /// Every object this profile's rendering reads, for one cluster.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.policies.iter().map(|(r, _, _)| r).chain(self.templates.iter().map(|(_, r, _)| r))
    }

    /// The key this profile renders the same under for every cluster, unless one of its
    /// ConfigMaps or Secrets is a template (which sees the cluster).
    pub fn shared_key(&self, resources: &Resources) -> Option<SharedKey> {
        let templated = self.policies.iter().any(|(r, _, _)| resources.0.get(&r.key).is_some_and(is_template));
        (!templated).then(|| SharedKey { part: self.profile.part_name(), references: self.references().map(|r| r.key.clone()).collect() })
    }
}

/// Whether a fetched ConfigMap or Secret carries the template annotation.
fn is_template(value: &Value) -> bool {
    value["metadata"]["annotations"].as_object().is_some_and(|a| a.contains_key(TEMPLATE_ANNOTATION))
}

/// The manifests of one profile for one cluster. Optional references that are missing
/// add a warning.
pub fn profile_manifests(
    plan: &ProfilePlan<'_>,
    cluster: &SveltosCluster,
    resources: &Resources,
    warnings: &mut Vec<String>,
) -> Result<Vec<Manifest>, RenderError> {
    let display = plan.profile.display();
    let missing = |key: &ObjectKey, optional: bool, warnings: &mut Vec<String>| {
        if optional {
            warnings.push(format!("{display}: optional {key} not found; skipped"));
            Ok(())
        } else {
            Err(RenderError::Missing { profile: display.clone(), object: key.to_string() })
        }
    };
    let mut mgmt = serde_json::Map::new();
    for (identifier, r, optional) in &plan.templates {
        match resources.0.get(&r.key) {
            Some(v) => {
                mgmt.insert(identifier.clone(), v.clone());
            }
            None => missing(&r.key, *optional, warnings)?,
        }
    }
    let data = json!({"Cluster": cluster.object, "MgmtResources": mgmt});
    let mut out = Vec::new();
    for (r, kind, optional) in &plan.policies {
        let Some(value) = resources.0.get(&r.key) else {
            missing(&r.key, *optional, warnings)?;
            continue;
        };
        let object = r.key.to_string();
        let templated = is_template(value);
        for (key, text) in policy_texts(value, *kind, &object, warnings)? {
            let text = if templated {
                let source = TemplateSource { profile: &display, resource: &object, key: &key };
                template::render(&source, &text, &data).map_err(|e| RenderError::Template(e.to_string()))?
            } else {
                text
            };
            out.extend(documents(&text, &format!("{display}: {object} key {key}"))?);
        }
    }
    Ok(out)
}

/// The data keys of a ConfigMap or manifest Secret, in key order.
fn policy_texts(value: &Value, kind: PolicyKind, object: &str, warnings: &mut Vec<String>) -> Result<Vec<(String, String)>, RenderError> {
    let unreadable = |message: String| RenderError::Unreadable { object: object.to_string(), message };
    let texts = match kind {
        PolicyKind::ConfigMap => {
            let cm = typed::<ConfigMap>(value).map_err(unreadable)?;
            if cm.binary_data.as_ref().is_some_and(|b| !b.is_empty()) {
                warnings.push(format!("{object}: binaryData holds no manifests; ignored"));
            }
            cm.data.unwrap_or_default()
        }
        PolicyKind::Secret => {
            let secret = typed::<Secret>(value).map_err(unreadable)?;
            let type_ = secret.type_.clone().unwrap_or_default();
            if type_ != MANIFEST_SECRET_TYPE {
                return Err(RenderError::NotManifests { object: object.to_string(), actual: type_ });
            }
            let mut texts = BTreeMap::new();
            for (k, bytes) in secret.data.unwrap_or_default() {
                let text = String::from_utf8(bytes.0).map_err(|_| unreadable(format!("data key {k} is not UTF-8 text")))?;
                texts.insert(k, text);
            }
            // As the API server does when it stores a Secret: stringData wins over data.
            texts.extend(secret.string_data.unwrap_or_default());
            texts
        }
    };
    Ok(texts.into_iter().collect())
}
