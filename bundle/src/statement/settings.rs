//! The settings a bundle relays from its cluster's SveltosCluster and registration (spec
//! 5.2): one struct that the statement's predicate, the publisher's release and its memo
//! all embed, so a setting added or renamed is added or renamed in all of them at once.
//! Reading them off a SveltosCluster is the publisher's business, acting on them the
//! puller's.

use serde::{Deserialize, Serialize};

use super::{ActiveWindow, ClusterScopedObject, Evaluation};

/// A cluster's settings as a statement carries them. Each is left out of the JSON while it
/// holds its default, so a bundle that needs none of them reads as it always did; the
/// predicate embeds them flattened, its fields in this order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSettings {
    /// The namespaces the cluster may be changed in (spec 5.2); absent means no
    /// restriction from the publisher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_namespaces: Option<Vec<String>>,
    /// When the puller may change the cluster (spec 5.2); absent means always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_window: Option<ActiveWindow>,
    /// The age recipients every encrypted file is encrypted to, the cluster's own first
    /// (spec 2.7); absent when no file is encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<String>>,
    /// Whether a puller that decrypts may still apply a `Secret` that came in clear (spec 2.7).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_plaintext_secrets: bool,
    /// Confirms a mass prune: the puller applies a version that prunes more than the
    /// mass-prune guard lets through unconfirmed (spec 2.5.4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_mass_prune: bool,
    /// The cluster-scoped objects a bundle may hold on a cluster with watch-namespaces,
    /// besides the Namespaces of the list (spec 5.2); sorted, no duplicates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_scoped: Vec<ClusterScopedObject>,
    /// What the puller evaluates on the cluster and reports back (spec 5.14), sorted by
    /// kind and name; absent when there is nothing to evaluate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluations: Vec<Evaluation>,
}
