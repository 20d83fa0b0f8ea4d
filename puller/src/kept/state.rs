//! The puller's memory between runs: the applied version and digest, the anti-rollback
//! floor, the signed keyring updates adopted by rotation, how the inventory's kinds are served (so a
//! drift check needs no discovery), the failed runs of parts with a
//! `maxConsecutiveFailures` (`failures`) and what the workloads of reloader parts mount,
//! digested, kept in the Secret `airlock-state-<cluster name>` of
//! the state namespace as gzip'd JSON under `state.json.gz`. The inventory, which grows
//! with the bundle, has a Secret of its own (`inventory`), so a run that finds nothing to
//! do reads this small value alone.
//!
//! A state of the earlier layout keeps its inventory inline (`inventory`); it is read as
//! it is, and the next write moves the inventory out. A puller release from before the
//! split refuses a state of the new layout as unreadable (no `inventory`) rather than
//! read it as an empty inventory and forget what to prune.
//!
//! This module is the value and its codec; reading and writing the Secret, and why only
//! after a full apply, is `state_store`'s.

use airlock_bundle::Digest;
use airlock_bundle::Floor;
use airlock_bundle::statement::rfc3339;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::delete_checks::DeleteChecks;
use super::failures::PartFailures;
use super::gz_secret::{Role, SecretValue};
use super::identity::KeptIdentity;
use super::verified::Verified;
use crate::engine::{InventoryEntry, KnownKind, Mounted};

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
    /// The signed keyring updates (a keyring chain, spec 7.3) that advance the local
    /// keyring file's to the one that verified the applied bundle; absent when none do.
    /// Followed again from the file on every run (`trusted`). The `keyring` JSON an
    /// earlier release kept here is not read: nothing unsigned is trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyring_chain: Option<Box<RawValue>>,
    /// The version of the keyring that verified the applied bundle, which the floor
    /// belongs to (spec 7.4); absent in states written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyring_version: Option<u64>,
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
    /// Per part with a `maxConsecutiveFailures`, the runs in a row that failed to apply
    /// it as it is now; absent when none did, and in states written before they were
    /// counted. A failed run writes them back, and nothing else.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<PartFailures>,
    /// Per workload of a reloader part, the digest of the ConfigMaps and Secrets it
    /// mounts as a run last saw them (spec 5.10); absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounted: Vec<Mounted>,
    /// Per part with `preDeleteChecks` or `postDeleteChecks`, those checks, to run when
    /// the part leaves the bundle (spec 5.11); absent when no part has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_checks: Vec<DeleteChecks>,
    /// The age identities that decrypt the applied bundle (`identities`), so that one the
    /// identity file lost in a rotation still reads it; absent when it has no encrypted file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub age_identities: Vec<KeptIdentity>,
    #[serde(with = "rfc3339")]
    pub applied_at: Timestamp,
    /// When the cluster's final bundle was applied (spec 2.5.5): from then on a run does
    /// nothing but say so. Absent while the puller serves the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decommissioned: Option<Timestamp>,
}

impl State {
    /// What verification needs from the state (spec 8.8-8.10). A state written before
    /// the floor's keyring version was kept kept its keyring chain only once applied, so
    /// the keyring it derives, `derived`, is the one that verified its bundle.
    pub fn floor(&self, derived: u64) -> Floor {
        Floor {
            applied: Some((self.version, self.digest)),
            highest_issued_at: Some(self.highest_issued_at),
            keyring_version: Some(self.keyring_version.unwrap_or(derived)),
        }
    }
}

impl SecretValue for State {
    const KEY: &'static str = STATE_KEY;
    const ROLE: Role = Role::State;

