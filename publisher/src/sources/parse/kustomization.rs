//! `kustomizationRefs`: the ConfigMap, Secret and Flux GitRepository and
//! OCIRepository sources and the `remoteURL`s the publisher builds. A reference it cannot
//! build (a Bucket, a `Local` one) is left out with a note saying why; one that is malformed
//! is an error naming the field.

use airlock_bundle::statement::{DEFAULT_TIER, FieldNote, Support};

use super::reader::Fields;
use super::refs::{config_source, deployed_remotely, remote_url};
use crate::sources::model::kustomization::{KustomizationRef, KustomizeKind, ValuesFromRef};
use crate::sources::model::{ModelError, RemoteUrl};

/// `kustomizationRefs` the publisher builds; a Profile's own namespace replaces theirs.
pub fn kustomization_refs(spec: &Fields<'_>, own: Option<&str>, notes: &mut Vec<FieldNote>) -> Result<Vec<KustomizationRef>, ModelError> {
    let mut out = Vec::new();
    for (index, r) in spec.items("kustomizationRefs")? {
        let remote = match r.raw("remoteURL") {
            serde_json::Value::Null => None,
            _ if !r.raw("kind").is_null() => return Err(r.error("kind", "must be omitted when remoteURL is set".into())),
            _ => Some(RemoteUrl { tree: true, ..remote_url(&r.nested("remoteURL")?)? }),
        };
        let kind: String = r.or_default("kind")?;
        let name: String = r.or_default("name")?;
        let namespace: String = r.or_default("namespace")?;
        let kind = match kind.as_str() {
            _ if remote.is_some() => KustomizeKind::Remote,
            "ConfigMap" => KustomizeKind::ConfigMap,
            "Secret" => KustomizeKind::Secret,
            "GitRepository" => KustomizeKind::GitRepository,
            "OCIRepository" => KustomizeKind::OCIRepository,
            "Bucket" => {
                notes.push(FieldNote {
                    field: r.path("kind"),
                    support: Support::NotSupported,
                    detail: format!(
                        "{kind} {namespace}/{name} is not built: only ConfigMap, Secret, GitRepository and OCIRepository sources are"
                    ),
                });
                continue;
            }
            other => return Err(r.error("kind", format!("{other:?} is not ConfigMap, Secret, GitRepository, OCIRepository or Bucket"))),
        };
        if !deployed_remotely(&r, &format!("the kustomization of {} {namespace}/{name}", kind.kind()), notes)? {
            continue;
        }
        if name.is_empty() && remote.is_none() {
            return Err(r.error("name", "is empty".into()));
        }
        out.push(KustomizationRef {
            index,
            kind,
            namespace: own.map_or(namespace, str::to_string),
            name,
            path: r.or_default("path")?,
            components: r.or_default("components")?,
            target_namespace: r.or_default("targetNamespace")?,
            values: r.or_default("values")?,
            values_from: values_from(&r, own)?,
            optional: r.or_default("optional")?,
            tier: r.get::<u32>("tier")?.unwrap_or(DEFAULT_TIER),
            skip_namespace_creation: r.or_default("skipNamespaceCreation")?,
            force: r.or_default("force")?,
            remote,
        });
    }
    Ok(out)
}

pub fn values_from(r: &Fields<'_>, own: Option<&str>) -> Result<Vec<ValuesFromRef>, ModelError> {
    let mut out = Vec::new();
    for (i, v) in r.items("valuesFrom")? {
        let (kind, name) = config_source(&v)?;
        let namespace: String = v.or_default("namespace")?;
        out.push(ValuesFromRef {
            field: format!("{}[{i}]", r.path("valuesFrom")),
            kind,
            namespace: own.map_or(namespace, str::to_string),
            name,
            optional: v.or_default("optional")?,
        });
    }
    Ok(out)
}
