//! What `deregister cluster` deletes on the management side, in an order a failure can
//! resume from: the objects found through the SveltosCluster first (the credentials Secret
//! its annotation names), the objects `ingest` wrote, and the SveltosCluster last. Only what
//! airlock-publisher wrote is deleted: a Secret it did not apply, or a ClusterConfiguration
//! another manager (Sveltos's addon-controller) also writes, is left and said so.

use airlock_bundle::ClusterId;
use airlock_bundle::vocabulary::STORE_CREDENTIALS_ANNOTATION;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

use crate::annotations::FIELD_MANAGER;
use crate::cmd::ingest::addons::{self, CLUSTER_NAME_LABEL};
use crate::cmd::register::SECRET_SUFFIX;
use crate::sources::live::sveltos_kinds;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeleteError {
    #[error("management cluster: {what}: {message}")]
    Object { what: String, message: String },
}

/// Whose writes an object holds.
#[derive(Clone, Copy)]
enum Ours {
    /// Some field is airlock-publisher's: registration applied the object.
    Some,
    /// Every field is airlock-publisher's: nobody else writes the object.
    Only,
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn is_ours(object: &DynamicObject, ours: Ours) -> bool {
    let managers: Vec<&str> = object.metadata.managed_fields.iter().flatten().filter_map(|m| m.manager.as_deref()).collect();
    match ours {
        Ours::Some => managers.contains(&FIELD_MANAGER),
        Ours::Only => !managers.is_empty() && managers.iter().all(|m| *m == FIELD_MANAGER),
    }
}

/// `kind.group/name`, as kubectl names what it deletes.
fn display(resource: &ApiResource, name: &str) -> String {
    let kind = resource.plural.trim_end_matches('s').to_string();
    if resource.group.is_empty() { format!("{kind}/{name}") } else { format!("{kind}.{}/{name}", resource.group) }
}

/// Deletes `name` of `api` when it exists and is `ours`; the line that says what happened.
async fn delete_one(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    name: &str,
    ours: Ours,
    dry_run: bool,
) -> Result<String, DeleteError> {
    let shown = display(resource, name);
    let error = |e: kube::Error| DeleteError::Object { what: shown.clone(), message: e.to_string() };
    let found = match api.get_opt(name).await {
        Ok(found) => found,
        // The kind is not served: nothing of it was ever written.
        Err(kube::Error::Api(s)) if s.is_not_found() => None,
        Err(e) => return Err(error(e)),
    };
    let Some(found) = found else { return Ok(format!("{shown} not found (already gone)")) };
    if !is_ours(&found, ours) {
        return Ok(format!("{shown} left: airlock-publisher did not write it alone"));
    }
    let params = DeleteParams { dry_run, ..DeleteParams::background() };
    match api.delete(name, &params).await {
        Ok(_) => Ok(format!("{shown} deleted{}", if dry_run { " (server dry run)" } else { "" })),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(format!("{shown} not found (already gone)")),
        Err(e) => Err(error(e)),
    }
}

/// Deletes what registration and ingest wrote for `cluster`, whose SveltosCluster is
/// `object` (None: already gone); one line per object.
pub async fn delete(client: &kube::Client, cluster: &ClusterId, object: Option<&Value>, dry_run: bool) -> Result<Vec<String>, DeleteError> {
    let ns = cluster.namespace();
    let mut lines = Vec::new();
    let secrets = resource("", "v1", "Secret", "secrets");
    let secret = object
        .and_then(|o| o["metadata"]["annotations"][STORE_CREDENTIALS_ANNOTATION].as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{}{SECRET_SUFFIX}", cluster.name()));
    let api = Api::namespaced_with(client.clone(), ns, &secrets);
    lines.push(delete_one(&api, &secrets, &secret, Ours::Some, dry_run).await?);

    let configurations = resource("config.projectsveltos.io", "v1beta1", "ClusterConfiguration", "clusterconfigurations");
    let api = Api::namespaced_with(client.clone(), ns, &configurations);
    lines.push(delete_one(&api, &configurations, &addons::configuration_name(cluster), Ours::Only, dry_run).await?);

    let reports = resource("config.projectsveltos.io", "v1beta1", "ClusterReport", "clusterreports");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &reports);
    let selector = format!("{CLUSTER_NAME_LABEL}={}", cluster.name());
    let listed = match api.list(&ListParams::default().labels(&selector)).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(s)) if s.is_not_found() => Vec::new(),
        Err(e) => return Err(DeleteError::Object { what: "ClusterReports".into(), message: e.to_string() }),
    };
    for report in listed.iter().filter(|r| is_ours(r, Ours::Only)) {
        let name = report.metadata.name.as_deref().unwrap_or_default();
        lines.push(delete_one(&api, &reports, name, Ours::Only, dry_run).await?);
    }

    let [(clusters, _), ..] = sveltos_kinds();
    let api = Api::namespaced_with(client.clone(), ns, &clusters);
    lines.push(delete_one(&api, &clusters, cluster.name(), Ours::Some, dry_run).await?);
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(managers: &[&str]) -> DynamicObject {
        let fields: Vec<Value> = managers.iter().map(|m| json!({"manager": m, "operation": "Apply"})).collect();
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "managedFields": fields}})).unwrap()
    }

    #[test]
    fn deletes_only_what_airlock_publisher_wrote() {
        assert!(is_ours(&object(&["airlock-publisher", "kubectl"]), Ours::Some));
        assert!(!is_ours(&object(&["airlock-publisher", "addon-controller"]), Ours::Only));
        assert!(is_ours(&object(&["airlock-publisher"]), Ours::Only));
        assert!(!is_ours(&object(&["kubectl"]), Ours::Some) && !is_ours(&object(&[]), Ours::Only));
    }

    #[test]
    fn names_objects_as_kubectl_does() {
        assert_eq!(display(&resource("", "v1", "Secret", "secrets"), "x"), "secret/x");
        let [(clusters, _), ..] = sveltos_kinds();
        assert_eq!(display(&clusters, "edge-1"), "sveltoscluster.lib.projectsveltos.io/edge-1");
    }
}
