//! One manifest of a rendered profile: parsed from a data key, labelled, and placed at its
//! bundle path.
//!
//! A data key holds a YAML stream; each non-empty document must be one Kubernetes object.
//! The profile's extraLabels and extraAnnotations are set on it (overriding what the
//! document says, as Sveltos does), and it is written back as plain YAML by `yaml::emit`.
//! Which copy of an object wins across profiles is `tier`'s business.

use serde_json::{Map, Value};

use super::error::RenderError;
use crate::sources::ObjectKey;
use crate::yaml::parse_documents;
use airlock_bundle::digest::hash_suffixed;
use airlock_bundle::path::check_path;

/// Longest file name (the last path component) that fits a ustar `name` field (spec 3.2).
const MAX_FILE_NAME: usize = 100;
/// Bytes of an object name kept in a shortened file name; a hash of the full identity
/// follows, so shortened names stay unique.
const SHORT_NAME: usize = 40;

/// A parsed object and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub key: ObjectKey,
    pub value: Value,
    /// `ClusterProfile/web: ConfigMap default/web key deploy.yaml document 2`.
    pub origin: String,
}

/// Parses the documents of one data key. `origin` names the profile, resource and key.
/// A `v1` `List` document (what `kubectl get -o yaml` writes) stands for its items, each
/// an object of its own, as `kubectl apply` reads it.
pub fn documents(text: &str, origin: &str) -> Result<Vec<Manifest>, RenderError> {
    let docs = parse_documents(text).map_err(|message| RenderError::Manifest { origin: origin.to_string(), message })?;
    let mut objects = Vec::with_capacity(docs.len());
    for (i, value) in docs.into_iter().enumerate() {
        let origin = format!("{origin} document {}", i + 1);
        if !is_list(&value) {
            objects.push((origin, value));
            continue;
        }
        let Some(Value::Array(items)) = value.get("items").cloned() else {
            return Err(RenderError::Manifest { origin, message: "a List whose items is not a list".into() });
        };
        objects.extend(items.into_iter().enumerate().map(|(j, item)| (format!("{origin} item {}", j + 1), item)));
    }
    objects
        .into_iter()
        .map(|(origin, value)| {
            let key = ObjectKey::of(&value).filter(|k| !k.name.is_empty() && value["metadata"].is_object()).ok_or_else(|| {
                RenderError::Manifest {
                    origin: origin.clone(),
                    message: "not a Kubernetes object: needs apiVersion, kind and metadata.name".into(),
                }
            })?;
            Ok(Manifest { key, value, origin })
        })
        .collect()
}

fn is_list(value: &Value) -> bool {
    value.get("apiVersion").and_then(Value::as_str) == Some("v1") && value.get("kind").and_then(Value::as_str) == Some("List")
}

/// Sets `extra` entries in the object's `metadata.<field>` map, creating it when absent.
pub fn add_metadata(value: &mut Value, field: &str, extra: &std::collections::BTreeMap<String, String>) {
    if extra.is_empty() {
        return;
    }
    let metadata = value["metadata"].as_object_mut().expect("documents() checked metadata is a map");
    let map = metadata.entry(field).or_insert_with(|| Value::Object(Map::new()));
    if !map.is_object() {
        *map = Value::Object(Map::new());
    }
    let map = map.as_object_mut().expect("made a map above");
    for (k, v) in extra {
        map.insert(k.clone(), Value::String(v.clone()));
    }
}

/// The bundle path of an object in a part: `<part>/<Kind>.<namespace|cluster>.<name>.yaml`.
/// Bytes outside the path alphabet become `_`, and a name too long for a tar header is
/// shortened with a hash. Two objects may share a path (the file then holds both).
pub fn file_path(part: &str, key: &ObjectKey) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect()
    };
    let scope = if key.namespace.is_empty() { "cluster".to_string() } else { clean(&key.namespace) };
    let (kind, name) = (clean(&key.kind), clean(&key.name));
    let mut file = format!("{kind}.{scope}.{name}.yaml");
    if file.len() > MAX_FILE_NAME {
        let short: String = name.chars().take(SHORT_NAME).collect();
        file = format!("{kind}.{scope}.{}.yaml", hash_suffixed(&short, key.to_string().as_bytes()));
    }
    format!("{part}/{file}")
}

