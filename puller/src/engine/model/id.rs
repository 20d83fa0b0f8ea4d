//! The identity of a Kubernetes object, as the engine names it in results, inventories
//! and drift exclusion targets: group, version, kind, namespace and name, and the key
//! without the version that tells two apiVersions of one object apart from two objects.
//! Plain data; no I/O.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Identity of a live object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectId {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// None for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

/// An object's identity without its API version: `apps/v1beta1` and `apps/v1` of the same
/// Deployment are one object, and pruning must not delete what a new version re-applied.
pub(crate) type ObjectKey = (String, String, Option<String>, String);

impl ObjectId {
    pub(crate) fn key(&self) -> ObjectKey {
        (self.group.clone(), self.kind.clone(), self.namespace.clone(), self.name.clone())
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

impl fmt::Display for ObjectId {
    /// `Deployment.apps web/nginx`, `Namespace web`: what kubectl users read.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " {ns}/{}", self.name),
            None => write!(f, " {}", self.name),
        }
    }
}
