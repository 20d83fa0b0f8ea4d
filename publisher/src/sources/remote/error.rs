//! Why a `remoteURL` could not be fetched or read. Every variant names the URL as
//! messages show it (without user, query or fragment), never a credential.

/// What went wrong with one `remoteURL`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The server answered 404: the reference is missing, as a ConfigMap can be.
    #[error("{url}: not found (HTTP 404)")]
    NotFound { url: String },
    #[error("{url}: HTTP status {status}")]
    Status { url: String, status: u16 },
    /// Connecting, TLS, a timeout: the next run may succeed.
    #[error("{url}: unavailable: {message}")]
    Unavailable { url: String, message: String },
    #[error("{url}: {what} is larger than the limit of {limit} bytes")]
    TooLarge { url: String, what: String, limit: u64 },
    #[error("{url}: more than {limit} {what}")]
    TooMany { url: String, what: String, limit: usize },
    #[error("{url}: {what}: {message}")]
    Malformed { url: String, what: String, message: String },
    #[error("{url}: {what} has digest {actual}, the manifest says {expected}")]
    DigestMismatch { url: String, what: String, expected: String, actual: String },
    #[error("{url}: secretRef {secret}: {message}")]
    Credentials { url: String, secret: String, message: String },
}
