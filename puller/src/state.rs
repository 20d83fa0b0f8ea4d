//! The puller's memory between runs (issue 4, step 6): the applied version and digest,
//! the anti-rollback floor, the keyring adopted by rotation, the inventory and how its
//! kinds are served (so a drift check needs no discovery), kept in the
//! Secret `airlock-state-<cluster name>` of the state namespace as gzip'd JSON under
//! `state.json.gz`.
//!
//! Written with compare-and-swap on `metadata.resourceVersion`, and only after an apply
//! fully succeeded: a puller that dies mid-apply leaves the previous state in place, so
//! the next run verifies the same bundle again, re-applies everything (server-side apply
//! makes that idempotent) and converges. The state never claims a version that was not
//! fully applied.
//!
//! A missing Secret means a first run, or one deleted by hand: `sync` then takes the floor
//! from the kept report ConfigMap (`kept_report`), or starts from an empty one when that
//! is gone too, and from an empty inventory (objects of earlier versions are not known
//! and will not be pruned). A Secret that cannot be read is an error, never silently
//! reset. This module does not decide what to apply; it stores what the caller hands it.

use std::io::Read;

use airlock::bundle::statement::rfc3339;
use airlock::bundle::{Floor, Keyring};
use airlock::cli::{describe_api_error, namespace_missing, status_code};
use airlock::{ClusterId, Digest, Limits};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::engine::{InventoryEntry, KnownKind};
use crate::own_objects::meta;

/// The data key of the state Secret.
pub const STATE_KEY: &str = "state.json.gz";
/// The API server refuses Secrets over 1 MiB, so a larger value was not written by us.
const COMPRESSED_BYTES: usize = 1024 * 1024;
/// 10,000 inventory entries (spec's file limit, one object each) make about 3 MiB of
/// JSON; the cap keeps a gzip bomb planted in the Secret from exhausting memory.
const JSON_BYTES: u64 = 32 * 1024 * 1024;

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
    pub inventory: Vec<InventoryEntry>,
    /// How the inventory's kinds were served when applied; absent in states written
    /// before it was kept, whose next drift check asks discovery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<KnownKind>,
    #[serde(with = "rfc3339")]
    pub applied_at: Timestamp,
}

/// Why the state could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    #[error(
        "state Secret {secret} is unreadable: {reason}. To recover, delete it (kubectl -n {namespace} delete secret {name}); \
         the next run takes the floor from the kept report and cannot prune objects of earlier versions"
    )]
    Corrupt { secret: String, namespace: String, name: String, reason: String },
    #[error(
        "state Secret {secret} changed during the run (another puller?); nothing was recorded, the next run retries"
    )]
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

/// The Secret's data value for `state`.
pub fn encode(state: &State) -> Vec<u8> {
    let json = serde_json::to_vec(state).expect("state serialises");
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    std::io::Write::write_all(&mut gz, &json).expect("writing to memory");
    gz.finish().expect("writing to memory")
}

