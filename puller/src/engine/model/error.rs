//! Why a run of the engine stopped: the bundle refused (a manifest unusable, a part setting
//! the puller cannot use, objects outside watch-namespaces), or the API server failing or lacking what the bundle needs. A
//! failure of one object is not an error of the run but a result (`Action::Failed`), and
//! one request's failure is an [`ApiError`].

use std::fmt;

/// Errors that stop a run: before anything is written (every refusal, and discovery),
/// or during a drift check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A manifest in the bundle is unusable (no kind, bad YAML, alias...): a bundle fault.
    #[error("{source_path}: {message}")]
    Manifest { source_path: String, message: String },
    /// A setting of a part that cannot be used (a drift exclusion's regex, selector or
    /// pointer): a bundle fault, found before anything is written.
    #[error("profile {part}: {field}: {message}")]
    Setting { part: String, field: String, message: String },
    /// A definition to evaluate (spec 5.14) whose script or CEL rule does not compile: a
    /// bundle fault, found before anything is written.
    #[error("evaluation {definition}: {field}: {message}")]
    Evaluation { definition: String, field: String, message: String },
    /// Namespaced objects outside watch-namespaces under `reject`, every one listed:
    /// refused by policy.
    #[error("{} object(s) outside watch-namespaces: {}", objects.len(), objects.join(", "))]
    OutsideWatchNamespaces { objects: Vec<String> },
    /// Parts whose tenant ServiceAccount lives outside the watch-namespaces, or in the
    /// puller's own namespace, every one listed: refused by policy (spec 5.12).
    #[error("{} part(s) name a tenant ServiceAccount outside the watch-namespaces: {}", parts.len(), parts.join(", "))]
    TenantOutside { parts: Vec<String> },
    /// The puller may not impersonate a tenant ServiceAccount a part names: nothing is
    /// written, and nothing as the puller instead. The site's RBAC may change, so it is
    /// not a bundle fault.
    #[error("part {part} is applied as ServiceAccount {account}, which fails: {why}")]
    Impersonation { part: String, account: String, why: String },
    /// Live objects the bundle would write that Airlock did not create for this cluster
    /// (not in its inventory, without its `airlock.dev/cluster` label) and whose manifest
    /// does not allow taking them over, every one listed: refused by policy (spec 2.5.4).
    #[error(
        "{} object(s) exist that Airlock did not create for this cluster, and the bundle would take them over: {}; \
         annotate each in the bundle with airlock.dev/adopt: \"true\" to allow it",
        objects.len(),
        objects.join(", ")
    )]
    ForeignObjects { objects: Vec<String> },
    /// The version would prune more of the inventory than the mass-prune guard lets
    /// through unconfirmed (spec 2.5.4): held, nothing written.
    #[error(
        "this version would prune {pruned} of the {inventory} objects in the inventory (more than {percent} %): held; \
         confirm with the bundle's signed allowMassPrune or the puller's --allow-mass-prune"
    )]
    MassPrune { pruned: usize, inventory: usize, percent: usize },
    /// Objects of kinds the API server does not serve and no CRD of the bundle defines,
    /// every one listed. The server may gain the kinds, so it is not a bundle fault.
    #[error(
        "{} object(s) of kinds the API server does not serve and no CRD in the bundle defines: {}",
        objects.len(),
        objects.join(", ")
    )]
    UnservedKinds { objects: Vec<String> },
    /// Discovery of a group-version failed or was refused.
    #[error("discovery of {api_version}: {message}")]
    Discovery { api_version: String, message: String },
    /// Reading an object a reload check digests (a ConfigMap or Secret a workload mounts)
    /// failed or was refused.
    #[error("reading {object}: {error}")]
    Read { object: String, error: ApiError },
    /// The list of a kind that a drift check compares with failed or was refused.
    #[error("listing {api_version} {kind}: {error}")]
    List { api_version: String, kind: String, error: ApiError },
}

impl EngineError {
    /// Whether the bundle itself is refused, by its manifests or by policy: the same
    /// bundle is refused again. The other errors are the API server's, and may pass.
    pub fn is_rejection(&self) -> bool {
        matches!(
            self,
            EngineError::Manifest { .. }
                | EngineError::Setting { .. }
                | EngineError::Evaluation { .. }
                | EngineError::OutsideWatchNamespaces { .. }
                | EngineError::TenantOutside { .. }
                | EngineError::ForeignObjects { .. }
                | EngineError::MassPrune { .. }
        )
    }
}

/// A request the API server refused or that did not reach it (`code` 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: u16,
    pub message: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            0 => write!(f, "{}", self.message),
            code => write!(f, "{} (HTTP {code})", self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bundle_faults_are_rejections() {
        let rejected = [
            EngineError::Manifest { source_path: "p/a.yaml".into(), message: "no kind".into() },
            EngineError::Setting { part: "ClusterProfile.p".into(), field: "driftExclusions[0].target.kind".into(), message: "(".into() },
            EngineError::OutsideWatchNamespaces { objects: vec!["ConfigMap x/y".into()] },
            EngineError::ForeignObjects { objects: vec!["ConfigMap x/y (no airlock.dev/cluster label)".into()] },
            EngineError::MassPrune { pruned: 6, inventory: 10, percent: 50 },
        ];
        assert!(rejected.iter().all(EngineError::is_rejection));
        let retried = [
            EngineError::UnservedKinds { objects: vec!["example.com/v1 Widget a/b".into()] },
            EngineError::Discovery { api_version: "example.com/v1".into(), message: "503".into() },
            EngineError::List {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                error: ApiError { code: 403, message: "forbidden".into() },
            },
        ];
        assert!(!retried.iter().any(EngineError::is_rejection));
        assert_eq!(retried[2].to_string(), "listing v1 ConfigMap: forbidden (HTTP 403)");
    }
}
