//! INTERFACE SKELETON written by the lead: the apply engine's public API, which the
//! engine's author fills in (and may extend) and the CLI's author calls. Bodies are
//! todo!() until then; replace this comment with the module's real `//!` doc.
//!
//! The engine turns a `VerifiedBundle` into live objects: parse manifests, check policy
//! on the whole bundle, apply with server-side apply in a safe order, prune by inventory,
//! detect drift. It knows nothing about stores, state objects, leases or reports: the
//! caller passes the previous inventory in and persists the new one.

use airlock::bundle::{StopMatchingBehavior, SyncMode, VerifiedBundle};
use serde::{Deserialize, Serialize};

/// One object the bundle wants, parsed and labelled.
#[derive(Debug, Clone)]
pub struct DesiredObject {
    /// Part (profile) name, e.g. `ClusterProfile.web`.
    pub profile: String,
    pub sync_mode: SyncMode,
    pub tier: u32,
    pub stop_matching_behavior: StopMatchingBehavior,
    pub force_conflicts: bool,
    /// Where it came from in the bundle: file path and document index.
    pub source: String,
    pub id: ObjectId,
    /// The manifest as JSON, with Airlock's labels and annotations added.
    pub manifest: serde_json::Value,
}

/// Identity of a live object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectId {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// None for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

/// What the puller applied last time, persisted by the caller between runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InventoryEntry {
    pub id: ObjectId,
    pub profile: String,
    /// SHA-256 hex of the applied manifest JSON, to tell unchanged objects apart.
    pub applied_hash: String,
}

/// How the puller restricts namespaced objects (issue 4, step 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum NamespacePolicy {
    /// Refuse the whole bundle when any namespaced object is outside the list.
    #[default]
    Reject,
    /// Drop those objects, report them, apply the rest.
    Filter,
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// `<namespace>/<name>` of this cluster, for labels.
    pub cluster: String,
    /// Effective watch-namespaces (local setting narrowed by the bundle's); None = all.
    pub watch_namespaces: Option<Vec<String>>,
    pub namespace_policy: NamespacePolicy,
    /// Server-side dry-run: nothing is written.
    pub dry_run: bool,
    /// Requests in flight at once.
    pub concurrency: usize,
}

/// What happened to one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectResult {
    pub id: ObjectId,
    pub profile: String,
    pub action: Action,
    /// Field-level diff or error text, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Created,
    Configured,
    Unchanged,
    Pruned,
    /// Released from the inventory and left in place (LeavePolicies).
    Left,
    DriftCorrected,
    /// DryRun profiles and --dry-run: what would change.
    WouldCreate,
    WouldConfigure,
    WouldPrune,
    /// Refused by namespace policy (filter mode).
    Refused,
    Failed,
}

/// The result of a run of the engine.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The inventory to persist (only meaningful when `failed()` is false).
    pub inventory: Vec<InventoryEntry>,
    pub results: Vec<ObjectResult>,
    /// API requests the engine made, counted by the client.
    pub api_requests: u64,
}

/// Errors that stop a run before anything is written (rejections) or during it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A manifest in the bundle is unusable (no kind, bad YAML, alias...): a rejection.
    #[error("{source_path}: {message}")]
    Manifest { source_path: String, message: String },
    /// Namespaced objects outside watch-namespaces under `reject`: a rejection listing all.
    #[error("{} object(s) outside watch-namespaces: {}", objects.len(), objects.join(", "))]
    OutsideWatchNamespaces { objects: Vec<String> },
    /// The API server failed or refused a request: retry next run.
    #[error("{0}")]
    Api(String),
}

/// Parses every manifest of a verified bundle into desired objects (no API calls).
pub fn desired(bundle: &VerifiedBundle, settings: &Settings) -> Result<Vec<DesiredObject>, EngineError> {
    let _ = (bundle, settings);
    todo!()
}

/// A full sync: policy, apply in order, prune what `previous` had and `desired` lacks.
pub async fn sync(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Outcome, EngineError> {
    let _ = (client, desired, previous, settings);
    todo!()
}

/// Drift check for an unchanged bundle: for ContinuousWithDriftDetection profiles, list
/// each kind once, compare with what was applied, re-apply only drifted or deleted objects.
pub async fn correct_drift(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Outcome, EngineError> {
    let _ = (client, desired, previous, settings);
    todo!()
}

/// What a sync would do, with field-level diffs from server-side dry-run; writes nothing.
pub async fn plan(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Outcome, EngineError> {
    let _ = (client, desired, previous, settings);
    todo!()
}