/// Checks a path made by [`file_path`] against the bundle grammar: only a part name too
/// long for a tar header fails here.
pub fn checked_path(part: &str, key: &ObjectKey) -> Result<String, RenderError> {
    let path = file_path(part, key);
    check_path(&path).map_err(|e| RenderError::Path { object: key.to_string(), message: e.to_string() })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn parses_documents_and_refuses_non_objects() {
        let docs = documents("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n---\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", "p: cm key k").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].key, ObjectKey::new("apps/v1", "Deployment", "", "d"));
        assert_eq!(docs[1].origin, "p: cm key k document 2");
        for bad in ["just a string\n", "apiVersion: v1\nkind: X\n", "kind: X\nmetadata: {name: a}\n", "a: [\n"] {
            let err = documents(bad, "p: cm key k").unwrap_err();
            assert!(matches!(&err, RenderError::Manifest { origin, .. } if origin.starts_with("p: cm key k")), "{bad}: {err}");
        }
    }

    #[test]
    fn a_list_document_stands_for_its_items() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: apps}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: apps}}\n";
        let docs = documents(text, "p: cm key k").unwrap();
        assert_eq!(docs.iter().map(|d| d.key.name.as_str()).collect::<Vec<_>>(), ["a", "apps"]);
        assert_eq!(docs[1].origin, "p: cm key k document 1 item 2");
        let err = documents("apiVersion: v1\nkind: List\nitems: {}\n", "p").unwrap_err();
        assert!(err.to_string().contains("a List whose items is not a list"), "{err}");
        let err = documents("apiVersion: v1\nkind: List\nitems:\n- {kind: ConfigMap}\n", "p").unwrap_err();
        assert!(matches!(&err, RenderError::Manifest { origin, .. } if origin == "p document 1 item 1"), "{err}");
    }

    #[test]
    fn extra_labels_override_and_create() {
        let mut v = json!({"metadata": {"name": "a", "labels": {"app": "x", "team": "old"}}});
        let extra = BTreeMap::from([("team".to_string(), "new".to_string())]);
        add_metadata(&mut v, "labels", &extra);
        add_metadata(&mut v, "annotations", &extra);
        assert_eq!(v["metadata"]["labels"], json!({"app": "x", "team": "new"}));
        assert_eq!(v["metadata"]["annotations"], json!({"team": "new"}));
    }

    #[test]
    fn paths_are_valid_for_any_object_name() {
        let key = ObjectKey::new("rbac.authorization.k8s.io/v1", "ClusterRole", "", "system:aggregate-to-edit");
        assert_eq!(file_path("ClusterProfile.rbac", &key), "ClusterProfile.rbac/ClusterRole.cluster.system_aggregate-to-edit.yaml");
        let ns = ObjectKey::new("v1", "ConfigMap", "apps", "web");
        assert_eq!(checked_path("Profile.team-a.web", &ns).unwrap(), "Profile.team-a.web/ConfigMap.apps.web.yaml");
        let long = ObjectKey::new("v1", "ConfigMap", "apps", &"x".repeat(253));
        let other = ObjectKey { name: format!("{}y", "x".repeat(252)), ..long.clone() };
        let (a, b) = (checked_path("ClusterProfile.web", &long).unwrap(), checked_path("ClusterProfile.web", &other).unwrap());
        assert_ne!(a, b);
        let part = format!("ClusterProfile.{}", "p".repeat(200));
        assert!(matches!(checked_path(&part, &ns), Err(RenderError::Path { .. })));
    }
}
