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

/// A failed fetch of `url`, named without its user information, query or fragment, which
/// libgit2's own message may quote too: the message lands in a signed statement that any
/// reader of the store sees.
pub(super) fn fetch_error(origin: &str, url: &str, message: &str) -> KustomizeError {
    KustomizeError::Fetch { origin: origin.into(), url: crate::redact::redact(url), message: crate::redact::scrub(message, url) }
}

pub(super) fn io_error(path: &std::path::Path, err: impl std::fmt::Display) -> KustomizeError {
    KustomizeError::Io { path: path.display().to_string(), message: err.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetch_error_names_the_url_without_its_credentials() {
        let url = "https://ops:s3cret@git.example/fleet.git?token=t0k";
        let quoted = format!("failed to resolve address for {url}: ops:s3cret rejected");
        let err = fetch_error("ClusterProfile/web", url, &quoted).to_string();
        assert!(!err.contains("s3cret") && !err.contains("t0k") && !err.contains("ops:"), "{err}");
        assert!(err.starts_with("ClusterProfile/web: git fetch of https://git.example/fleet.git: "), "{err}");
        let plain = fetch_error("o", "http://127.0.0.1:1/x.git", "connection refused").to_string();
        assert_eq!(plain, "o: git fetch of http://127.0.0.1:1/x.git: connection refused");
    }
}
