//! Why a profile could not be rendered for a cluster (the profile fails alone and the
//! others go on), or why a cluster's bundle could not be assembled at all (the cluster
//! fails and the run goes on with the others).

use airlock_bundle::content::ContentError;
use airlock_bundle::vocabulary::{PLAINTEXT_SECRETS_ALLOW, PLAINTEXT_SECRETS_ANNOTATION};

use crate::render::kustomize::KustomizeError;
use crate::sources::model::MANIFEST_SECRET_TYPE;
use crate::sources::{Lookup, ObjectKey, Resources};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// Found before anything was read: a name template, a reference outside a Profile's
    /// namespace, a prerequisite that does not exist.
    #[error("{profile}: {message}")]
    Profile { profile: String, message: String },
    #[error("{profile}: {field}: {object} not found")]
    Missing { profile: String, field: String, object: String },
    #[error("{object}: Secret type {actual:?} holds no manifests (Sveltos deploys only Secrets of type {MANIFEST_SECRET_TYPE})")]
    NotManifests { object: String, actual: String },
    #[error("{object}: {message}")]
    Unreadable { object: String, message: String },
    /// An annotation of a referenced object with a value the publisher does not know.
    #[error("{object}: annotation {annotation}: {message}")]
    Annotation { object: String, annotation: String, message: String },
    /// A `remoteURL` that could not be fetched; the message names the URL.
    #[error("{profile}: {field}: remoteURL {message}")]
    Remote { profile: String, field: String, message: String },
    /// The template engine's message, which names the profile, resource, key and line.
    #[error("{0}")]
    Template(String),
    /// The Lua module's message, which names the profile, resource, key and line.
    #[error("{0}")]
    Lua(String),
    /// The patch module's message, which names the patch and the object.
    #[error("{0}")]
    Patch(String),
    #[error("{origin}: {message}")]
    Manifest { origin: String, message: String },
    #[error("{object}: no valid bundle path: {message}")]
    Path { object: String, message: String },
    /// Two references of one profile deploy one object at one tier.
    #[error("conflict: {object} is deployed at tier {tier} by {}; give one of them a lower tier", origins.join(" and by "))]
    Conflict { object: String, tier: u32, origins: Vec<String> },
    /// Store credentials to relay (spec 2.6) that are missing, malformed or expired.
    #[error("{object}: {message}")]
    Credentials { object: String, message: String },
    /// The cluster's files to encrypt could not be (spec 2.7).
    #[error("{cluster}: cannot encrypt the bundle's confidential files: {message}")]
    Seal { cluster: String, message: String },
    /// Something that would be sealed for a cluster with an age recipient (a `Secret`, an
    /// object of a confidential source, relayed store credentials), for a cluster that has
    /// none and does not allow Secrets in clear (spec 2.7): it never reaches a store.
    #[error(
        "{cluster}: {what} would be stored in clear: the cluster has no age recipient; register it \
         (airlock-publisher register cluster ...) to encrypt it, or annotate its SveltosCluster \
         {PLAINTEXT_SECRETS_ANNOTATION}: {PLAINTEXT_SECRETS_ALLOW} to publish it in clear"
    )]
    Clear { cluster: String, what: String },
    #[error("dependsOn has a cycle through {part}")]
    DependencyCycle { part: String },
    /// The store's bundle, whose parts this one keeps, could not be read: publishing
    /// without them would empty those parts.
    #[error("{cluster}: the stored bundle cannot be read to keep parts of it, so the cluster is not published: {message}")]
    StoredBundle { cluster: String, message: String },
    /// A `helmCharts` entry that could not be rendered; the message names the chart.
    #[error("{profile}: {field}: {message}")]
    Helm { profile: String, field: String, message: String },
    /// The kustomize module's message, which names the profile, reference and source.
    #[error("{0}")]
    Kustomize(#[from] KustomizeError),
    #[error("bundle: {0}")]
    Content(#[from] ContentError),
}

/// The object at `key`: `None` for an optional one that is missing (with a warning).
/// `what` names the field and the object, for messages only.
pub(super) fn lookup<'r>(
    resources: &'r Resources,
    key: &ObjectKey,
    optional: bool,
    profile: &str,
    what: &dyn Fn() -> (String, String),
    warnings: &mut Vec<String>,
) -> Result<Option<&'r Value>, RenderError> {
    match resources.lookup(key) {
        Lookup::Found(value) => Ok(Some(value)),
        Lookup::Missing if optional => {
            let (field, object) = what();
            warnings.push(format!("{profile}: {field}: optional {object} not found; skipped"));
            Ok(None)
        }
        Lookup::Missing => {
            let (field, object) = what();
            Err(RenderError::Missing { profile: profile.to_string(), field, object })
        }
        Lookup::Failed(why) => Err(RenderError::Unreadable { object: what().1, message: why.to_string() }),
    }
}
