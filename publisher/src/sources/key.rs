//! How rendering names the objects it reads: an [`ObjectKey`] (group, kind, namespace,
//! name) and the [`Reference`] that asks a source for one in an API version.

use std::fmt;

use serde_json::Value;

/// The identity of a Kubernetes object: API group (not version), kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
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

    /// Orders keys as the objects they deploy: a namespace left out is `default`, where
    /// the API server puts a namespaced object written without one. A cluster-scoped kind
    /// has no namespace in any of its objects, so this never joins two of them.
    pub fn cmp_deployed(&self, other: &ObjectKey) -> std::cmp::Ordering {
        (&self.group, &self.kind, self.deployed_namespace(), &self.name).cmp(&(
            &other.group,
            &other.kind,
            other.deployed_namespace(),
            &other.name,
        ))
    }

    /// Whether two keys name the object one deploys ([`cmp_deployed`](Self::cmp_deployed)).
    pub fn same_deployed(&self, other: &ObjectKey) -> bool {
        self.cmp_deployed(other).is_eq()
    }

    /// This key with the namespace it deploys to ([`cmp_deployed`](Self::cmp_deployed)).
    pub fn deployed(&self) -> ObjectKey {
        ObjectKey { namespace: self.deployed_namespace().to_string(), ..self.clone() }
    }

    fn deployed_namespace(&self) -> &str {
        if self.namespace.is_empty() { "default" } else { &self.namespace }
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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Reference {
    pub key: ObjectKey,
    pub api_version: String,
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
}
