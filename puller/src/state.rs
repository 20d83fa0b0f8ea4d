//! The puller's memory between runs (issue 4, step 6): the applied version and digest,
//! the anti-rollback floor, the keyring adopted by rotation and how the inventory's kinds
//! are served (so a drift check needs no discovery), kept in the Secret
//! `airlock-state-<cluster name>` of the state namespace as gzip'd JSON under
//! `state.json.gz`; and, beside it, the inventory (`inventory`), which grows with the
//! bundle and is read only by a run that will write. A run that finds nothing to do reads
//! the small state alone (issue 6, row 2).
//!
//! Both are written with compare-and-swap on `metadata.resourceVersion`, and only after an
//! apply fully succeeded: a puller that dies mid-apply leaves the previous state in place,
//! so the next run verifies the same bundle again, re-applies everything (server-side apply
//! makes that idempotent) and converges. The state never claims a version that was not
//! fully applied. Why the inventory is written first: [`StateStore::save`].
//!
//! A state of the earlier layout keeps its inventory inline (`inventory`); it is read as
//! it is, and the next write moves the inventory out. A puller release from before the
//! split refuses a state of the new layout as unreadable (no `inventory`) rather than
//! read it as an empty inventory and forget what to prune.
//!
//! A missing state Secret means a first run, or one deleted by hand: `sync` then takes the
//! floor from the kept report ConfigMap (`kept_report`), or starts from an empty one when
//! that is gone too; the inventory Secret, if left, still says what to prune. A Secret that
//! cannot be read is an error, never silently reset. This module does not decide what to
//! apply; it stores what the caller hands it.

use airlock_bundle::statement::rfc3339;
use airlock_bundle::{ClusterId, Digest, Limits};
use airlock_bundle::{Floor, Keyring};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::engine::{InventoryEntry, KnownKind};
use crate::gz_secret::{self, GzSecret, Role};
use crate::inventory::{self, INVENTORY_KEY, Inventory, Stored};
use crate::verified::Verified;

/// The data key of the state Secret.
pub const STATE_KEY: &str = "state.json.gz";

/// What the state Secret holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
// Unknown fields are accepted: a puller rolled back to an older release must still read
// the state a newer one wrote, or it would lose the floor.
pub struct State {
    pub cluster: String,
    pub version: u64,
    pub digest: Digest,
    #[serde(with = "rfc3339")]
    pub highest_issued_at: Timestamp,
    /// The keyring file's JSON, when a keyring chain advanced it past the local file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyring: Option<Box<RawValue>>,
    /// The digest of the inventory Secret's value written with this state; absent in a
    /// state of the earlier layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory_digest: Option<Digest>,
    /// The inventory of a state of the earlier layout; read, never written.
    #[serde(default, skip_serializing)]
    pub inventory: Vec<InventoryEntry>,
    /// How the inventory's kinds were served when applied; absent in states written
    /// before it was kept, whose next drift check asks discovery. One entry per kind, so
    /// it stays in the small Secret, where the drift check finds it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<KnownKind>,
    /// The applied bundle's envelope as verified, which spares an unchanged run verifying
    /// it again (`verified`); absent in states written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<Box<Verified>>,
    #[serde(with = "rfc3339")]
    pub applied_at: Timestamp,
}

/// Why the state could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    #[error(
        "state Secret {secret} is unreadable: {reason}. To recover, delete it (kubectl -n {namespace} delete secret {name}); \
         the next run takes the floor from the kept report"
    )]
    Corrupt { secret: String, namespace: String, name: String, reason: String },
    #[error(
        "inventory Secret {secret} is unreadable: {reason}. To recover, delete it (kubectl -n {namespace} delete secret {name}); \
         the next run cannot prune objects of earlier versions"
    )]
    InventoryCorrupt { secret: String, namespace: String, name: String, reason: String },
    #[error("state Secret {secret} changed during the run (another puller?); nothing was recorded, the next run retries")]
    Conflict { secret: String },
    #[error("state namespace {namespace} does not exist; registration creates it")]
    NoNamespace { namespace: String },
    #[error("state Secret {secret}: {message}")]
    Api { secret: String, message: String },
}

impl State {
    /// What verification needs from the state (spec 8.8-8.10).
    pub fn floor(&self) -> Floor {
        Floor { applied: Some((self.version, self.digest)), highest_issued_at: Some(self.highest_issued_at) }
    }

