//! The list fields of a profile spec: what it references (`clusterRefs`, `policyRefs`,
//! `templateResourceRefs`, `patchesFrom`), its `patches` and its `driftExclusions`. A
//! reference the publisher cannot deploy (a `Local` one, a Flux source) is left out with a
//! note saying why; one that is malformed is an error naming the field.

use airlock_bundle::ClusterId;
use airlock_bundle::statement::{DEFAULT_TIER, DriftExclusion, FieldNote, Support, Target as DriftTarget};
use airlock_bundle::verify::{MAX_DRIFT_PATHS, is_json_pointer};

use super::reader::Fields;
use crate::duration::parse_go_duration;
use crate::sources::model::Target;
use crate::sources::model::{
    DEFAULT_INTERVAL, ModelError, PatchesFromRef, PolicyKind, PolicyRef, ProfilePatch, RemoteUrl, SecretName, TemplateRef, redact,
};

/// `clusterRefs`: SveltosClusters only; a Profile's namespace replaces theirs, as Sveltos's
/// `limitReferencesToNamespace` does.
pub fn cluster_refs(spec: &Fields<'_>, own: Option<&str>, notes: &mut Vec<FieldNote>) -> Result<Vec<ClusterId>, ModelError> {
    let mut out = Vec::new();
    for (_, r) in spec.items("clusterRefs")? {
        let kind: String = r.or_default("kind")?;
        let name: String = r.or_default("name")?;
        if kind != "SveltosCluster" {
            notes.push(FieldNote {
                field: r.path("kind"),
                support: Support::NotApplicable,
                detail: format!("{kind:?} {name} is not a SveltosCluster, so never a pull-mode cluster; it matches nothing"),
            });
            continue;
        }
        let namespace = match own {
            Some(own) => own.to_string(),
            None => r.or_default("namespace")?,
        };
        out.push(ClusterId::new(&namespace, &name).map_err(|e| r.own_error(e.to_string()))?);
    }
    Ok(out)
}

/// `policyRefs` the publisher deploys: Remote ConfigMaps, Secrets and remote URLs.
pub fn policy_refs(spec: &Fields<'_>, own: Option<&str>, notes: &mut Vec<FieldNote>) -> Result<Vec<PolicyRef>, ModelError> {
    references(spec, "policyRefs", own, notes)
}

/// The ConfigMap and Secret references of the list `field` (`policyRefs`, a RoleRequest's
/// `roleRefs`), which Sveltos reads alike.
pub fn references(spec: &Fields<'_>, field: &str, own: Option<&str>, notes: &mut Vec<FieldNote>) -> Result<Vec<PolicyRef>, ModelError> {
    let mut out = Vec::new();
    for (index, r) in spec.items(field)? {
        let kind: String = r.or_default("kind")?;
        let name: String = r.or_default("name")?;
        let namespace: String = r.or_default("namespace")?;
        let remote = match r.raw("remoteURL") {
            serde_json::Value::Null => None,
            _ => Some(remote_url(&r.nested("remoteURL")?)?),
        };
        if remote.is_some() && !r.raw("kind").is_null() {
            // As the CRD's rule has it: one of remoteURL and kind.
            return Err(r.error("kind", "must be omitted when remoteURL is set".into()));
        }
        let kind = match kind.as_str() {
            // Remote content is read as a ConfigMap's data would be.
            _ if remote.is_some() => PolicyKind::ConfigMap,
            "ConfigMap" => PolicyKind::ConfigMap,
            "Secret" => PolicyKind::Secret,
            other => {
                notes.push(FieldNote {
                    field: r.path("kind"),
                    support: Support::NotSupported,
                    detail: format!("{other} {namespace}/{name} is not read: only ConfigMap and Secret references are deployed yet"),
                });
                continue;
            }
        };
        if !deployed_remotely(&r, &format!("{} {namespace}/{name}", kind.kind()), notes)? {
            continue;
        }
        if name.is_empty() && remote.is_none() {
            return Err(r.error("name", "is empty".into()));
        }
        let tier = r.get::<u32>("tier")?.unwrap_or(DEFAULT_TIER);
        out.push(PolicyRef {
            index,
            kind,
            namespace: own.map_or(namespace, str::to_string),
            name,
            optional: r.or_default("optional")?,
            tier,
            skip_namespace_creation: r.or_default("skipNamespaceCreation")?,
            force: r.or_default("force")?,
            remote,
        });
    }
    Ok(out)
}

/// Whether a reference's `deploymentType` sends it to the managed cluster; a `Local` one
/// (`what` names it) gets a not-applicable note instead.
pub fn deployed_remotely(r: &Fields<'_>, what: &str, notes: &mut Vec<FieldNote>) -> Result<bool, ModelError> {
    match r.get::<String>("deploymentType")?.as_deref() {
        None | Some("Remote") => Ok(true),
        Some("Local") => {
            notes.push(FieldNote {
                field: r.path("deploymentType"),
                support: Support::NotApplicable,
                detail: format!(
                    "Local: {what} is deployed to the management cluster by Sveltos; Airlock publishes only what the managed cluster applies"
                ),
            });
            Ok(false)
        }
        Some(other) => Err(r.error("deploymentType", format!("{other:?} is neither Remote nor Local"))),
    }
}

