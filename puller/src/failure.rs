//! The two ways a puller command fails, kept apart because callers act differently on them
//! (`airlock_cli::exit`): a rejection (exit 3) will be refused again with the same input,
//! an error (exit 1) may go away on the next run. Stages return their own error types;
//! this module only sorts them into the two classes.

use airlock_cli::exit;
use airlock_cli::lease::LeaseError;
use airlock_store::FetchError;

use crate::engine::EngineError;
use crate::state::StateError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Refused by verification or policy.
    Rejected(String),
    /// A store, the cluster or the run itself failed.
    Error(String),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Rejected(_) => exit::REJECTED,
            Failure::Error(_) => exit::ERROR,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Failure::Rejected(m) | Failure::Error(m) => m,
        }
    }
}

impl From<FetchError> for Failure {
    fn from(e: FetchError) -> Failure {
        match e {
            FetchError::Rejected { .. } => Failure::Rejected(e.to_string()),
            FetchError::Store(_) => Failure::Error(e.to_string()),
        }
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Failure {
        match e {
            EngineError::Manifest { .. } | EngineError::OutsideWatchNamespaces { .. } => Failure::Rejected(e.to_string()),
            // Api, and any kind of engine error added later: retried, not refused for good.
            _ => Failure::Error(e.to_string()),
        }
    }
}

impl From<StateError> for Failure {
    fn from(e: StateError) -> Failure {
        Failure::Error(e.to_string())
    }
}

impl From<LeaseError> for Failure {
    fn from(e: LeaseError) -> Failure {
        Failure::Error(match e {
            LeaseError::Held { lease, holder, until } => {
                format!("another puller holds the lease {lease} ({holder}, until {until}); not syncing")
            }
            LeaseError::NoNamespace { namespace, .. } => {
                format!("state namespace {namespace} does not exist; registration creates it")
            }
            other => other.to_string(),
        })
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::Error(format!("{e:#}"))
    }
}
