//! Why a kept object could not be used: [`StateError`] names the object and what went
//! wrong with it (unreadable, changed by another writer, no namespace, refused by the API
//! server); [`Unreadable`] says why a stored value is not one this puller can use. Both
//! the codec (`gz_secret`) and the pair of Secrets (`state_store`) produce them; which exit
//! code they lead to is `failure`'s business.

/// Why a value read from one of the puller's Secrets cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unreadable {
    /// Larger than the API server lets a Secret be: not written by a puller.
    #[error("{bytes} bytes, over {limit}")]
    Oversized { bytes: usize, limit: usize },
    #[error("{key} is not gzip: {message}")]
    NotGzip { key: &'static str, message: String },
    /// A gzip bomb, or not the puller's value.
    #[error("{key} decompresses to more than {limit} bytes")]
    Inflated { key: &'static str, limit: u64 },
    #[error("{key}: {message}")]
    NotJson { key: &'static str, message: String },
    #[error("no {key} key")]
    NoKey { key: &'static str },
    /// A value that names another cluster is not this puller's to use.
    #[error("it belongs to cluster {cluster}")]
    OtherCluster { cluster: String },
}

/// Why the state, the inventory or the kept report could not be read or written. Every
/// one of them stops the run before it writes anything it should not, and none is
/// retried within the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    #[error(
        "state Secret {namespace}/{name} is unreadable: {reason}. To recover, delete it (kubectl -n {namespace} delete \
         secret {name}); the next run takes the floor from the kept report"
    )]
    Corrupt { namespace: String, name: String, reason: Unreadable },
    #[error(
        "inventory Secret {namespace}/{name} is unreadable: {reason}. To recover, delete it (kubectl -n {namespace} \
         delete secret {name}); the next run cannot prune objects of earlier versions"
    )]
    InventoryCorrupt { namespace: String, name: String, reason: Unreadable },
    /// Another writer changed the Secret since this run read it (compare-and-swap lost).
    #[error("state Secret {secret} changed during the run (another puller?); nothing was recorded, the next run retries")]
    Conflict { secret: String },
    #[error("state namespace {namespace} does not exist; registration creates it")]
    NoNamespace { namespace: String },
    /// The API server refused or failed the request.
    #[error("state Secret {secret}: {message}")]
    Api { secret: String, message: String },
    /// The API server refused or failed a request for the kept report, which is read for
    /// the floor when the state Secret is missing.
    #[error("report ConfigMap {config_map}: {message}")]
    ReportApi { config_map: String, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_errors_say_how_to_recover() {
        let (namespace, name) = ("airlock-system".to_string(), "airlock-state-edge-1".to_string());
        let reason = Unreadable::NoKey { key: "state.json.gz" };
        let e = StateError::Corrupt { namespace: namespace.clone(), name: name.clone(), reason: reason.clone() };
        let text = e.to_string();
        assert!(text.starts_with("state Secret airlock-system/airlock-state-edge-1 is unreadable: no state.json.gz key."), "{text}");
        assert!(text.contains("kubectl -n airlock-system delete secret airlock-state-edge-1"), "{e}");
        let e = StateError::InventoryCorrupt { namespace, name: "airlock-inventory-edge-1".into(), reason };
        let text = e.to_string();
        assert!(text.starts_with("inventory Secret") && text.contains("delete secret airlock-inventory-edge-1"), "{text}");
    }
}
