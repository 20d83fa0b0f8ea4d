//! The objects the engine works on: a desired object as the bundle states it (parsed,
//! labelled, hashed), and what the caller keeps of it between runs (its inventory entry,
//! how its kind is served). Its identity is `id`'s. Plain data; no I/O.

use std::collections::BTreeSet;
use std::sync::Arc;

use airlock_bundle::statement::ServiceAccountRef;
use airlock_bundle::{StopMatchingBehavior, SyncMode};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::exclusion::Exclusions;
use super::helm::{CleanupOnFail, Hook, Wait};
pub use crate::engine::model::id::ObjectId;
pub(crate) use crate::engine::model::id::ObjectKey;

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
    /// What its part asks of its objects as a group: stop or go on after a refusal, the
    /// parts it waits for, the fields drift ignores.
    pub rules: Arc<PartRules>,
    /// Annotated `airlock.dev/create-only: "true"` (spec 2.5.1): created when absent,
    /// otherwise never written, and never in the inventory.
    pub create_only: bool,
    /// Annotated `airlock.dev/adopt: "true"`: it may take over a live object of the same
    /// name that Airlock did not create for this cluster, which is then never pruned.
    pub adopt: bool,
    /// Deleted and created again when its update is refused in a way only that resolves
    /// (spec 2.5.2): its policyRef says `force`, or it carries Sveltos's annotation.
    pub force_recreate: bool,
    /// Annotated `projectsveltos.io/driftDetectionIgnore` (any value): never compared with
    /// its live copy, so never corrected; a changed manifest is applied as usual (spec 5.8).
    pub drift_ignored: bool,
    /// The Helm release it belongs to, `<namespace>/<name>`, from its release labels (spec
    /// 2.5.3).
    pub release: Option<String>,
    /// Its hook annotations, when it is one of its release's hooks: fired only when the
    /// release is installed or upgraded, never compared for drift, never pruned.
    pub hook: Option<Hook>,
    /// Waited for until ready after it was applied, before its release's post- hooks
    /// (`airlock.dev/helm-wait`).
    pub wait: Option<Wait>,
    /// Which failed operations of its release delete it when they created it
    /// (`airlock.dev/helm-cleanup-on-fail`).
    pub cleanup_on_fail: CleanupOnFail,
    /// How its dependents go when it is pruned (`airlock.dev/helm-deletion-propagation`).
    pub propagation: Option<Propagation>,
    /// Where it came from in the bundle: file path and document index.
    pub source: String,
    /// Read from an encrypted file (spec 2.7): its results, and the checks that judge it,
    /// show no more of it than of a `Secret`, and no log quotes an error about it.
    pub sealed: bool,
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
    /// The Helm release it belongs to, `<namespace>/<name>`: tells an install of the release
    /// from an upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// A hook of that release: left in place when it leaves the bundle, as Helm leaves hooks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hook: bool,
    /// How its dependents go when it is pruned, when its release says
    /// (`airlock.dev/helm-deletion-propagation`); background otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation: Option<Propagation>,
    /// It existed, not Airlock's, when it was first applied, and its manifest allowed the
    /// takeover (`airlock.dev/adopt`): when it leaves the bundle it is released, never
    /// deleted, as it and what depends on it (a CRD's instances) were there before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
    /// The tenant its part was applied as: it is pruned or released as that tenant too,
    /// though the part may be gone from the bundle by then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountRef>,
}

/// A release's deletion propagation, recorded in the inventory with each of its objects:
/// the bundle that uninstalls a release no longer holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
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

/// One part's rules, shared by its objects.
#[derive(Debug, Clone, Default)]
pub struct PartRules {
    /// `continueOnError`: a refused object does not stop the part's other objects.
    pub continue_on_error: bool,
    /// Every part this one depends on, directly or through others.
    pub requires: BTreeSet<String>,
    pub exclusions: Exclusions,
    /// `reloader`: its workloads restart when what they mount changes (spec 5.10).
    pub reloader: bool,
    /// The tenant every write of the part impersonates (spec 5.3); None: the puller.
    pub service_account: Option<ServiceAccountRef>,
}
