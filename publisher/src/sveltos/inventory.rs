//! What the sources yield and rendering reads: the checked [`Inventory`] of clusters and
//! profiles, objects named by [`ObjectKey`] and asked for by [`Reference`], the
//! [`Resources`] fetched for a run, and why a source could not be read. Reading them from a
//! directory or a cluster is `dir`'s and `live`'s.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::model::{CLUSTER_GROUP, ModelError, PROFILE_GROUP, Profile, SveltosCluster};
use super::parse::{parse_cluster, parse_profile};

/// Why the source could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{path}: not valid YAML: {message}")]
    Yaml { path: String, message: String },
    #[error("{path}: {size} bytes, over the limit of {limit}")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{path}: document {document}: {message}")]
    Document { path: String, document: usize, message: String },
    #[error("{object} is defined twice: in {first} and in {second}")]
    Duplicate { object: String, first: String, second: String },
    #[error("{origin}: {source}")]
    Object { origin: String, source: ModelError },
    #[error("management cluster: {what}: {message}")]
    Kube { what: String, message: String },
}

/// The identity of a Kubernetes object: API group (not version), kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    /// Empty for cluster-scoped objects (or namespaced ones written without a namespace).
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(api_version: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey { group: group_of(api_version).to_string(), kind: kind.into(), namespace: namespace.into(), name: name.into() }
    }

    /// The key of an object value; `None` without string apiVersion, kind and metadata.name.
    pub fn of(value: &Value) -> Option<ObjectKey> {
        let meta = &value["metadata"];
        Some(ObjectKey::new(
            value["apiVersion"].as_str()?,
            value["kind"].as_str()?,
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str()?,
        ))
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        match self.namespace.as_str() {
            "" => write!(f, " {}", self.name),
            ns => write!(f, " {ns}/{}", self.name),
        }
    }
}

/// The API group of an apiVersion: `apps/v1` → `apps`, `v1` → the core group "".
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// A management-cluster object rendering needs, with the version to ask for it in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reference {
    pub key: ObjectKey,
    pub api_version: String,
}

/// Clusters and profiles, checked.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub clusters: Vec<SveltosCluster>,
    pub profiles: Vec<Profile>,
}

impl Inventory {
    /// Builds an inventory from objects of any kind (each with where it came from, for
    /// messages); kinds other than the three Sveltos ones are ignored.
    pub fn from_objects<'a>(objects: impl IntoIterator<Item = (String, &'a Value)>) -> Result<Inventory, SourceError> {
        let mut inv = Inventory::default();
        for (origin, value) in objects {
            let Some(key) = ObjectKey::of(value) else { continue };
            let parsed = match (key.group.as_str(), key.kind.as_str()) {
                (CLUSTER_GROUP, "SveltosCluster") => parse_cluster(value).map(|c| inv.clusters.push(c)),
                (PROFILE_GROUP, "ClusterProfile") => parse_profile(value, false).map(|p| inv.profiles.push(p)),
                (PROFILE_GROUP, "Profile") => parse_profile(value, true).map(|p| inv.profiles.push(p)),
                _ => Ok(()),
            };
            parsed.map_err(|source| SourceError::Object { origin, source })?;
        }
        inv.clusters.sort_by(|a, b| a.id.cmp(&b.id));
        inv.profiles.sort_by_key(Profile::part_name);
        Ok(inv)
    }
}

/// Objects fetched for rendering, by key. A key that is absent was not found.
#[derive(Debug, Clone, Default)]
pub struct Resources(pub BTreeMap<ObjectKey, Value>);

/// A fetched JSON object as its k8s-openapi type, with the reason when it is not one.
pub fn typed<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, String> {
    T::deserialize(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_ignore_the_version_and_name_the_group() {
        let a = ObjectKey::of(&json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "n"}}));
        assert_eq!(a, Some(ObjectKey::new("apps/v1beta2", "Deployment", "n", "w")));
        assert_eq!(a.unwrap().to_string(), "Deployment.apps n/w");
        assert_eq!(ObjectKey::new("v1", "Namespace", "", "n").to_string(), "Namespace n");
        assert_eq!(ObjectKey::of(&json!({"kind": "X", "metadata": {"name": "n"}})), None);
    }

    #[test]
    fn inventory_names_the_origin_of_a_bad_object() {
        let bad = json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
                         "metadata": {"name": "p"}, "spec": {"tier": "high"}});
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let err =
            Inventory::from_objects([("a.yaml document 1".to_string(), &other), ("b.yaml document 2".to_string(), &bad)]).unwrap_err();
        assert!(matches!(&err, SourceError::Object { origin, .. } if origin == "b.yaml document 2"), "{err}");
    }
}
