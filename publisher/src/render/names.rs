//! The names and namespaces of referenced objects, which are templates in Sveltos
//! (`nginx-{{ .Cluster.metadata.name }}`), resolved per cluster before the lookup.
//!
//! They see Sveltos's name data (libsveltos `GetReferenceResourceName`): `.Cluster` (the
//! whole SveltosCluster), `.ClusterNamespace` and `.ClusterName`, with `missingkey=error`.
//! An empty namespace is the cluster's. Sveltos renders them with Go's `html/template`,
//! which would escape `&`, `<`, `+` and quotes in a value; a Kubernetes name cannot hold
//! those characters, escaped or not, so the publisher renders them as plain text and the
//! only difference is in the message that names the bad result. Errors name the field,
//! the template and, for a lookup that finds nothing, the name it resolved to.

use serde_json::{Value, json};

use crate::render::template::{self, TemplateSource};
use crate::sources::model::{EventInstance, SveltosCluster};

/// The data names and namespaces are rendered with.
pub fn name_data(cluster: &SveltosCluster) -> Value {
    json!({
        "Cluster": cluster.object,
        "ClusterNamespace": cluster.id.namespace(),
        "ClusterName": cluster.id.name(),
    })
}

/// `data` with, for an EventTrigger's instance, its event (`.Resource`,
/// `.MatchingResources`, ...), which Sveltos's event-manager renders its fields with.
pub fn with_event(mut data: Value, event: &EventInstance) -> Value {
    if let Some(map) = data.as_object_mut() {
        map.extend(event.data.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    data
}

/// A name or namespace as written and as resolved for one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub written: String,
    pub value: String,
}

/// Resolves one name field of `profile` (`spec.policyRefs[0].name`): a template is
/// rendered with `data` and trimmed of surrounding whitespace.
pub fn resolve(profile: &str, field: &str, written: &str, data: &Value) -> Result<Resolved, String> {
    if !written.contains("{{") {
        return Ok(Resolved { written: written.to_string(), value: written.to_string() });
    }
    let source = TemplateSource { profile, resource: field, key: "" };
    let value = template::render(&source, written, data).map_err(|e| format!("{field}: the template {written:?}: {e}"))?;
    Ok(Resolved { written: written.to_string(), value: value.trim().to_string() })
}

/// A namespace field: empty is the cluster's namespace.
pub fn resolve_namespace(profile: &str, field: &str, written: &str, data: &Value, cluster: &SveltosCluster) -> Result<Resolved, String> {
    if written.is_empty() {
        return Ok(Resolved { written: String::new(), value: cluster.id.namespace().to_string() });
    }
    resolve(profile, field, written, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::parse::parse_cluster;

    #[test]
    fn names_see_the_cluster_its_namespace_and_name() {
        let cluster = parse_cluster(&json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": "edge-1", "namespace": "fleet", "labels": {"env": "prod"}}}))
        .unwrap();
        let data = name_data(&cluster);
        let r = resolve("ClusterProfile/web", "spec.policyRefs[0].name", "nginx-{{ .Cluster.metadata.name }}", &data).unwrap();
        assert_eq!((r.value.as_str(), r.written.as_str()), ("nginx-edge-1", "nginx-{{ .Cluster.metadata.name }}"));
        let r =
            resolve("p", "f", "{{ .ClusterNamespace }}-{{ .ClusterName }}-{{ index .Cluster.metadata.labels \"env\" }}", &data).unwrap();
        assert_eq!(r.value, "fleet-edge-1-prod");
        assert_eq!(resolve_namespace("p", "f", "", &data, &cluster).unwrap().value, "fleet");
        assert_eq!(resolve("p", "f", "plain", &data).unwrap().value, "plain");
    }

    #[test]
    fn rejects_a_name_template_that_fails_naming_field_and_template() {
        let cluster = parse_cluster(&json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": "edge-1", "namespace": "fleet"}}))
        .unwrap();
        let err = resolve("ClusterProfile/web", "spec.policyRefs[1].name", "x-{{ .Cluster.metadata.labels.zone }}", &name_data(&cluster))
            .unwrap_err();
        assert!(err.starts_with("spec.policyRefs[1].name: the template \"x-{{ .Cluster.metadata.labels.zone }}\":"), "{err}");
        assert!(err.contains("zone"), "{err}");
    }
}
