//! Why a kustomization could not be built. Every variant names the kustomizationRef it is
//! about (`origin`: the profile and the referenced source) so one failed build among a
//! fleet's is found from the message alone.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KustomizeError {
    #[error("kubectl not found: {searched} (pass --kubectl PATH)")]
    KubectlNotFound { searched: String },
    #[error("{path}: not a usable kubectl: {message}")]
    KubectlUnusable { path: String, message: String },
    /// The referenced object or repository does not hold a usable source tree.
    #[error("{origin}: {message}")]
    Source { origin: String, message: String },
    /// A source kind or field this builder does not implement; refused, never ignored.
    #[error("{origin}: {field} is not supported: {reason}")]
    Unsupported { origin: String, field: String, reason: String },
    /// The Git repository could not be fetched: retry next run.
    #[error("{origin}: git fetch of {url}: {message}")]
    Fetch { origin: String, url: String, message: String },
    /// A kustomization names a file outside the source tree, an absolute path or a URL.
    #[error("{origin}: {file}: {field} entry {entry:?} {reason}")]
    Escape { origin: String, file: String, field: String, entry: String, reason: String },
    /// `kubectl kustomize` refused the kustomization.
    #[error("{origin}: kustomize build of {path:?} failed: {message}")]
    Build { origin: String, path: String, message: String },
    /// What kustomize printed, or an object after substitution, is not a Kubernetes object.
    #[error("{origin}: {message}")]
    Manifest { origin: String, message: String },
    /// Instantiating an object with the ref's values failed (the template engine's message).
    #[error("{origin}: {object}: {message}")]
    Substitution { origin: String, object: String, message: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

pub(super) fn io_error(path: &std::path::Path, err: impl std::fmt::Display) -> KustomizeError {
    KustomizeError::Io { path: path.display().to_string(), message: err.to_string() }
}
