//! What the caller tells the engine about this cluster: its id, the watch-namespaces in
//! effect and what to do with objects outside them, the puller's own namespace, dry-run and
//! how many requests to keep in flight. Choosing these is the caller's business.

use serde::{Deserialize, Serialize};

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
    /// The puller's own namespace, where the relayed store-credentials Secret may be
    /// written whatever the watch-namespaces (spec 2.6); None: no such exception.
    pub own_namespace: Option<String>,
    /// Server-side dry-run: nothing is written.
    pub dry_run: bool,
    /// Requests in flight at once.
    pub concurrency: usize,
}
