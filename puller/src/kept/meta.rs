//! What the puller's own objects in the state namespace (state and inventory Secrets,
//! Lease, report ConfigMap) have in common: their names, `<prefix><cluster name>` cut to
//! what Kubernetes allows, and the labels, annotation and field manager that mark them.
//! How API errors on them are told apart is `airlock_cli`'s, shared with the publisher.
//! The objects a bundle applies are the engine's business, not this module's.

use airlock_bundle::ClusterId;
use airlock_bundle::digest::{HASH_SUFFIX_BYTES, hash_suffixed};
use airlock_bundle::vocabulary::CLUSTER_ANNOTATION;
use airlock_cli::meta::{MANAGED_BY, object_meta};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Field manager and `app.kubernetes.io/managed-by` value of the puller's own objects.
pub const MANAGER: &str = "airlock-puller";

/// Prefixes of the puller's objects, followed by the cluster name.
pub const STATE_PREFIX: &str = "airlock-state-";
pub const INVENTORY_PREFIX: &str = "airlock-inventory-";
pub const LEASE_PREFIX: &str = "airlock-puller-";
pub const REPORT_PREFIX: &str = "airlock-report-";

/// Kubernetes object names (DNS subdomains) are at most this long.
const MAX_OBJECT_NAME: usize = 253;

/// Where one cluster's puller objects are: the state namespace and their names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    pub namespace: String,
    pub state: String,
    pub inventory: String,
    pub lease: String,
    pub report: String,
}

impl Names {
    /// The objects of `cluster` in the state namespace `namespace`.
    pub fn of(namespace: &str, cluster: &ClusterId) -> Names {
        let name = |prefix| object_name(prefix, cluster.name());
        Names {
            namespace: namespace.to_string(),
            state: name(STATE_PREFIX),
            inventory: name(INVENTORY_PREFIX),
            lease: name(LEASE_PREFIX),
            report: name(REPORT_PREFIX),
        }
    }

    /// `namespace/name` of one of them, for messages.
    pub fn describe(&self, name: &str) -> String {
        format!("{}/{name}", self.namespace)
    }
}

/// `<prefix><cluster name>`, or, when that is too long for Kubernetes, a prefix of it with
/// a hash of the whole.
fn object_name(prefix: &str, cluster_name: &str) -> String {
    let full = format!("{prefix}{cluster_name}");
    if full.len() <= MAX_OBJECT_NAME {
        return full;
    }
    // Cluster names are ASCII, so any byte index is a char boundary. The cut must not
    // end in '.' or '-': "-<hash>" would then start or extend a label wrongly.
    let head = full[..MAX_OBJECT_NAME - HASH_SUFFIX_BYTES].trim_end_matches(['.', '-']);
    hash_suffixed(head, full.as_bytes())
}

/// Metadata for one of the puller's objects of `cluster`.
pub fn meta(namespace: &str, name: &str, cluster: &str, resource_version: Option<String>) -> ObjectMeta {
    ObjectMeta { resource_version, ..object_meta(name, Some(namespace), [(MANAGED_BY, MANAGER)], [(CLUSTER_ANNOTATION, cluster)]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kubernetes' own rule for these names (IsDNS1123Subdomain): at most 253 bytes of
    /// dot-separated labels of [a-z0-9-] starting and ending alphanumeric, of any length.
    fn kubernetes_accepts(name: &str) -> bool {
        let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        name.len() <= MAX_OBJECT_NAME
            && name.split('.').all(|l| {
                !l.is_empty() && l.bytes().all(|b| alnum(b) || b == b'-') && alnum(l.as_bytes()[0]) && alnum(l.as_bytes()[l.len() - 1])
            })
    }

    #[test]
    fn object_names_fit_kubernetes() {
        assert_eq!(object_name("airlock-state-", "edge-1"), "airlock-state-edge-1");
        let long = format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
        let name = object_name("airlock-state-", &long);
        assert_eq!(name.len(), MAX_OBJECT_NAME);
        assert!(kubernetes_accepts(&name), "{name}");
        assert_ne!(name, object_name("airlock-state-", &long[..long.len() - 1]));
        // Shifting the dots makes one of the cuts land on a '.'.
        for pad in 1..=8 {
            let cluster = format!("{}{}", "y".repeat(pad), ".abcdefg".repeat(30));
            assert!(airlock_bundle::cluster::is_dns_subdomain(&cluster));
            let name = object_name("airlock-state-", &cluster);
            assert!(kubernetes_accepts(&name), "{name}");
        }
    }

    #[test]
    fn names_every_object_of_a_cluster() {
        let names = Names::of("airlock-system", &"fleet/edge-1".parse().unwrap());
        assert_eq!(
            [&names.state, &names.inventory, &names.lease, &names.report],
            ["airlock-state-edge-1", "airlock-inventory-edge-1", "airlock-puller-edge-1", "airlock-report-edge-1"]
        );
        assert_eq!(names.describe(&names.state), "airlock-system/airlock-state-edge-1");
    }
}
