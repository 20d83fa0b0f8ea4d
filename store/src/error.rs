//! Why a store could not do what was asked, in the three classes callers act on
//! differently (not found, unavailable, malformed or misconfigured), plus the oversized
//! envelope that verification turns into a rejection.

/// Why a store could not do what was asked. The three classes are kept apart because
/// callers act differently on them (see `docs/operations.md`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum StoreError {
    /// The store holds nothing for this cluster (or this part).
    #[error("{store}: {what} not found")]
    NotFound { store: String, what: String },
    /// The store could not be reached or answered with a server error: retry later.
    #[error("{store}: unavailable: {message}")]
    Unavailable { store: String, message: String },
    /// The store answered, but what it holds is malformed or over a limit.
    #[error("{store}: {what}: {message}")]
    Malformed { store: String, what: String, message: String },
    /// The store holds an envelope over the cap of spec 8.1. Found from its size before
    /// reading it; [`fetch_verified`](crate::fetch_verified) turns it into the verification rejection it is.
    #[error("{store}: envelope of {cluster} is {size} bytes, over the limit of {limit}")]
    EnvelopeTooLarge { store: String, cluster: String, size: u64, limit: u64 },
    /// The store holds a keyring chain over its cap (spec 10), found from its size before
    /// reading it; a verification rejection (spec 8.3) as an oversized envelope is.
    #[error("{store}: keyring chain of {cluster} is {size} bytes, over the limit of {limit}")]
    KeyringChainTooLarge { store: String, cluster: String, size: u64, limit: u64 },
    /// A store reference that cannot be parsed, or a store that cannot be opened or
    /// written (permissions, credentials).
    #[error("{store}: {message}")]
    Config { store: String, message: String },
}
