//! Which [`StoreError`] a failed registry request becomes: not found, unavailable (retry
//! later), a configuration problem (credentials) or a malformed answer, from the HTTP
//! status, the registry's error codes or the transport's failure. Messages never carry the
//! underlying error's own text, which names URLs whose query may hold upload state.

use oci_client::errors::{OciDistributionError, OciErrorCode};

use crate::error::StoreError;

/// Which [`StoreError`] a failure becomes.
pub(super) enum Class {
    NotFound,
    Unavailable,
    Config,
    Malformed,
}

pub(super) fn status_class(status: u16) -> Class {
    match status {
        404 => Class::NotFound,
        401 | 403 => Class::Config,
        408 | 429 | 500..=599 => Class::Unavailable,
        _ => Class::Malformed,
    }
}

pub(super) fn status_message(status: u16) -> String {
    match status {
        401 | 403 => format!("registry answered HTTP {status}: check the registry credentials"),
        _ => format!("registry answered HTTP {status}"),
    }
}

/// Never the error's own text: reqwest's and oci-client's name the URL, and upload URLs
/// carry state in their query.
pub(super) fn classify(e: &OciDistributionError) -> (Class, String) {
    use OciDistributionError as E;
    match e {
        E::RequestError(e) => request_error(e),
        E::UnauthorizedError { .. } => (Class::Config, status_message(401)),
        E::AuthenticationFailure(_) => (Class::Config, "the registry's token service refused the credentials".into()),
        E::ServerError { code, .. } => (status_class(*code), status_message(*code)),
        E::RegistryError { envelope, .. } => {
            let class = match envelope.errors.first().map(|e| &e.code) {
                Some(OciErrorCode::NameUnknown | OciErrorCode::ManifestUnknown | OciErrorCode::BlobUnknown | OciErrorCode::NotFound) => {
                    Class::NotFound
                }
                Some(OciErrorCode::Unauthorized | OciErrorCode::Denied) => Class::Config,
                Some(OciErrorCode::Toomanyrequests) => Class::Unavailable,
                _ => Class::Malformed,
            };
            let errors: Vec<String> = envelope.errors.iter().map(|e| format!("{:?}: {}", e.code, e.message)).collect();
            (class, format!("registry refused: {}", errors.join("; ")))
        }
        E::IoError(io) if io.get_ref().is_some_and(|inner| inner.is::<oci_client::errors::DigestError>()) => {
            (Class::Malformed, "content does not match its digest".into())
        }
        E::IoError(io) => match io.get_ref().and_then(|inner| inner.downcast_ref::<reqwest::Error>()) {
            Some(e) => request_error(e),
            None => (Class::Unavailable, format!("reading from the registry failed: {}", io.kind())),
        },
        E::DigestError(_) => (Class::Malformed, "content does not match its digest".into()),
        E::SpecViolationError(m) => (Class::Malformed, format!("registry does not follow the distribution spec: {m}")),
        other => (Class::Malformed, other.to_string()),
    }
}

pub(super) fn request_error(e: &reqwest::Error) -> (Class, String) {
    if let Some(status) = e.status() {
        return (status_class(status.as_u16()), status_message(status.as_u16()));
    }
    let mut message = String::from(if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    });
    // The causes (hyper, io) name no URL; the top error does.
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.ends_with(&text) {
            message = format!("{message}: {text}");
        }
        source = cause.source();
    }
    (Class::Unavailable, message)
}

impl Class {
    /// The error of `store` for `what`, in this class.
    pub(super) fn error(self, store: &str, what: String, message: String) -> StoreError {
        let store = store.to_string();
        match self {
            Class::NotFound => StoreError::NotFound { store, what },
            Class::Unavailable => StoreError::Unavailable { store, message: format!("{what}: {message}") },
            Class::Config => StoreError::Config { store, message: format!("{what}: {message}") },
            Class::Malformed => StoreError::Malformed { store, what, message },
        }
    }
}
