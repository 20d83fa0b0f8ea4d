//! Why a cluster's bundle could not be rendered: the cluster fails with it, and the run
//! goes on with the others.

use airlock_bundle::content::ContentError;

use crate::sveltos::model::MANIFEST_SECRET_TYPE;

/// Why a cluster's bundle could not be rendered. The cluster fails; others go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    #[error("{profile}: {object} not found")]
    Missing { profile: String, object: String },
    #[error("{object}: Secret type {actual:?} holds no manifests (Sveltos deploys only Secrets of type {MANIFEST_SECRET_TYPE})")]
    NotManifests { object: String, actual: String },
    #[error("{object}: {message}")]
    Unreadable { object: String, message: String },
    /// The template engine's message, which names the profile, resource, key and line.
    #[error("{0}")]
    Template(String),
    #[error("{origin}: {message}")]
    Manifest { origin: String, message: String },
    #[error("{object}: no valid bundle path: {message}")]
    Path { object: String, message: String },
    #[error("conflict: {object} is deployed at tier {tier} by {}; give one of them a lower tier", origins.join(" and by "))]
    Conflict { object: String, tier: u32, origins: Vec<String> },
    /// Store credentials to relay (spec 2.6) that are missing, malformed or expired.
    #[error("{object}: {message}")]
    Credentials { object: String, message: String },
    #[error("dependsOn has a cycle through {part}")]
    DependencyCycle { part: String },
    #[error("bundle: {0}")]
    Content(#[from] ContentError),
}
