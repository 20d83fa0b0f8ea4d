//! The inventory: every object the last apply left on the cluster, which the next apply
//! prunes by, kept apart from the state in the Secret `airlock-inventory-<cluster name>`,
//! data key `inventory.json.gz`, so that a run that finds nothing to do reads and decodes
//! a state of a few hundred bytes whatever the bundle's size. Only a run that will write
//! (an apply) and `plan` read it.
//!
//! The state names the inventory it was written with by the digest of the stored bytes
//! (`inventoryDigest`). [`previous`] decides what a run prunes by when the two disagree;
//! the rule is to never know fewer objects than were applied: an entry too many costs
//! nothing (prune deletes only live objects carrying this cluster's label, which an object
//! released or taken over no longer has), an entry too few leaves an object behind for
//! good. This module does not read or write the Secret; `state_store` does.

use std::collections::HashSet;

use airlock_bundle::Digest;
use serde::{Deserialize, Serialize};

use super::gz_secret::{Role, SecretValue};
use super::state::State;
use crate::engine::InventoryEntry;

/// The data key of the inventory Secret.
pub const INVENTORY_KEY: &str = "inventory.json.gz";

/// What the inventory Secret holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inventory {
    pub cluster: String,
    /// The bundle whose apply left these objects.
    pub version: u64,
    pub digest: Digest,
    pub objects: Vec<InventoryEntry>,
}

impl Inventory {
    /// The inventory that goes with `state`.
    pub fn of(state: &State, objects: Vec<InventoryEntry>) -> Inventory {
        Inventory { cluster: state.cluster.clone(), version: state.version, digest: state.digest, objects }
    }
}

impl SecretValue for Inventory {
    const KEY: &'static str = INVENTORY_KEY;
    const ROLE: Role = Role::Inventory;

    fn cluster(&self) -> &str {
        &self.cluster
    }
}

/// An inventory Secret as read: what it holds, and the digest of its stored bytes.
#[derive(Debug)]
pub struct Stored {
    pub inventory: Inventory,
    pub digest: Digest,
}

/// Why the inventory a run prunes by is not simply the one its state names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The state names an inventory Secret that is gone (deleted by hand).
    Missing { state_version: u64 },
    /// The inventory Secret is not the one the state was written with: a run stopped
    /// between writing the two, or one of them was edited.
    Mismatch { state_version: u64, inventory_version: u64 },
    /// A state of the earlier layout, its inventory inline, beside an inventory Secret:
    /// a run stopped between the two writes that move it out.
    Merged { state_version: u64, inventory_version: u64 },
    /// No state, but the inventory Secret of an earlier run is left.
    WithoutState { inventory_version: u64 },
    /// Neither: a first run, or both deleted.
    Neither,
}

impl Notice {
    /// What to log, naming both Secrets.
    pub fn message(&self, state: &str, inventory: &str) -> String {
        match self {
            Notice::Missing { state_version } => format!(
                "the state Secret {state} (version {state_version}) names an inventory, but the inventory Secret \
                 {inventory} is missing (deleted?): objects applied before are not known and will not be pruned"
            ),
            Notice::Mismatch { state_version, inventory_version } => format!(
                "the inventory Secret {inventory} (version {inventory_version}) is not the one the state Secret \
                 {state} (version {state_version}) was written with (a run stopped between writing the two?): \
                 pruning by the inventory Secret, which is written first"
            ),
            Notice::Merged { state_version, inventory_version } => format!(
                "the state Secret {state} (version {state_version}) keeps its inventory inline and the inventory \
                 Secret {inventory} (version {inventory_version}) exists too (a run stopped between writing the \
                 two?): pruning by both"
            ),
            Notice::WithoutState { inventory_version } => format!(
                "no state Secret {state}, but the inventory Secret {inventory} of version {inventory_version} is \
                 left: objects it lists are pruned when the bundle no longer has them"
            ),
            Notice::Neither => format!(
                "no state Secret {state} and no inventory Secret {inventory} (a first run, or both deleted): objects \
                 an earlier run applied, if any, are not known and will not be pruned"
            ),
        }
    }
}

/// The inventory a run prunes by, given its state and the inventory Secret, and what to
/// say about it when the two are not a pair.
pub fn previous(state: Option<&State>, stored: Option<Stored>) -> (Vec<InventoryEntry>, Option<Notice>) {
    let Some(state) = state else {
        return match stored {
            Some(s) => {
                let inventory_version = s.inventory.version;
                (s.inventory.objects, Some(Notice::WithoutState { inventory_version }))
            }
            None => (Vec::new(), Some(Notice::Neither)),
        };
    };
    let state_version = state.version;
    match (state.inventory_digest, stored) {
        (Some(named), Some(stored)) if named == stored.digest => (stored.inventory.objects, None),
        // The inventory is written before the state, and only after an apply that left
        // every object it lists on the cluster: a newer one is the truth, and an older
        // one (a restore by hand) is still all there is.
        (Some(_), Some(stored)) => {
            let inventory_version = stored.inventory.version;
            (stored.inventory.objects, Some(Notice::Mismatch { state_version, inventory_version }))
        }
        (Some(_), None) => (Vec::new(), Some(Notice::Missing { state_version })),
        (None, None) => (state.inventory.clone(), None),
        (None, Some(stored)) => {
            let inventory_version = stored.inventory.version;
            (union(stored.inventory.objects, &state.inventory), Some(Notice::Merged { state_version, inventory_version }))
        }
    }
}

