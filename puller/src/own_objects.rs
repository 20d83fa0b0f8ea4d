//! What the puller's own bookkeeping objects (state Secret, Lease, report ConfigMap) have in
//! common: the labels that mark them. How API errors on them are told apart is
//! `airlock_cli`'s, shared with the publisher. The objects a bundle applies are the
//! engine's business, not this module's.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Field manager and `app.kubernetes.io/managed-by` value of the puller's own objects.
pub const MANAGER: &str = "airlock-puller";

/// The annotation naming the cluster a puller object belongs to.
pub const ANNOTATION_CLUSTER: &str = "airlock.dev/cluster";

/// Metadata for one of the puller's objects of `cluster`.
pub fn meta(namespace: &str, name: &str, cluster: &str, resource_version: Option<String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        labels: Some(BTreeMap::from([("app.kubernetes.io/managed-by".to_string(), MANAGER.to_string())])),
        annotations: Some(BTreeMap::from([(ANNOTATION_CLUSTER.to_string(), cluster.to_string())])),
        resource_version,
        ..ObjectMeta::default()
    }
}