    /// The keyring adopted by rotation, if any.
    pub fn keyring(&self) -> Result<Option<Keyring>, String> {
        self.keyring
            .as_ref()
            .map(|raw| Keyring::parse(raw.get().as_bytes(), &Limits::SPEC).map_err(|e| format!("keyring: {e}")))
            .transpose()
    }
}

/// Reads the state Secret's data value, of either layout.
pub fn decode(bytes: &[u8]) -> Result<State, String> {
    let state: State = gz_secret::decode(bytes, STATE_KEY)?;
    state.keyring()?;
    Ok(state)
}

/// The state and inventory Secrets of one cluster, remembering the resourceVersions they
/// were read at.
pub struct StateStore {
    state: GzSecret,
    inventory: GzSecret,
}

impl StateStore {
    /// Reads the state (not the inventory); `None` when the Secret does not exist.
    pub async fn load(
        client: &kube::Client,
        namespace: &str,
        names: [&str; 2],
        cluster: &ClusterId,
    ) -> Result<(StateStore, Option<State>), StateError> {
        let [state, inventory] = names;
        let cluster = cluster.to_string();
        let mut store = StateStore {
            state: GzSecret::new(client, namespace, state, STATE_KEY, &cluster, Role::State),
            inventory: GzSecret::new(client, namespace, inventory, INVENTORY_KEY, &cluster, Role::Inventory),
        };
        let state = store.read().await?;
        Ok((store, state))
    }

    /// Reads the state again, e.g. once a Lease makes this process the only writer: what
    /// `save` then compares with is this read. `Ok(None)` when the Secret is gone.
    pub async fn read(&mut self) -> Result<Option<State>, StateError> {
        let Some(bytes) = self.state.read().await? else { return Ok(None) };
        let state = decode(&bytes).map_err(|reason| self.state.corrupt(reason))?;
        self.state.check_cluster(&state.cluster)?;
        Ok(Some(state))
    }

