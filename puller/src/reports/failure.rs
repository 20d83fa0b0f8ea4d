//! Why a puller command failed, sorted into the two classes its caller acts on
//! (`airlock_cli::exit`): a rejection (exit 3) is refused again with the same input; any
//! other failure (exit 1) may pass on the next run, or once an operator fixed what it names.
//!
//! Each variant names what failed. The stages' own errors are kept whole inside, so the
//! class, the exit code and a report's result are read from their types, never from their
//! text; the text is theirs. This module decides nothing else.

use std::path::PathBuf;

use airlock_bundle::cluster::BadClusterId;
use airlock_cli::exit;
use airlock_cli::lease::LeaseError;
use airlock_store::StoreError;
use airlock_store::StoreRef;
use airlock_store::mirror::MirrorError;

use crate::engine::{EngineError, ObjectId};
use crate::kept::error::{StateError, Unreadable};
use crate::source::SourceError;
use crate::trusted::TrustError;

use super::files::ExportReportsError;

/// Why a command failed. Not `PartialEq`: an import's [`MirrorError`] is not.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// Flags, or the files they name, that cannot be used.
    #[error("{0}")]
    Settings(String),
    /// No client for the cluster: no kubeconfig, or one that does not load.
    #[error("Kubernetes client: {0}")]
    KubeClient(String),
    /// `run` could not start serving: its client or its metrics address.
    #[error("{0}")]
    Start(String),
    /// Fetching or verifying the bundle.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The keyring to verify with: older than the state records.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The bundle's manifests, the policy, or the API server during the apply.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The state, the inventory or the kept report.
    #[error(transparent)]
    State(#[from] StateError),
    /// The sync Lease: held by another puller, or not to be had.
    #[error("{}", lease_message(.0))]
    Lease(#[from] LeaseError),
    /// Another puller recorded a bundle between this run's first read of the state and
    /// its Lease.
    #[error("the state changed before the apply (another puller?); nothing was applied, the next run retries")]
    StateChangedBeforeApply,
    /// As [`Failure::StateChangedBeforeApply`], for a drift correction.
    #[error("the state changed during the drift check (another puller?); nothing was corrected, the next run checks again")]
    StateChangedDuringDriftCheck,
    /// As [`Failure::StateChangedBeforeApply`], for the reloader's restarts (spec 5.10).
    #[error("the state changed during the reload check (another puller?); nothing was restarted, the next run checks again")]
    StateChangedDuringReloadCheck,
    /// The Lease expired before the apply was recorded.
    #[error("lost the lease during the apply; nothing was recorded")]
    LeaseLost,
    /// SIGTERM or SIGINT during the apply.
    #[error("stopped by a signal during the apply; nothing was recorded")]
    Stopped,
    /// Objects the API server refused, or could not be reached for; nothing was recorded.
    #[error("{} object(s) failed to apply: {}", objects.len(), list(objects))]
    ObjectsFailed { objects: Vec<ObjectId> },
    /// Checks of parts that did not pass (spec 5.11): what applied stays, nothing was
    /// recorded, and the next run applies and checks again.
    #[error("{} check(s) did not pass: {}", checks.len(), checks.join("; "))]
    ChecksFailed { checks: Vec<String> },
    /// `verify --state`: the file is not a state.
    #[error("state file {}: {reason}", path.display())]
    StateFile { path: PathBuf, reason: Unreadable },
    /// `verify --state`: the state names no cluster id.
    #[error("state: {0}")]
    StateCluster(BadClusterId),
    /// `verify` of a store without a bundle.
    #[error("{store}: holds no bundles")]
    NoBundles { store: String },
    /// `verify --floor`: the bundle is older.
    #[error("rollback: version {version} is older than --floor {floor}")]
    BelowFloor { version: u64, floor: u64 },
    /// `import --to`: the store cannot be opened.
    #[error("--to: {0}")]
    ImportTarget(StoreError),
    /// `import`: the mirror refused the archive or could not write it (boxed, as the
    /// largest of these).
    #[error("import of {} into {}: {source}", archive.display(), to.shown())]
    Import { archive: PathBuf, to: Box<StoreRef>, source: Box<MirrorError> },
    #[error(transparent)]
    ExportReports(#[from] ExportReportsError),
}

impl Failure {
    /// Whether the same input is refused again: a bundle that verification or policy
    /// refuses, or an archive that would put an older version over a newer one.
    pub fn is_rejection(&self) -> bool {
        match self {
            Failure::Source(e) => e.is_rejection(),
            Failure::Engine(e) => e.is_rejection(),
            Failure::BelowFloor { .. } | Failure::Trust(_) => true,
            Failure::Import { source, .. } => source.is_rejection(),
            _ => false,
        }
    }

    /// The documented exit code.
    pub fn exit_code(&self) -> u8 {
        if self.is_rejection() { exit::REJECTED } else { exit::ERROR }
    }
}

/// Settings are checked with `anyhow` contexts, which name the flag and the file.
impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::Settings(format!("{e:#}"))
    }
}

/// The Lease's errors, told as a puller operator reads them.
fn lease_message(e: &LeaseError) -> String {
    match e {
        LeaseError::Held { lease, holder, until } => {
            format!("another puller holds the lease {lease} ({holder}, until {until}); not syncing")
        }
        LeaseError::NoNamespace { namespace, .. } => format!("state namespace {namespace} does not exist; registration creates it"),
        other => other.to_string(),
    }
}

fn list(objects: &[ObjectId]) -> String {
    objects.iter().map(ObjectId::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::VerifyError;
    use airlock_store::FetchError;

    #[test]
    fn exit_codes_follow_the_class_not_the_text() {
        let refused = FetchError::Rejected {
            store: "oci-layout:/x".into(),
            cluster: "fleet/edge-1".into(),
            source: VerifyError::Rollback { version: 1, floor: 2 },
        };
        let rejections = [
            Failure::Source(SourceError::from(refused)),
            Failure::Engine(EngineError::OutsideWatchNamespaces { objects: vec!["ConfigMap a/b".into()] }),
            Failure::BelowFloor { version: 3, floor: 4 },
            Failure::Trust(TrustError::KeyringBelowState { recorded: 3, derived: 1 }),
        ];
        for f in &rejections {
            assert_eq!(f.exit_code(), exit::REJECTED, "{f}");
        }
        let errors = [
            Failure::Settings("rollback: a setting that says rollback".into()),
            Failure::Engine(EngineError::UnservedKinds { objects: vec!["example.com/v1 Widget a/b".into()] }),
            Failure::State(StateError::Conflict { secret: "ns/airlock-state-edge-1".into() }),
            Failure::StateChangedBeforeApply,
            Failure::LeaseLost,
        ];
        for f in &errors {
            assert_eq!(f.exit_code(), exit::ERROR, "{f}");
        }
    }

    #[test]
    fn lease_failures_say_what_the_puller_does() {
        let held = LeaseError::Held { lease: "ns/airlock-puller-edge-1".into(), holder: "pod-a".into(), until: "then".into() };
        assert_eq!(
            Failure::from(held).to_string(),
            "another puller holds the lease ns/airlock-puller-edge-1 (pod-a, until then); not syncing"
        );
        let missing = LeaseError::NoNamespace { lease: "ns/airlock-puller-edge-1".into(), namespace: "ns".into() };
        assert_eq!(Failure::from(missing).to_string(), "state namespace ns does not exist; registration creates it");
    }
}
