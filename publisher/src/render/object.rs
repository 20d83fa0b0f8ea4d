//! One object of a profile as a bundle takes it: its key, where it came from (for
//! messages and conflicts), its YAML, whether it is an implicit Namespace, and whether it
//! is sealed for a cluster that decrypts. `shared`
//! prepares them, `credentials` adds one, `tier` picks among copies, and `assemble` writes
//! them into parts.

use std::sync::Arc;

use crate::sources::ObjectKey;

/// One object of a profile, labelled and written as a YAML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub key: ObjectKey,
    /// `ClusterProfile/web: ConfigMap default/web key deploy.yaml document 2`.
    pub origin: String,
    pub yaml: Arc<str>,
    /// A create-only Namespace the publisher added for the namespaced objects of a
    /// profile (`namespaces`): any one copy of it does, and a deployed one does better.
    pub implicit: bool,
    /// Sealed for a cluster with an age recipient (`seal`): a `v1` `Secret`, or an object
    /// of a source marked `airlock.dev/confidential`.
    pub confidential: bool,
}
