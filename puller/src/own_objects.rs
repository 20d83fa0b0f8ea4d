//! What the puller's own bookkeeping objects (state Secret, Lease, report ConfigMap) have in
//! common: the labels that mark them and how API errors on them are told apart. The
//! objects a bundle applies are the engine's business, not this module's.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Field manager and `app.kubernetes.io/managed-by` value of the puller's own objects.
pub const MANAGER: &str = "airlock-puller";

/// Metadata for one of the puller's objects of `cluster`.
pub fn meta(namespace: &str, name: &str, cluster: &str, resource_version: Option<String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        labels: Some(BTreeMap::from([("app.kubernetes.io/managed-by".to_string(), MANAGER.to_string())])),
        annotations: Some(BTreeMap::from([("airlock.dev/cluster".to_string(), cluster.to_string())])),
        resource_version,
        ..ObjectMeta::default()
    }
}

/// The HTTP status of an API error, if the server answered.
pub fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// A one-line description of an API error: the server's message, not kube's debug dump.
pub fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

/// Whether an API error says the namespace itself is missing (a create into it).
pub fn namespace_missing(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404 && status.message.starts_with("namespaces "))
}