    fn cluster(&self) -> &str {
        &self.cluster
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Read;

    use super::*;
    use crate::engine::ObjectId;
    use crate::kept::gz_secret::{COMPRESSED_BYTES, JSON_BYTES, decode, encode};
    use airlock_bundle::keyring::chain;
    use airlock_bundle::testkit::Fixture;
    use flate2::Compression;
    use flate2::write::GzEncoder;

    /// Inventory entries for the ConfigMaps `web/cm-<i>` for `range`.
    pub(crate) fn entries(range: std::ops::Range<usize>) -> Vec<InventoryEntry> {
        range
            .map(|i| InventoryEntry {
                id: ObjectId {
                    group: String::new(),
                    version: "v1".into(),
                    kind: "ConfigMap".into(),
                    namespace: Some("web".into()),
                    name: format!("cm-{i}"),
                },
                profile: "ClusterProfile.web".into(),
                applied_hash: Digest::of(i.to_string().as_bytes()).hex(),
                leave_on_removal: i % 2 == 0,
                release: None,
                hook: false,
                propagation: None,
                adopted: false,
                service_account: None,
            })
            .collect()
    }

    /// Version 7 of `fleet/edge-1` keeping the keyring chain `chain` (any bytes); naming
    /// no inventory.
    pub(crate) fn state_with_chain(chain: &[u8]) -> State {
        let chain = String::from_utf8(chain.to_vec()).unwrap();
        State {
            cluster: "fleet/edge-1".into(),
            version: 7,
            digest: Digest::of(b"bundle"),
            highest_issued_at: Fixture::now(),
            keyring_chain: Some(RawValue::from_string(chain).unwrap()),
            keyring_version: None,
            inventory_digest: None,
            inventory: Vec::new(),
            kinds: vec![KnownKind { api_version: "v1".into(), kind: "ConfigMap".into(), plural: "configmaps".into(), namespaced: true }],
            verified: None,
            failures: Vec::new(),
            mounted: Vec::new(),
            delete_checks: Vec::new(),
            age_identities: Vec::new(),
            applied_at: Fixture::now(),
            decommissioned: None,
        }
    }

    /// [`state_with_chain`] an update to the keyring of a second fixture, as a rotation
    /// would leave it.
    pub(crate) fn state() -> State {
        state_with_chain(&chain(&[Fixture::new(2).keyring.sign_update(&Fixture::new(1).keys)]))
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

    /// The text of the error decoding `bytes` as a state.
    fn refusal(bytes: &[u8]) -> String {
        decode::<State>(bytes).unwrap_err().to_string()
    }

    #[test]
    fn round_trips_without_the_inventory() {
        let s = State { inventory_digest: Some(Digest::of(b"inventory")), ..state() };
        let back: State = decode(&encode(&s)).unwrap();
        assert_eq!((back.version, back.inventory_digest), (7, s.inventory_digest));
        assert_eq!(back.kinds, s.kinds);
        assert_eq!(back.keyring_chain.as_ref().map(|c| c.get()), s.keyring_chain.as_ref().map(|c| c.get()));
        let floor = Floor { applied: Some((7, Digest::of(b"bundle"))), highest_issued_at: Some(Fixture::now()), keyring_version: Some(1) };
        assert_eq!(back.floor(1), floor);
        let json = json_of(&encode(&s));
        for field in ["cluster", "version", "digest", "highestIssuedAt", "keyringChain", "inventoryDigest", "kinds", "appliedAt"] {
            assert!(json.get(field).is_some(), "{field} missing in {json}");
        }
        assert!(json.get("inventory").is_none(), "the inventory has its own Secret: {json}");
    }

    #[test]
    fn keeps_the_failure_counts_and_reads_a_state_without_them() {
        let counts = vec![PartFailures { part: "ClusterProfile.web".into(), digest: Digest::of(b"part"), runs: 2 }];
        let s = State { failures: counts.clone(), ..state() };
        let json = json_of(&encode(&s));
        assert_eq!(json["failures"], serde_json::json!([{"part": "ClusterProfile.web", "digest": Digest::of(b"part"), "runs": 2}]));
        assert_eq!(decode::<State>(&encode(&s)).unwrap().failures, counts);
        assert!(json_of(&encode(&state())).get("failures").is_none(), "absent when nothing failed");
        // As a release that did not count them wrote it.
        let mut old = serde_json::to_value(state()).unwrap();
        old.as_object_mut().unwrap().remove("failures");
        assert!(decode::<State>(&gzip(old.to_string().as_bytes())).unwrap().failures.is_empty());
    }

    /// The keyring JSON an earlier release kept is read past: it is not signed.
    #[test]
    fn reads_past_the_keyring_json_of_an_earlier_release() {
        let mut json = serde_json::to_value(state()).unwrap();
        let object = json.as_object_mut().unwrap();
        object.remove("keyringChain");
        object.insert("keyring".into(), serde_json::from_slice(&Fixture::new(2).keyring.to_json()).unwrap());
        let back: State = decode(&gzip(json.to_string().as_bytes())).unwrap();
        assert!(back.keyring_chain.is_none());
    }

    /// A state Secret written before the inventory moved out, and before kinds were kept.
    #[test]
    fn reads_a_state_of_the_earlier_layout() {
        let mut json = serde_json::to_value(state()).unwrap();
        let object = json.as_object_mut().unwrap();
        object.remove("kinds");
        object.insert("inventory".into(), serde_json::to_value(entries(0..3)).unwrap());
        let back: State = decode(&gzip(json.to_string().as_bytes())).unwrap();
        assert!(back.kinds.is_empty(), "its next drift check asks discovery");
        assert_eq!((&back.inventory, back.inventory_digest), (&entries(0..3), None));
        assert!(json_of(&encode(&back)).get("inventory").is_none(), "the next write moves the inventory out");
    }

    #[test]
    fn rejects_oversized_and_bombs() {
        let err = refusal(&vec![0; COMPRESSED_BYTES + 1]);
        assert!(err.contains("over"), "{err}");
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        std::io::Write::write_all(&mut gz, &vec![b' '; JSON_BYTES as usize + 1]).unwrap();
        let err = refusal(&gz.finish().unwrap());
        assert!(err.contains("decompresses to more than"), "{err}");
    }

    #[test]
    fn rejects_corruption() {
        let good = encode(&state());
        assert!(refusal(&good[..good.len() - 9]).contains("gzip"));
        assert!(refusal(b"{}").contains("not gzip"));
        assert!(refusal(&gzip(br#"{"cluster":"fleet/edge-1"}"#)).contains("missing field"));
    }
}
