//! Where kustomize's built-in schema merges lists by key, and which kinds it knows to be
//! cluster-scoped: lookups over the generated table in `merge_keys`.
//!
//! A [`Schema`] is a place in that table. The table holds only the fields that lead to a
//! merged list, so "no schema" and "a schema that merges nothing below" read the same, as
//! they do for kustomize. One approximation follows from the pruning: where kyaml has a
//! schema without merged lists (say a `RawExtension`), it would not look up a nested
//! object's own `apiVersion`/`kind`, and this table, not knowing the place, lets the walker
//! do so. Built-in kinds rarely nest such objects.

use super::merge_keys::{CLUSTER_SCOPED, KINDS, NODES};
use super::schema_node::Node;

/// A place in the schema graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Schema(u16);

impl Schema {
    /// The schema of a built-in kind, as kyaml's `SchemaForResourceType` finds it.
    pub(super) fn of_kind(api_version: &str, kind: &str) -> Option<Schema> {
        let kinds = lookup(KINDS, api_version)?;
        let at = kinds.binary_search_by(|(k, _)| (*k).cmp(kind)).ok()?;
        Some(Schema(kinds[at].1))
    }

    fn node(self) -> &'static Node {
        &NODES[usize::from(self.0)]
    }

    /// The schema of a map's field (kyaml's `Field`).
    pub(super) fn field(self, name: &str) -> Option<Schema> {
        match self.node() {
            Node::Object(fields) => {
                let at = fields.binary_search_by(|(f, _)| (*f).cmp(name)).ok()?;
                Some(Schema(fields[at].1))
            }
            Node::List(..) => None,
        }
    }

    /// The schema of a list's items.
    pub(super) fn elements(self) -> Option<Schema> {
        match self.node() {
            Node::List(_, items) => items.map(Schema),
            Node::Object(_) => None,
        }
    }

    /// The merge keys when this is a list merged by its schema (`x-kubernetes-patch-strategy`
    /// includes `merge`); an empty slice merges the list's scalars.
    pub(super) fn merge_keys(self) -> Option<&'static [&'static str]> {
        match self.node() {
            Node::List(keys, _) => Some(keys),
            Node::Object(_) => None,
        }
    }
}

/// Whether kustomize's schema says the kind is cluster-scoped; unknown kinds are not.
pub(crate) fn is_cluster_scoped(api_version: &str, kind: &str) -> bool {
    lookup(CLUSTER_SCOPED, api_version).is_some_and(|kinds| kinds.binary_search(&kind).is_ok())
}

fn lookup<T: 'static>(table: &'static [(&'static str, T)], api_version: &str) -> Option<&'static T> {
    let at = table.binary_search_by(|(v, _)| (*v).cmp(api_version)).ok()?;
    Some(&table[at].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_for_binary_search() {
        assert!(KINDS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(KINDS.iter().all(|(_, kinds)| kinds.windows(2).all(|w| w[0].0 < w[1].0)));
        assert!(CLUSTER_SCOPED.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(CLUSTER_SCOPED.iter().all(|(_, kinds)| kinds.windows(2).all(|w| w[0] < w[1])));
        for node in NODES {
            if let Node::Object(fields) = node {
                assert!(fields.windows(2).all(|w| w[0].0 < w[1].0));
            }
        }
    }

    #[test]
    fn containers_merge_by_name_and_ports_by_port_and_protocol() {
        let deployment = Schema::of_kind("apps/v1", "Deployment").unwrap();
        let pod_spec = deployment.field("spec").and_then(|s| s.field("template")).and_then(|s| s.field("spec")).unwrap();
        let containers = pod_spec.field("containers").unwrap();
        assert_eq!(containers.merge_keys(), Some(&["name"][..]));
        let ports = containers.elements().and_then(|c| c.field("ports")).unwrap();
        assert_eq!(ports.merge_keys(), Some(&["containerPort", "protocol"][..]));
        let finalizers = deployment.field("metadata").and_then(|m| m.field("finalizers")).unwrap();
        assert_eq!(finalizers.merge_keys(), Some(&[][..]));
        assert_eq!(pod_spec.field("nodeSelector"), None, "maps of strings merge nothing by key");
    }

    #[test]
    fn custom_resources_have_no_schema() {
        assert_eq!(Schema::of_kind("example.com/v1", "Widget"), None);
        assert!(is_cluster_scoped("v1", "Namespace"));
        assert!(!is_cluster_scoped("v1", "ConfigMap"));
        assert!(!is_cluster_scoped("example.com/v1", "Widget"));
    }
}