/// Reads the Secret's data value, with caps on both sides of the decompression.
pub fn decode(bytes: &[u8]) -> Result<State, String> {
    if bytes.len() > COMPRESSED_BYTES {
        return Err(format!("{} bytes, over {COMPRESSED_BYTES}", bytes.len()));
    }
    let mut json = Vec::new();
    GzDecoder::new(bytes)
        .take(JSON_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(|e| format!("{STATE_KEY} is not gzip: {e}"))?;
    if json.len() as u64 > JSON_BYTES {
        return Err(format!("{STATE_KEY} decompresses to more than {JSON_BYTES} bytes"));
    }
    let state: State = serde_json::from_slice(&json).map_err(|e| format!("{STATE_KEY}: {e}"))?;
    state.keyring()?;
    Ok(state)
}

/// The state Secret of one cluster, remembering the resourceVersion it was read at.
pub struct StateStore {
    api: Api<Secret>,
    namespace: String,
    name: String,
    cluster: String,
    resource_version: Option<String>,
}

impl StateStore {
    /// Reads the state; `None` when the Secret does not exist.
    pub async fn load(
        client: &kube::Client,
        namespace: &str,
        name: &str,
        cluster: &ClusterId,
    ) -> Result<(StateStore, Option<State>), StateError> {
        let mut store = StateStore {
            api: Api::namespaced(client.clone(), namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            cluster: cluster.to_string(),
            resource_version: None,
        };
        let state = store.read().await?;
        Ok((store, state))
    }

    /// Reads the state again, e.g. once a Lease makes this process the only writer: what
    /// `save` then compares with is this read. `Ok(None)` when the Secret is gone.
    pub async fn read(&mut self) -> Result<Option<State>, StateError> {
        let secret = self.api.get_opt(&self.name).await.map_err(|e| self.api_error(&e))?;
        self.resource_version = secret.as_ref().and_then(|s| s.metadata.resource_version.clone());
        let Some(secret) = secret else { return Ok(None) };
        let data = secret.data.unwrap_or_default();
        let bytes = data.get(STATE_KEY).ok_or_else(|| self.corrupt(format!("no {STATE_KEY} key")))?;
        let state = decode(&bytes.0).map_err(|reason| self.corrupt(reason))?;
        if state.cluster != self.cluster {
            return Err(self.corrupt(format!("it belongs to cluster {}", state.cluster)));
        }
        Ok(Some(state))
    }

    /// Writes `state` if the Secret is still as it was read (or still absent).
    pub async fn save(&mut self, state: &State) -> Result<(), StateError> {
        let secret = Secret {
            metadata: meta(&self.namespace, &self.name, &self.cluster, self.resource_version.clone()),
            type_: Some("Opaque".into()),
            data: Some([(STATE_KEY.to_string(), ByteString(encode(state)))].into()),
            ..Secret::default()
        };
        let params = PostParams { field_manager: Some(crate::own_objects::MANAGER.into()), ..PostParams::default() };
        let written = match &self.resource_version {
            Some(_) => self.api.replace(&self.name, &params, &secret).await,
            None => self.api.create(&params, &secret).await,
        };
        match written {
            Ok(secret) => {
                self.resource_version = secret.metadata.resource_version;
                Ok(())
            }
            // 409: changed since read, or created meanwhile; 404 on replace: deleted since read.
            Err(e) if status_code(&e) == Some(409) || (status_code(&e) == Some(404) && self.resource_version.is_some()) => {
                Err(StateError::Conflict { secret: self.secret() })
            }
            Err(e) => Err(self.api_error(&e)),
        }
    }

    fn secret(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn corrupt(&self, reason: String) -> StateError {
        StateError::Corrupt {
            secret: self.secret(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            reason,
        }
    }

    fn api_error(&self, e: &kube::Error) -> StateError {
        if namespace_missing(e) {
            return StateError::NoNamespace { namespace: self.namespace.clone() };
        }
        StateError::Api { secret: self.secret(), message: describe_api_error(e) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_result;
    use airlock::testkit::Fixture;

    fn state(entries: usize) -> State {
        let inventory = (0..entries)
            .map(|i| InventoryEntry {
                id: test_result("ConfigMap", &format!("cm-{i}"), crate::engine::Action::Created, None).id,
                profile: "ClusterProfile.web".into(),
                applied_hash: Digest::of(i.to_string().as_bytes()).hex(),
                leave_on_removal: i % 2 == 0,
            })
            .collect();
        let keyring = String::from_utf8(Fixture::new(2).keyring.to_json()).unwrap();
        State {
            cluster: "fleet/edge-1".into(),
            version: 7,
            digest: Digest::of(b"bundle"),
            highest_issued_at: Fixture::now(),
            keyring: Some(RawValue::from_string(keyring).unwrap()),
            inventory,
            kinds: vec![KnownKind {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
                namespaced: true,
            }],
            applied_at: Fixture::now(),
        }
    }

    #[test]
    fn round_trips() {
        let s = state(3);
        let back = decode(&encode(&s)).unwrap();
        assert_eq!(back.version, 7);
        assert_eq!(back.inventory, s.inventory);
        assert_eq!(back.kinds, s.kinds);
        assert_eq!(back.keyring().unwrap(), Some(Fixture::new(2).keyring));
        assert_eq!(
            back.floor(),
            Floor { applied: Some((7, Digest::of(b"bundle"))), highest_issued_at: Some(Fixture::now()) }
        );
        let json: serde_json::Value = serde_json::from_slice(&{
            let mut out = Vec::new();
            GzDecoder::new(&encode(&s)[..]).read_to_end(&mut out).unwrap();
            out
        })
        .unwrap();
        for field in ["cluster", "version", "digest", "highestIssuedAt", "keyring", "inventory", "kinds", "appliedAt"] {
            assert!(json.get(field).is_some(), "{field} missing in {json}");
        }
    }

    #[test]
    fn reads_a_state_written_before_kinds_were_kept() {
        let mut json = serde_json::to_value(state(1)).unwrap();
        json.as_object_mut().unwrap().remove("kinds");
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        std::io::Write::write_all(&mut gz, json.to_string().as_bytes()).unwrap();
        let back = decode(&gz.finish().unwrap()).unwrap();
        assert!(back.kinds.is_empty(), "its next drift check asks discovery");
        assert_eq!(back.inventory.len(), 1);
    }

    #[test]
    fn compresses_a_large_inventory_under_the_secret_limit() {
        let bytes = encode(&state(10_000));
        assert!(bytes.len() < COMPRESSED_BYTES, "{} bytes", bytes.len());
        assert_eq!(decode(&bytes).unwrap().inventory.len(), 10_000);
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
        let good = encode(&state(1));
        assert!(decode(&good[..good.len() - 9]).unwrap_err().contains("gzip"));
        assert!(decode(b"{}").unwrap_err().contains("not gzip"));
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        std::io::Write::write_all(&mut gz, br#"{"cluster":"fleet/edge-1"}"#).unwrap();
        assert!(decode(&gz.finish().unwrap()).unwrap_err().contains("missing field"));
        let mut bad_keyring = state(1);
        bad_keyring.keyring = Some(RawValue::from_string(r#"{"version":1}"#.into()).unwrap());
        assert!(decode(&encode(&bad_keyring)).unwrap_err().contains("keyring"));
    }

    #[test]
    fn corrupt_error_says_how_to_recover() {
        let e = StateError::Corrupt {
            secret: "airlock-system/airlock-state-edge-1".into(),
            namespace: "airlock-system".into(),
            name: "airlock-state-edge-1".into(),
            reason: "no state.json.gz key".into(),
        };
        let text = e.to_string();
        assert!(text.contains("kubectl -n airlock-system delete secret airlock-state-edge-1"), "{text}");
    }
}
