//! The objects a check or an evaluation judges: one kind, listed in one namespace or in
//! all, by label selector (and name, for an evaluation), with the kind resolved by discovery. A kind the cluster does not serve
//! lists nothing judged (`None`), as libsveltos treats a missing CRD.

use airlock_bundle::statement::Selection;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{GroupVersionKind, TypeMeta};
use kube::discovery::{self, Scope};

/// The objects `selection` names, as JSON; `None` when the kind is not served.
pub async fn list(client: &kube::Client, selection: &Selection) -> Result<Option<Vec<serde_json::Value>>, String> {
    let gvk = GroupVersionKind::gvk(&selection.group, &selection.version, &selection.kind);
    let (resource, capabilities) = match discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
        Err(kube::Error::Discovery(_)) => return Ok(None),
        Err(e) => return Err(format!("discovery of {}: {e}", describe(selection))),
    };
    let api: Api<DynamicObject> = match (&selection.namespace, capabilities.scope) {
        (Some(namespace), Scope::Namespaced) => Api::namespaced_with(client.clone(), namespace, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    let mut params = ListParams::default();
    if !selection.label_selector.is_empty() {
        params = params.labels(&selection.label_selector);
    }
    if let Some(name) = &selection.name {
        params = params.fields(&format!("metadata.name={name}"));
    }
    let listed = api.list(&params).await.map_err(|e| format!("listing {}: {e}", describe(selection)))?;
    // The items of a list carry no kind of their own; the scripts read it, as Sveltos's get it.
    let types = TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() };
    let objects = listed
        .items
        .into_iter()
        .map(|o| serde_json::to_value(DynamicObject { types: Some(types.clone()), ..o }).expect("a listed object is JSON"))
        .collect();
    Ok(Some(objects))
}

/// `apps/v1 Deployment in web with app=web`, for messages.
pub fn describe(selection: &Selection) -> String {
    let api_version =
        if selection.group.is_empty() { selection.version.clone() } else { format!("{}/{}", selection.group, selection.version) };
    let mut text = format!("{api_version} {}", selection.kind);
    if let Some(name) = &selection.name {
        text.push_str(&format!(" named {name}"));
    }
    if let Some(namespace) = &selection.namespace {
        text.push_str(&format!(" in {namespace}"));
    }
    if !selection.label_selector.is_empty() {
        text.push_str(&format!(" with {}", selection.label_selector));
    }
    text
}

/// `Deployment web/api` (or `Namespace web`), naming one listed object.
pub fn name_of(object: &serde_json::Value) -> String {
    let field = |pointer: &str| object.pointer(pointer).and_then(serde_json::Value::as_str).unwrap_or_default();
    match field("/metadata/namespace") {
        "" => format!("{} {}", field("/kind"), field("/metadata/name")),
        namespace => format!("{} {namespace}/{}", field("/kind"), field("/metadata/name")),
    }
}
