//! The state and inventory Secrets of one cluster as a pair: the state read alone by every
//! run, the inventory read only by a run that will write (an apply, `plan`), and both
//! written together once an apply fully succeeded.
//!
//! Both are written with compare-and-swap on `metadata.resourceVersion`, and only after an
//! apply fully succeeded: a puller that dies mid-apply leaves the previous state in place,
//! so the next run verifies the same bundle again, re-applies everything (server-side apply
//! makes that idempotent) and converges. The state never claims a version that was not
//! fully applied. Why the inventory is written first: [`StateStore::save`].
//!
//! A missing state Secret means a first run, or one deleted by hand: the sync command then
//! takes the floor from the kept report ConfigMap (`last_report`), or starts from an empty
//! one when that is gone too; the inventory Secret, if left, still says what to prune. A
//! Secret that cannot be read is an error, never silently reset. This module does not
//! decide what to apply; it stores what the caller hands it.

use airlock_bundle::{ClusterId, Digest};

use super::error::StateError;
use super::gz_secret::{self, GzSecret};
use super::inventory::{self, Inventory, Stored};
use super::meta::Names;
use super::state::State;
use crate::engine::InventoryEntry;

/// The state and inventory Secrets of one cluster, remembering the resourceVersions they
/// were read at.
pub struct StateStore {
    state: GzSecret<State>,
    inventory: GzSecret<Inventory>,
}

impl StateStore {
    /// Reads the state (not the inventory); `None` when the Secret does not exist.
    pub async fn load(client: &kube::Client, names: &Names, cluster: &ClusterId) -> Result<(StateStore, Option<State>), StateError> {
        let cluster = cluster.to_string();
        let mut store = StateStore {
            state: GzSecret::new(client, &names.namespace, &names.state, &cluster),
            inventory: GzSecret::new(client, &names.namespace, &names.inventory, &cluster),
        };
        let state = store.read().await?;
        Ok((store, state))
    }

    /// Reads the state again, e.g. once a Lease makes this process the only writer: what
    /// `save` then compares with is this read. `Ok(None)` when the Secret is gone.
    pub async fn read(&mut self) -> Result<Option<State>, StateError> {
        Ok(self.state.read().await?.map(|(state, _)| state))
    }

    /// The inventory to apply against, read from its Secret for `state` (the one read
    /// last), with a warning when the two are not a pair (`inventory::previous`). What
    /// `save` then compares the inventory Secret with is this read.
    pub async fn inventory(&mut self, state: Option<&State>) -> Result<Vec<InventoryEntry>, StateError> {
        let stored = self.inventory.read().await?.map(|(inventory, digest)| Stored { inventory, digest });
        let (objects, notice) = inventory::previous(state, stored);
        if let Some(notice) = notice {
            tracing::warn!("{}", notice.message(&self.state.describe(), &self.inventory.describe()));
        }
        Ok(objects)
    }

    /// Records a state whose applied version and inventory stay: `state` as read last with
    /// new `failures` (of a run that failed) or new `mounted` digests (the reloader's), the
    /// inventory it names left as it is, only if the Secret is as it was read. A state of
    /// the earlier layout keeps its inventory inline, which only `save` moves out; it is
    /// left as it is, and the new values with it.
    pub async fn record(&mut self, state: &State) -> Result<(), StateError> {
        if !state.inventory.is_empty() {
            return Ok(());
        }
        self.state.write(gz_secret::encode(state)).await
    }

    /// Records `state` and the inventory of its apply, each only if its Secret is as it
    /// was read (`read`, `inventory`).
    pub async fn save(&mut self, mut state: State, objects: Vec<InventoryEntry>) -> Result<(), StateError> {
        // The inventory goes first, and the state names it by digest. A run that stops
        // between the two writes (killed, or its state write lost a compare-and-swap)
        // leaves the inventory of the bundle it applied beside a state that still names
        // the previous version: the next run sees the digest differ, applies that bundle
        // again as new and prunes by the inventory Secret, which lists every object the
        // interrupted apply left on the cluster (it is written only after everything
        // applied and pruned). The other order would leave the new state beside the old
        // inventory: the next apply would prune by a list lacking the objects the lost
        // write added, and those would never be deleted. Both writes compare against
        // what this run read under the Lease, so of two writers that read before either
        // wrote, the second fails at its inventory write, before it touches the state.
        let inventory = gz_secret::encode(&Inventory::of(&state, objects));
        state.inventory_digest = Some(Digest::of(&inventory));
        state.inventory = Vec::new();
        self.inventory.write(inventory).await?;
        self.state.write(gz_secret::encode(&state)).await
    }
}
