//! What a source could not read, and what that touches: a profile, a cluster, another
//! object (a ConfigMap defined twice), or nothing the publisher can tell, as with a
//! document no parser understood. One broken object fails only what it touches; the
//! publish goes on with the rest and says what it could not read.

use airlock_bundle::ClusterId;

use super::key::ObjectKey;

/// An object (or a piece of a file) that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Broken {
    /// Where it was: `mgmt/profiles.yaml document 3`, or `management cluster ...`.
    pub origin: String,
    pub what: Touches,
    /// Why, naming the object and the field where there is one.
    pub message: String,
}

/// What a broken object touches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Touches {
    /// A profile: every cluster keeps what it holds of its part.
    Profile { part: String, display: String },
    /// A cluster: it is not published for.
    Cluster(ClusterId),
    /// Another object: the profiles referencing it fail.
    Object(ObjectKey),
    /// Nothing identifiable: any profile may have been in it.
    Unknown,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}
