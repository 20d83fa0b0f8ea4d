//! One of the puller's bookkeeping Secrets (the state, the inventory): a gzip'd JSON value
//! under one data key, read with caps on both sides of the decompression, checked to be
//! this cluster's, and written with compare-and-swap on the `metadata.resourceVersion` it
//! was read at. What the value means and in which order the Secrets are written is
//! `state_store`'s business, not this module's.

use std::io::Read;
use std::marker::PhantomData;

use airlock_bundle::Digest;
use airlock_cli::{describe_api_error, namespace_missing, status_code};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{StateError, Unreadable};
use super::meta::{MANAGER, meta};

/// The API server refuses Secrets over 1 MiB, so a larger value was not written by us.
pub const COMPRESSED_BYTES: usize = 1024 * 1024;
/// 10,000 inventory entries (spec's file limit, one object each) make about 3 MiB of
/// JSON; the cap keeps a gzip bomb planted in a Secret from exhausting memory.
pub const JSON_BYTES: u64 = 32 * 1024 * 1024;

/// Which of the two Secrets: they fail with different errors, since losing one costs
/// something else than losing the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    State,
    Inventory,
}

/// A value one of the Secrets holds.
pub trait SecretValue: DeserializeOwned {
    /// The data key it is stored under.
    const KEY: &'static str;
    const ROLE: Role;
    /// The cluster it belongs to.
    fn cluster(&self) -> &str;
    /// What its JSON's shape does not say; nothing more by default.
    fn check(&self) -> Result<(), Unreadable> {
        Ok(())
    }
}

/// The data value for `value`: its JSON, gzip'd.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let json = serde_json::to_vec(value).expect("puller bookkeeping serialises");
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    std::io::Write::write_all(&mut gz, &json).expect("writing to memory");
    gz.finish().expect("writing to memory")
}

/// Reads a data value, with caps on both sides of the decompression, and checks it.
pub fn decode<T: SecretValue>(bytes: &[u8]) -> Result<T, Unreadable> {
    let key = T::KEY;
    if bytes.len() > COMPRESSED_BYTES {
        return Err(Unreadable::Oversized { bytes: bytes.len(), limit: COMPRESSED_BYTES });
    }
    let mut json = Vec::new();
    GzDecoder::new(bytes).take(JSON_BYTES + 1).read_to_end(&mut json).map_err(|e| Unreadable::NotGzip { key, message: e.to_string() })?;
    if json.len() as u64 > JSON_BYTES {
        return Err(Unreadable::Inflated { key, limit: JSON_BYTES });
    }
    let value: T = serde_json::from_slice(&json).map_err(|e| Unreadable::NotJson { key, message: e.to_string() })?;
    value.check()?;
    Ok(value)
}

/// One Secret of the state namespace, remembering the resourceVersion it was read at.
pub struct GzSecret<T> {
    api: Api<Secret>,
    namespace: String,
    name: String,
    cluster: String,
    resource_version: Option<String>,
    value: PhantomData<T>,
}

impl<T: SecretValue> GzSecret<T> {
    pub fn new(client: &kube::Client, namespace: &str, name: &str, cluster: &str) -> GzSecret<T> {
        GzSecret {
            api: Api::namespaced(client.clone(), namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            cluster: cluster.to_string(),
            resource_version: None,
            value: PhantomData,
        }
    }

    /// The stored value, decoded and checked to be this cluster's, and the digest of its
    /// stored bytes; `None` when the Secret does not exist. What `write` then compares
    /// with is this read.
    pub async fn read(&mut self) -> Result<Option<(T, Digest)>, StateError> {
        let secret = self.api.get_opt(&self.name).await.map_err(|e| self.api_error(&e))?;
        self.resource_version = secret.as_ref().and_then(|s| s.metadata.resource_version.clone());
        let Some(secret) = secret else { return Ok(None) };
        let mut data = secret.data.unwrap_or_default();
        let bytes = data.remove(T::KEY).ok_or_else(|| self.corrupt(Unreadable::NoKey { key: T::KEY }))?.0;
        let value: T = decode(&bytes).map_err(|reason| self.corrupt(reason))?;
        if value.cluster() != self.cluster {
            return Err(self.corrupt(Unreadable::OtherCluster { cluster: value.cluster().to_string() }));
        }
        Ok(Some((value, Digest::of(&bytes))))
    }

    /// Writes `value` (as [`encode`] makes it) if the Secret is still as it was read (or
    /// still absent).
    pub async fn write(&mut self, value: Vec<u8>) -> Result<(), StateError> {
        let secret = Secret {
            metadata: meta(&self.namespace, &self.name, &self.cluster, self.resource_version.clone()),
            type_: Some("Opaque".into()),
            data: Some([(T::KEY.to_string(), ByteString(value))].into()),
            ..Secret::default()
        };
        let params = PostParams { field_manager: Some(MANAGER.into()), ..PostParams::default() };
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
                Err(StateError::Conflict { secret: self.describe() })
            }
            Err(e) => Err(self.api_error(&e)),
        }
    }

    /// `namespace/name`, for messages.
    pub fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The value read is not one this puller can use.
    fn corrupt(&self, reason: Unreadable) -> StateError {
        let (namespace, name) = (self.namespace.clone(), self.name.clone());
        match T::ROLE {
            Role::State => StateError::Corrupt { namespace, name, reason },
            Role::Inventory => StateError::InventoryCorrupt { namespace, name, reason },
        }
    }

    fn api_error(&self, e: &kube::Error) -> StateError {
        if namespace_missing(e) {
            return StateError::NoNamespace { namespace: self.namespace.clone() };
        }
        StateError::Api { secret: self.describe(), message: describe_api_error(e) }
    }
}