/// `newer`, then the entries of `older` for objects `newer` does not list.
fn union(mut newer: Vec<InventoryEntry>, older: &[InventoryEntry]) -> Vec<InventoryEntry> {
    let known: HashSet<_> = newer.iter().map(|e| e.id.key()).collect();
    newer.extend(older.iter().filter(|e| !known.contains(&e.id.key())).cloned());
    newer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kept::gz_secret::{COMPRESSED_BYTES, decode, encode};
    use crate::kept::state::tests::{entries, state};

    fn stored(version: u64, objects: Vec<InventoryEntry>) -> Stored {
        let inventory = Inventory { version, ..Inventory::of(&state(), objects) };
        let digest = Digest::of(&encode(&inventory));
        Stored { inventory, digest }
    }

    fn named(version: u64, stored: &Stored) -> State {
        State { version, inventory_digest: Some(stored.digest), ..state() }
    }

    #[test]
    fn the_named_inventory_is_used_as_it_is() {
        let s = stored(7, entries(0..3));
        assert_eq!(previous(Some(&named(7, &s)), Some(s)), (entries(0..3), None));
    }

    #[test]
    fn another_inventory_than_the_named_one_is_used_with_a_notice() {
        let s = stored(8, entries(0..4));
        let state = State { inventory_digest: Some(Digest::of(b"the inventory of version 7")), ..state() };
        let notice = Notice::Mismatch { state_version: 7, inventory_version: 8 };
        assert_eq!(previous(Some(&state), Some(s)), (entries(0..4), Some(notice)));
    }

    #[test]
    fn a_missing_inventory_is_empty_with_a_notice() {
        let s = stored(7, entries(0..3));
        let (objects, notice) = previous(Some(&named(7, &s)), None);
        assert!(objects.is_empty());
        assert_eq!(notice, Some(Notice::Missing { state_version: 7 }));
    }

    #[test]
    fn an_inline_inventory_of_the_earlier_layout_is_read_and_merged_with_a_left_secret() {
        let legacy = State { inventory: entries(0..3), ..state() };
        assert_eq!(previous(Some(&legacy), None), (entries(0..3), None));
        let (objects, notice) = previous(Some(&legacy), Some(stored(8, entries(2..5))));
        assert_eq!(objects, [entries(2..5), entries(0..2)].concat(), "each object once, the newer entry kept");
        assert_eq!(notice, Some(Notice::Merged { state_version: 7, inventory_version: 8 }));
    }

    #[test]
    fn without_a_state_a_left_inventory_is_used() {
        assert_eq!(previous(None, None), (vec![], Some(Notice::Neither)));
        let (objects, notice) = previous(None, Some(stored(7, entries(0..2))));
        assert_eq!((objects, notice), (entries(0..2), Some(Notice::WithoutState { inventory_version: 7 })));
    }

    #[test]
    fn notices_name_both_secrets() {
        let notices = [
            Notice::Missing { state_version: 7 },
            Notice::Mismatch { state_version: 7, inventory_version: 8 },
            Notice::Merged { state_version: 7, inventory_version: 8 },
            Notice::WithoutState { inventory_version: 7 },
            Notice::Neither,
        ];
        for notice in notices {
            let text = notice.message("ns/airlock-state-edge-1", "ns/airlock-inventory-edge-1");
            assert!(text.contains("ns/airlock-state-edge-1") && text.contains("ns/airlock-inventory-edge-1"), "{text}");
        }
    }

    /// What an unchanged run reads does not grow with the bundle.
    #[test]
    fn a_state_is_small_whatever_the_inventory() {
        let s = State { inventory_digest: Some(Digest::of(b"inventory")), ..state() };
        let bytes = encode(&s);
        assert!(bytes.len() < 2048, "{} bytes", bytes.len());
        let inventory = encode(&Inventory::of(&s, entries(0..10_000)));
        assert!(inventory.len() < COMPRESSED_BYTES, "10,000 entries: {} bytes", inventory.len());
        let back: Inventory = decode(&inventory).unwrap();
        assert_eq!((back.version, back.objects.len()), (7, 10_000));
    }

    #[test]
    fn rejects_an_inventory_naming_its_key() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, br#"{"cluster":"fleet/edge-1"}"#).unwrap();
        let err = decode::<Inventory>(&gz.finish().unwrap()).unwrap_err().to_string();
        assert!(err.starts_with("inventory.json.gz: missing field"), "{err}");
    }
}