    /// The inventory to apply against, read from its Secret for `state` (the one read
    /// last), with a warning when the two are not a pair (`inventory::previous`). What
    /// `save` then compares the inventory Secret with is this read.
    pub async fn inventory(&mut self, state: Option<&State>) -> Result<Vec<InventoryEntry>, StateError> {
        let stored = match self.inventory.read().await? {
            None => None,
            Some(bytes) => {
                let inventory: Inventory = gz_secret::decode(&bytes, INVENTORY_KEY).map_err(|reason| self.inventory.corrupt(reason))?;
                self.inventory.check_cluster(&inventory.cluster)?;
                Some(Stored { inventory, digest: Digest::of(&bytes) })
            }
        };
        let (objects, notice) = inventory::previous(state, stored);
        if let Some(notice) = notice {
            tracing::warn!("{}", notice.message(&self.state.describe(), &self.inventory.describe()));
        }
        Ok(objects)
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

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Read;

    use super::*;
    use crate::gz_secret::{COMPRESSED_BYTES, JSON_BYTES, encode};
    use crate::report::test_result;
    use airlock_bundle::testkit::Fixture;
    use flate2::Compression;
    use flate2::write::GzEncoder;

    /// Inventory entries `cm-<i>` for `range`.
    pub(crate) fn entries(range: std::ops::Range<usize>) -> Vec<InventoryEntry> {
        range
            .map(|i| InventoryEntry {
                id: test_result("ConfigMap", &format!("cm-{i}"), crate::engine::Action::Created, None).id,
                profile: "ClusterProfile.web".into(),
                applied_hash: Digest::of(i.to_string().as_bytes()).hex(),
                leave_on_removal: i % 2 == 0,
            })
            .collect()
    }

    /// Version 7 of `fleet/edge-1`, with a rotated keyring; naming no inventory.
    pub(crate) fn state() -> State {
        let keyring = String::from_utf8(Fixture::new(2).keyring.to_json()).unwrap();
        State {
            cluster: "fleet/edge-1".into(),
            version: 7,
            digest: Digest::of(b"bundle"),
            highest_issued_at: Fixture::now(),
            keyring: Some(RawValue::from_string(keyring).unwrap()),
            inventory_digest: None,
            inventory: Vec::new(),
            kinds: vec![KnownKind { api_version: "v1".into(), kind: "ConfigMap".into(), plural: "configmaps".into(), namespaced: true }],
            verified: None,
            applied_at: Fixture::now(),
        }
    }

    fn gzip(json: &[u8]) -> Vec<u8> {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        std::io::Write::write_all(&mut gz, json).unwrap();
        gz.finish().unwrap()
    }

    fn json_of(bytes: &[u8]) -> serde_json::Value {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn round_trips_without_the_inventory() {
        let s = State { inventory_digest: Some(Digest::of(b"inventory")), ..state() };
        let back = decode(&encode(&s)).unwrap();
        assert_eq!((back.version, back.inventory_digest), (7, s.inventory_digest));
        assert_eq!(back.kinds, s.kinds);
        assert_eq!(back.keyring().unwrap(), Some(Fixture::new(2).keyring));
        assert_eq!(back.floor(), Floor { applied: Some((7, Digest::of(b"bundle"))), highest_issued_at: Some(Fixture::now()) });
        let json = json_of(&encode(&s));
        for field in ["cluster", "version", "digest", "highestIssuedAt", "keyring", "inventoryDigest", "kinds", "appliedAt"] {
            assert!(json.get(field).is_some(), "{field} missing in {json}");
        }
        assert!(json.get("inventory").is_none(), "the inventory has its own Secret: {json}");
    }

    /// Issue 6, row 2: what an unchanged run reads does not grow with the bundle.
    #[test]
    fn a_state_is_small_whatever_the_inventory() {
        let s = State { inventory_digest: Some(Digest::of(b"inventory")), ..state() };
        let bytes = encode(&s);
        assert!(bytes.len() < 2048, "{} bytes", bytes.len());
        let inventory = encode(&Inventory::of(&s, entries(0..10_000)));
        assert!(inventory.len() < COMPRESSED_BYTES, "10,000 entries: {} bytes", inventory.len());
        let back: Inventory = gz_secret::decode(&inventory, INVENTORY_KEY).unwrap();
        assert_eq!((back.version, back.objects.len()), (7, 10_000));
    }

    /// A state Secret written before the inventory moved out, and before kinds were kept.
    #[test]
    fn reads_a_state_of_the_earlier_layout() {
        let mut json = serde_json::to_value(state()).unwrap();
        let object = json.as_object_mut().unwrap();
        object.remove("kinds");
        object.insert("inventory".into(), serde_json::to_value(entries(0..3)).unwrap());
        let back = decode(&gzip(json.to_string().as_bytes())).unwrap();
        assert!(back.kinds.is_empty(), "its next drift check asks discovery");
        assert_eq!((&back.inventory, back.inventory_digest), (&entries(0..3), None));
        assert!(json_of(&encode(&back)).get("inventory").is_none(), "the next write moves the inventory out");
    }

    #[test]
    fn rejects_oversized_and_bombs() {
        let err = decode(&vec![0; COMPRESSED_BYTES + 1]).unwrap_err();
        assert!(err.contains("over"), "{err}");
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        std::io::Write::write_all(&mut gz, &vec![b' '; JSON_BYTES as usize + 1]).unwrap();
        let err = decode(&gz.finish().unwrap()).unwrap_err();
        assert!(err.contains("decompresses to more than"), "{err}");
    }

    #[test]
    fn rejects_corruption() {
        let good = encode(&state());
        assert!(decode(&good[..good.len() - 9]).unwrap_err().contains("gzip"));
        assert!(decode(b"{}").unwrap_err().contains("not gzip"));
        assert!(decode(&gzip(br#"{"cluster":"fleet/edge-1"}"#)).unwrap_err().contains("missing field"));
        let mut bad_keyring = state();
        bad_keyring.keyring = Some(RawValue::from_string(r#"{"version":1}"#.into()).unwrap());
        assert!(decode(&encode(&bad_keyring)).unwrap_err().contains("keyring"));
        let err = gz_secret::decode::<Inventory>(&gzip(br#"{"cluster":"fleet/edge-1"}"#), INVENTORY_KEY).unwrap_err();
        assert!(err.starts_with("inventory.json.gz: missing field"), "{err}");
    }

    #[test]
    fn corrupt_errors_say_how_to_recover() {
        let (namespace, name) = ("airlock-system".to_string(), "airlock-state-edge-1".to_string());
        let secret = format!("{namespace}/{name}");
        let reason = "no state.json.gz key".to_string();
        let e = StateError::Corrupt { secret: secret.clone(), namespace: namespace.clone(), name: name.clone(), reason: reason.clone() };
        assert!(e.to_string().contains("kubectl -n airlock-system delete secret airlock-state-edge-1"), "{e}");
        let e = StateError::InventoryCorrupt { secret, namespace, name: "airlock-inventory-edge-1".into(), reason };
        let text = e.to_string();
        assert!(text.starts_with("inventory Secret") && text.contains("delete secret airlock-inventory-edge-1"), "{text}");
    }
}
