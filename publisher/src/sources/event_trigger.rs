//! A Sveltos EventTrigger as the publisher uses it: which clusters it watches
//! (`sourceClusterSelector`, `clusterSetRefs`, as Sveltos matches them), which
//! EventSource it names (carried in those clusters' bundles as an evaluation,
//! bundles-format.md 5.14), and the add-ons it deploys when the event happens, kept as
//! written for instantiation per cluster or per event (`oneForEvent`). Reading one is
//! `parse::event_trigger`'s.

use serde_json::Value;

use super::model::{ClusterSet, SveltosCluster};
use super::selector::Selector;

/// An EventTrigger, read.
#[derive(Debug, Clone, PartialEq)]
pub struct EventTrigger {
    pub name: String,
    /// `eventSourceName`.
    pub event_source: String,
    /// `sourceClusterSelector`; `None` when it selects by sets only.
    pub selector: Option<Selector>,
    /// `clusterSetRefs`: names of ClusterSets.
    pub set_refs: Vec<String>,
    /// `oneForEvent`: one instance per matching object rather than one per cluster.
    pub one_for_event: bool,
    /// The whole object: the add-on fields are instantiated from its `spec`.
    pub object: Value,
}

impl EventTrigger {
    /// Whether the trigger watches `cluster`: its selector matches the cluster's labels,
    /// or one of its ClusterSets lists it.
    pub fn watches(&self, cluster: &SveltosCluster, sets: &[ClusterSet]) -> bool {
        self.selector.as_ref().is_some_and(|s| s.matches(&cluster.labels))
            || sets.iter().any(|set| set.namespace.is_none() && self.set_refs.contains(&set.name) && set.selected.contains(&cluster.id))
    }
}
