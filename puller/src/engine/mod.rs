//! The apply engine: turns a `VerifiedBundle` into live objects and keeps them so.
//!
//! The path follows the data: [`desired`] parses and labels every manifest (no API calls,
//! `manifest`, `defaults`); then [`sync`], [`correct_drift`] and [`plan`] resolve kinds by
//! discovery (`scope`), check the watch-namespaces policy on the whole bundle before any
//! write (`policy`), apply with server-side apply in a safe order (`order`, `apply`),
//! compare with live objects (`drift`, `compare`) and prune by inventory (`prune`). Every
//! API request goes through one counting wrapper (`kube_api`).
//!
//! It knows nothing about stores, state objects, leases or reports: the caller passes the
//! previous inventory and the kinds it learnt (`KnownKind`) in, and persists the new ones,
//! and only when `Outcome::failed()` is false. A drift check runs in two steps
//! ([`check_drift`], then [`DriftCheck::correct`]) so that the caller can take its Lease
//! only when there is something to correct. Entry points: [`desired`], [`sync`],
//! [`check_drift`], [`plan`].

mod apply;
mod compare;
mod defaults;
mod drift;
mod kube_api;
mod manifest;
mod order;
mod plan;
mod policy;
mod prune;
mod scope;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::collections::BTreeMap;
use std::fmt;

use airlock_bundle::{StopMatchingBehavior, SyncMode, VerifiedBundle};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use kube_api::Api;
use scope::Target;

/// One object the bundle wants, parsed and labelled.
#[derive(Debug, Clone)]
pub struct DesiredObject {
    /// Part (profile) name, e.g. `ClusterProfile.web`.
    pub profile: String,
    pub sync_mode: SyncMode,
    pub tier: u32,
    pub stop_matching_behavior: StopMatchingBehavior,
    pub force_conflicts: bool,
    /// Apply rank of the profile from `dependsOn`: 0 without dependencies, else one more
    /// than the highest rank of the profiles it depends on.
    pub wave: u32,
    /// Where it came from in the bundle: file path and document index.
    pub source: String,
    pub id: ObjectId,
    /// The manifest, with Airlock's labels and annotations added.
    pub manifest: Manifest,
    /// SHA-256 hex of the manifest without the per-version annotations: equal hashes mean
    /// an object need not be applied again when only the bundle version moved.
    pub hash: String,
}

/// A manifest kept as compact JSON text. A parsed `Value` costs several times as much
/// memory (a map node per mapping), and a sync holds every manifest of the bundle at once
/// but reads one only to send it or to compare it with its live copy.
#[derive(Debug, Clone)]
pub struct Manifest(Box<RawValue>);

impl Manifest {
    /// The manifest as a JSON value, parsed anew.
    pub fn value(&self) -> Value {
        serde_json::from_str(self.0.get()).expect("a Manifest holds the JSON it was made from")
    }

    /// The JSON text, to send as is.
    pub fn json(&self) -> &RawValue {
        &self.0
    }

    /// Changes the manifest's `metadata` mapping, if it has one.
    pub fn edit_metadata(&mut self, edit: impl FnOnce(&mut Map<String, Value>)) {
        let mut value = self.value();
        if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            edit(metadata);
            *self = Manifest::from(&value);
        }
    }
}

impl From<&Value> for Manifest {
    fn from(value: &Value) -> Manifest {
        Manifest(serde_json::value::to_raw_value(value).expect("a JSON value serialises"))
    }
}

impl From<Value> for Manifest {
    fn from(value: Value) -> Manifest {
        Manifest::from(&value)
    }
}

impl PartialEq for Manifest {
    fn eq(&self, other: &Manifest) -> bool {
        self.0.get() == other.0.get()
    }
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

/// An object's identity without its API version: `apps/v1beta1` and `apps/v1` of the same
/// Deployment are one object, and pruning must not delete what a new version re-applied.
pub(crate) type ObjectKey = (String, String, Option<String>, String);

impl ObjectId {
    pub(crate) fn key(&self) -> ObjectKey {
        (self.group.clone(), self.kind.clone(), self.namespace.clone(), self.name.clone())
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

impl fmt::Display for ObjectId {
    /// `Deployment.apps web/nginx`, `Namespace web`: what kubectl users read.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " {ns}/{}", self.name),
            None => write!(f, " {}", self.name),
        }
    }
}

/// What the puller applied last time, persisted by the caller between runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InventoryEntry {
    pub id: ObjectId,
    pub profile: String,
    /// SHA-256 hex of the applied manifest JSON, to tell unchanged objects apart.
    pub applied_hash: String,
    /// The profile said `stopMatchingBehavior: LeavePolicies`: when the object leaves the
    /// bundle it is released, not deleted. Stored because the profile may be gone by then.
    #[serde(default)]
    pub leave_on_removal: bool,
}

