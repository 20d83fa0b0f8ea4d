//! Typed readers of what the puller keeps in the cluster for one cluster: the state Secret,
//! the inventory Secret and the report ConfigMap, so tests check fields rather than grep
//! text. The state and the inventory are read into the tests' own small structs, a
//! reading of the format apart from the puller's code; the report into the report type the
//! puller writes (`airlock_puller::reports::report::Report`, the contract's payload).

use std::collections::BTreeMap;
use std::io::Read;

use airlock_bundle::{ClusterId, Digest};
use airlock_puller::engine::InventoryEntry;
use airlock_puller::reports::report::Report;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// The data key of the state Secret `airlock-state-<cluster name>`.
pub const STATE_KEY: &str = "state.json.gz";
/// The data key of the inventory Secret `airlock-inventory-<cluster name>`.
pub const INVENTORY_KEY: &str = "inventory.json.gz";
/// The data key of the report ConfigMap `airlock-report-<cluster name>`.
pub const REPORT_KEY: &str = "report.json";

/// What the state Secret holds, as far as the tests look.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub cluster: String,
    pub version: u64,
    pub digest: Digest,
    /// The inventory Secret's digest, when the inventory is kept apart.
    pub inventory_digest: Option<Digest>,
    /// The inventory kept inline, as the earlier layout did.
    pub inventory: Option<serde_json::Value>,
    /// The signed keyring updates kept from the last rotation, a JSON array.
    pub keyring_chain: Option<Vec<serde_json::Value>>,
    /// The version of the keyring that verified the applied bundle.
    pub keyring_version: Option<u64>,
    /// Runs in a row that failed a part with a `maxConsecutiveFailures`.
    #[serde(default)]
    pub failures: Vec<PartFailures>,
    /// Per workload of a reloader part, the digest of what it mounts.
    #[serde(default)]
    pub mounted: Vec<serde_json::Value>,
    /// Per part, the delete checks to run when it leaves the bundle.
    #[serde(default)]
    pub delete_checks: Vec<serde_json::Value>,
}

/// Of a part, the runs in a row that failed to apply it at one digest.
#[derive(Debug, Deserialize, PartialEq, Eq)]
pub struct PartFailures {
    pub part: String,
    pub digest: Digest,
    pub runs: u32,
}

/// What the inventory Secret holds.
#[derive(Debug, Deserialize)]
pub struct Inventory {
    pub cluster: String,
    pub version: u64,
    pub digest: Digest,
    pub objects: Vec<InventoryEntry>,
}

/// What the report ConfigMap holds: the report, and per action the objects left out of it
/// to fit.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptReport {
    #[serde(flatten)]
    pub report: Report,
    #[serde(default)]
    pub omitted_objects: BTreeMap<String, u64>,
}

/// The puller's objects of `cluster` in the state namespace `namespace`.
pub struct Kept {
    client: kube::Client,
    namespace: String,
    cluster: ClusterId,
}

impl Kept {
    pub fn new(client: &kube::Client, namespace: &str, cluster: &ClusterId) -> Kept {
        Kept { client: client.clone(), namespace: namespace.to_string(), cluster: cluster.clone() }
    }

    /// The name of the object `<prefix><cluster name>`.
    pub fn name(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.cluster.name())
    }

    /// The state, if there is a state Secret.
    pub async fn state(&self) -> Option<State> {
        self.secret_json("airlock-state-", STATE_KEY).await
    }

    /// The inventory, if there is an inventory Secret.
    pub async fn inventory(&self) -> Option<Inventory> {
        self.secret_json("airlock-inventory-", INVENTORY_KEY).await
    }

    /// The state Secret's value as stored (gzip'd JSON), if there is one.
    pub async fn state_bytes(&self) -> Option<Vec<u8>> {
        self.secret_data("airlock-state-", STATE_KEY).await
    }

    /// The kept report; the ConfigMap must exist.
    pub async fn report(&self) -> KeptReport {
        let data = self.report_map().await.data.expect("report ConfigMap data");
        serde_json::from_str(data.get(REPORT_KEY).expect("report.json key")).expect("a kept report")
    }

    /// The report ConfigMap's resourceVersion; the ConfigMap must exist.
    pub async fn report_version(&self) -> String {
        self.report_map().await.metadata.resource_version.expect("resourceVersion")
    }

    async fn report_map(&self) -> ConfigMap {
        let api = Api::<ConfigMap>::namespaced(self.client.clone(), &self.namespace);
        api.get(&self.name("airlock-report-")).await.expect("report ConfigMap")
    }

    async fn secret_json<T: DeserializeOwned>(&self, prefix: &str, key: &str) -> Option<T> {
        let json = gunzip(&self.secret_data(prefix, key).await?);
        Some(serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{key} of {}: {e}", self.name(prefix))))
    }

    async fn secret_data(&self, prefix: &str, key: &str) -> Option<Vec<u8>> {
        let name = self.name(prefix);
        let secret = Api::<Secret>::namespaced(self.client.clone(), &self.namespace).get_opt(&name).await.expect("Secret read")?;
        Some(secret.data.expect("Secret data").remove(key).unwrap_or_else(|| panic!("{key} key in {name}")).0)
    }
}

pub fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).expect("gzip");
    out
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, bytes).expect("writing to memory");
    gz.finish().expect("writing to memory")
}
