//! What every registration object carries: the puller's name, the labels that find them
//! all, and the JSON form they are written in. Both `manifests` and `rbac` build on it.

use airlock_cli::meta::object_meta;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

/// Name of the puller's ServiceAccount, ConfigMap, Service, CronJob and RBAC objects.
pub const PULLER: &str = "airlock-puller";

/// An object as JSON; k8s-openapi adds `apiVersion` and `kind`.
pub fn doc<T: Serialize>(object: &T) -> Result<Value, serde_json::Error> {
    serde_json::to_value(object)
}

/// Metadata with the labels every registration object carries, so
/// `kubectl get all,cm,secret -l app.kubernetes.io/part-of=airlock` finds them.
pub fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    object_meta(name, namespace, [("app.kubernetes.io/name", PULLER), ("app.kubernetes.io/part-of", "airlock")], [])
}