/// A `remoteURL`: the CRD's URL pattern, and `secretRef` with both name and namespace.
pub fn remote_url(r: &Fields<'_>) -> Result<RemoteUrl, ModelError> {
    let url: String = r.or_default("url")?;
    if !["http://", "https://", "oci://"].iter().any(|scheme| url.starts_with(scheme)) {
        return Err(r.error("url", format!("{:?} does not start with http://, https:// or oci://", redact(&url))));
    }
    let secret = secret_ref(r)?;
    let interval = match r.get::<String>("interval")? {
        None => DEFAULT_INTERVAL,
        Some(text) => parse_go_duration(&text).map_err(|message| r.error("interval", message))?,
    };
    Ok(RemoteUrl {
        url,
        plain_http: r.or_default("plainHTTP")?,
        insecure_skip_tls_verify: r.or_default("insecureSkipTLSVerify")?,
        secret,
        template: r.or_default("template")?,
        interval,
        tree: false,
    })
}

/// `templateResourceRefs`. A Profile's confinement to its namespace is checked once the
/// namespace template is resolved.
pub fn template_refs(spec: &Fields<'_>) -> Result<Vec<TemplateRef>, ModelError> {
    let mut out = Vec::new();
    for (index, r) in spec.items("templateResourceRefs")? {
        let resource = r.nested("resource")?;
        let identifier: String = r.or_default("identifier")?;
        let kind: String = resource.or_default("kind")?;
        let name: String = resource.or_default("name")?;
        if kind.is_empty() || name.is_empty() || identifier.is_empty() {
            return Err(r.own_error("needs resource.kind, resource.name and identifier".into()));
        }
        let api_version: String = resource.or_default("apiVersion")?;
        out.push(TemplateRef {
            index,
            api_version: if api_version.is_empty() { "v1".into() } else { api_version },
            kind,
            namespace: resource.or_default("namespace")?,
            name,
            identifier,
            optional: r.or_default("optional")?,
            ignore_status_changes: r.or_default("ignoreStatusChanges")?,
        });
    }
    Ok(out)
}

/// `patchesFrom`.
pub fn patches_from(spec: &Fields<'_>) -> Result<Vec<PatchesFromRef>, ModelError> {
    let mut out = Vec::new();
    for (index, r) in spec.items("patchesFrom")? {
        let (kind, name) = config_source(&r)?;
        out.push(PatchesFromRef { index, kind, namespace: r.or_default("namespace")?, name, optional: r.or_default("optional")? });
    }
    Ok(out)
}

/// The `kind` (ConfigMap or Secret) and non-empty `name` of a reference to data keys.
pub fn config_source(r: &Fields<'_>) -> Result<(PolicyKind, String), ModelError> {
    let kind = match r.or_default::<String>("kind")?.as_str() {
        "ConfigMap" => PolicyKind::ConfigMap,
        "Secret" => PolicyKind::Secret,
        other => return Err(r.error("kind", format!("{other:?} is neither ConfigMap nor Secret"))),
    };
    let name: String = r.or_default("name")?;
    if name.is_empty() {
        return Err(r.error("name", "is empty".into()));
    }
    Ok((kind, name))
}

/// `patches`.
pub fn patches(spec: &Fields<'_>) -> Result<Vec<ProfilePatch>, ModelError> {
    let mut out = Vec::new();
    for (_, p) in spec.items("patches")? {
        let target = match p.raw("target") {
            serde_json::Value::Null => None,
            _ => {
                let t = p.nested("target")?;
                Some(Target {
                    group: t.get("group")?,
                    version: t.get("version")?,
                    kind: t.get("kind")?,
                    name: t.get("name")?,
                    namespace: t.get("namespace")?,
                    label_selector: t.get("labelSelector")?,
                    annotation_selector: t.get("annotationSelector")?,
                })
            }
        };
        out.push(ProfilePatch { patch: p.or_default("patch")?, target });
    }
    Ok(out)
}

/// `driftExclusions`, checked as a puller checks them: 1 to 1,000 JSON pointers each.
pub fn drift_exclusions(spec: &Fields<'_>) -> Result<Vec<DriftExclusion>, ModelError> {
    let mut out = Vec::new();
    for (_, d) in spec.items("driftExclusions")? {
        let paths: Vec<String> = d.or_default("paths")?;
        if paths.is_empty() || paths.len() > MAX_DRIFT_PATHS {
            return Err(d.error("paths", format!("has {} paths, expected 1 to {MAX_DRIFT_PATHS}", paths.len())));
        }
        if let Some(bad) = paths.iter().find(|p| !is_json_pointer(p)) {
            return Err(d.error("paths", format!("{bad:?} is not a JSON pointer such as /spec/replicas")));
        }
        let target = match d.raw("target") {
            serde_json::Value::Null => None,
            _ => {
                let t = d.nested("target")?;
                let s = |key: &str| -> Result<Option<String>, ModelError> { Ok(t.get::<String>(key)?.filter(|v| !v.is_empty())) };
                Some(DriftTarget {
                    group: s("group")?,
                    version: s("version")?,
                    kind: s("kind")?,
                    name: s("name")?,
                    namespace: s("namespace")?,
                    label_selector: s("labelSelector")?,
                    annotation_selector: s("annotationSelector")?,
                })
            }
        };
        out.push(DriftExclusion { paths, target });
    }
    Ok(out)
}

/// The `secretRef` of `fields`, which must name both a namespace and a name.
pub fn secret_ref(fields: &Fields<'_>) -> Result<Option<SecretName>, ModelError> {
    if fields.raw("secretRef").is_null() {
        return Ok(None);
    }
    let s = fields.nested("secretRef")?;
    let (namespace, name): (String, String) = (s.or_default("namespace")?, s.or_default("name")?);
    if namespace.is_empty() || name.is_empty() {
        return Err(fields.error("secretRef", "needs both name and namespace".into()));
    }
    Ok(Some(SecretName { namespace, name }))
}
