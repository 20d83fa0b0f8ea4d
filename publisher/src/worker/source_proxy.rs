//! The worker's view of the management cluster: each read made by the signer, with its
//! client; what comes back is parsed in the worker (`sources::live`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::rpc::Peer;
use super::wire::Call;
use crate::sources::live::ClusterReader;
use crate::sources::{Reference, SourceError};

pub struct SourceProxy {
    peer: Arc<Peer>,
}

impl SourceProxy {
    pub fn new(peer: Arc<Peer>) -> SourceProxy {
        SourceProxy { peer }
    }
}

#[async_trait]
impl ClusterReader for SourceProxy {
    async fn list(&self, plural: &str) -> Result<Vec<Value>, SourceError> {
        let answer: Result<Result<Vec<Value>, SourceError>, _> = self.peer.call("list", &Call::List { plural: plural.into() }).await;
        answer.map_err(|e| SourceError::Kube { what: format!("list {plural}"), message: e.to_string() })?
    }

    async fn get(&self, wanted: &[Reference]) -> Vec<Result<Option<Value>, String>> {
        match self.peer.call("get", &Call::Get { wanted: wanted.to_vec() }).await {
            Ok(read) => read,
            Err(e) => wanted.iter().map(|_| Err(e.to_string())).collect(),
        }
    }
}
