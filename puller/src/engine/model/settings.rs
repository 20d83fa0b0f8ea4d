//! What the caller tells the engine about this cluster: its id, the watch-namespaces in
//! effect and what to do with objects outside them, the puller's own namespace, the
//! cluster-scoped objects allowed, the Namespace keys and kinds containment keeps from a
//! bundle, dry-run, how many requests to keep in flight, and the parts to leave alone this run. Choosing
//! these is the caller's business.

use std::collections::BTreeMap;

use airlock_bundle::statement::ClusterScopedObject;
use serde::{Deserialize, Serialize};

use crate::engine::model::tenants::Tenants;

/// How the puller restricts namespaced objects outside the watch-namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum NamespacePolicy {
    /// Refuse the whole bundle when any namespaced object is outside the list.
    #[default]
    Reject,
    /// Drop those objects, report them, apply the rest.
    Filter,
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// `<namespace>/<name>` of this cluster, for labels.
    pub cluster: String,
    /// Effective watch-namespaces (local setting narrowed by the bundle's); None = all.
    pub watch_namespaces: Option<Vec<String>>,
    pub namespace_policy: NamespacePolicy,
    /// The puller's own namespace: with watch-namespaces, nothing of a bundle may land there
    /// but the relayed store-credentials Secret (spec 2.6, 5.2); None: no such exception.
    pub own_namespace: Option<String>,
    /// The bundle's signed `clusterScoped`: the cluster-scoped objects allowed, with
    /// watch-namespaces, besides the Namespaces of the list (spec 5.2).
    pub cluster_scoped: Vec<ClusterScopedObject>,
    /// Server-side dry-run: nothing is written.
    pub dry_run: bool,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Parts left as they are this run, with why (the caller counts the runs that failed
    /// them, spec 5.7): their objects are skipped, and neither applied nor pruned.
    pub held_back: BTreeMap<String, String>,
    /// Whether this puller decrypts (it holds an age identity): a `Secret` must then come
    /// encrypted, unless the bundle allows it in clear (spec 2.7).
    pub decrypts: bool,
    /// A version that would prune more than the mass-prune guard lets through is applied
    /// anyway: confirmed by the bundle's signed `allowMassPrune` or the local override
    /// (spec 2.5.4).
    pub allow_mass_prune: bool,
    /// With watch-namespaces: label and annotation patterns of Namespaces a bundle may not
    /// set, besides Pod Security's, which are always protected (spec 5.12). Local only.
    pub protected_namespace_keys: Vec<String>,
    /// With watch-namespaces: Endpoints and EndpointSlices may be written, which lets a
    /// bundle point a Service at any address (spec 5.12). Local only; false refuses them.
    pub allow_endpoints: bool,
    /// The clients that write as the tenant ServiceAccounts the parts name (spec 5.3);
    /// a part naming one without a client here is not written.
    pub tenants: Tenants,
}
