//! What a run of the engine reports: one result per object, with the action taken and its
//! detail, and the inventory and kinds the caller persists when nothing failed.

use serde::{Deserialize, Serialize};

use crate::engine::model::error::EngineError;
use crate::engine::model::object::{InventoryEntry, KnownKind, ObjectId};

/// What happened to one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectResult {
    pub id: ObjectId,
    pub profile: String,
    pub action: Action,
    /// Field-level diff or error text, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Of an object read from an encrypted file: its detail is withheld wherever the
    /// result is shown (`report::redacted`). Never serialized: only a run knows it.
    #[serde(skip)]
    pub sealed: bool,
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
    /// Deleted and created again: its update was refused in a way only that resolves, and
    /// it is marked for recreation (spec 2.5.2). The detail says what was refused.
    Recreated,
    /// Rolled out again: a ConfigMap or Secret it mounts changed since the last run, and
    /// its part asks for the reloader (spec 5.10).
    Restarted,
    /// DryRun profiles and --dry-run: what would change.
    WouldCreate,
    WouldConfigure,
    WouldPrune,
    /// Refused by namespace policy (filter mode).
    Refused,
    Failed,
    /// Not sent this run, and left as it is: its part, or one it depends on, was refused
    /// or is held back (spec 5.7). The detail says which.
    Skipped,
}

/// The result of a run of the engine.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The inventory to persist (only meaningful when `failed()` is false).
    pub inventory: Vec<InventoryEntry>,
    pub results: Vec<ObjectResult>,
    /// API requests the engine made, counted by the client.
    pub api_requests: u64,
    /// How the kinds of `inventory` are served, for the next run's [`check_drift`](crate::engine::check_drift).
    pub kinds: Vec<KnownKind>,
}

impl Outcome {
    /// Whether any object failed: the caller must then not persist the inventory, and the
    /// engine did not prune.
    pub fn failed(&self) -> bool {
        self.results.iter().any(|r| r.action == Action::Failed)
    }
}

/// What a plan found: what a sync would do, and the rejection it would stop at before its
/// first write (objects it would take over, a mass prune it would hold), if it would.
#[derive(Debug)]
pub struct Plan {
    pub outcome: Outcome,
    pub refusal: Option<EngineError>,
}

/// Results and the new inventory of a run, before they become an [`Outcome`].
pub(crate) type Finished = (Vec<ObjectResult>, Vec<InventoryEntry>);