/// How the API server serves a kind, as discovery said when it was last applied: kept by
/// the caller so that the next drift check need not ask again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KnownKind {
    pub api_version: String,
    pub kind: String,
    /// The resource name in URLs, e.g. `deployments`.
    pub plural: String,
    pub namespaced: bool,
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
    /// The puller's own namespace, where the relayed store-credentials Secret may be
    /// written whatever the watch-namespaces (spec 2.6); None: no such exception.
    pub own_namespace: Option<String>,
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
    /// Released from the inventory and left in place (LeavePolicies, or not Airlock's).
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
    /// How the kinds of `inventory` are served, for the next run's [`check_drift`].
    pub kinds: Vec<KnownKind>,
}

impl Outcome {
    /// Whether any object failed: the caller must then not persist the inventory, and the
    /// engine did not prune.
    pub fn failed(&self) -> bool {
        self.results.iter().any(|r| r.action == Action::Failed)
    }
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

/// Results and the new inventory of a run, before they become an [`Outcome`].
type Finished = (Vec<ObjectResult>, Vec<InventoryEntry>);

/// Resolves kinds and applies the watch-namespaces policy: the objects that may be
/// written, and the results of those refused. Read-only, so nothing is written when the
/// policy rejects the bundle.
async fn admit(api: &Api, desired: Vec<DesiredObject>, settings: &Settings) -> Result<(Vec<Target>, Vec<ObjectResult>), EngineError> {
    policy::enforce(scope::resolve(api, desired).await?, settings)
}

fn outcome(api: &Api, (mut results, inventory): Finished, refused: Vec<ObjectResult>) -> Outcome {
    results.extend(refused);
    let kinds: BTreeMap<(String, String), KnownKind> =
        inventory.iter().filter_map(|e| api.learnt(&e.id)).map(|k| ((k.api_version.clone(), k.kind.clone()), k)).collect();
    Outcome { inventory, results, api_requests: api.requests(), kinds: kinds.into_values().collect() }
}

/// Parses every manifest of a verified bundle into desired objects (no API calls).
pub fn desired(bundle: &VerifiedBundle, settings: &Settings) -> Result<Vec<DesiredObject>, EngineError> {
    manifest::desired(bundle, settings)
}

/// Parses and checks every manifest of a verified bundle as [`desired`] does, and lists
/// each object's identity and source (file and document).
pub fn listed(bundle: &VerifiedBundle, settings: &Settings) -> Result<Vec<(ObjectId, String)>, EngineError> {
    manifest::listed(bundle, settings)
}

/// A full sync: policy, apply in order, prune what `previous` had and `desired` lacks.
pub async fn sync(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Outcome, EngineError> {
    let api = Api::new(client, &[]);
    let (targets, refused) = admit(&api, desired, settings).await?;
    Ok(outcome(&api, apply::sync(&api, targets, previous, settings).await?, refused))
}

/// The first step of a drift check for an unchanged bundle: for ContinuousWithDriftDetection
/// profiles, list each kind once (kinds in `known` without discovery) and compare with what
/// was applied. Read-only.
pub async fn check_drift(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    known: &[KnownKind],
    settings: &Settings,
) -> Result<DriftCheck, EngineError> {
    let api = Api::new(client, known);
    let checked = desired.into_iter().filter(|o| o.sync_mode == SyncMode::ContinuousWithDriftDetection).collect();
    let (mut targets, refused) = admit(&api, checked, settings).await?;
    let drifted = drift::detect(&api, &mut targets, settings).await?;
    Ok(DriftCheck { api, targets, drifted, refused })
}

/// What a drift check found, ready to be corrected.
pub struct DriftCheck {
    api: Api,
    targets: Vec<Target>,
    /// Per target: how it drifted, if it did.
    drifted: Vec<Option<String>>,
    refused: Vec<ObjectResult>,
}

impl DriftCheck {
    /// How many objects drifted (changed or deleted): `correct` writes only when some did.
    pub fn found(&self) -> usize {
        self.drifted.iter().filter(|d| d.is_some()).count()
    }

    /// The second step: re-applies only the drifted objects. The inventory is `previous`,
    /// with the re-applied objects' entries.
    pub async fn correct(self, previous: &[InventoryEntry], settings: &Settings) -> Result<Outcome, EngineError> {
        let finished = drift::correct(&self.api, self.targets, self.drifted, previous, settings).await?;
        Ok(outcome(&self.api, finished, self.refused))
    }
}

/// What a sync would do, with field-level diffs from server-side dry-run; writes nothing.
pub async fn plan(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Outcome, EngineError> {
    let api = Api::new(client, &[]);
    let (targets, refused) = admit(&api, desired, settings).await?;
    Ok(outcome(&api, plan::plan(&api, targets, previous, settings).await?, refused))
}
