//! The Namespaces Sveltos creates implicitly: before it applies a namespaced object of a
//! policyRef, it creates that object's namespace, bare, when the cluster lacks it, and
//! never deletes it (libsveltos `CreateNamespace`), unless the reference sets
//! `skipNamespaceCreation`. The puller cannot know which namespaces a profile merely uses,
//! so the bundle carries them: a bare `v1` Namespace per namespace used, annotated
//! `airlock.dev/create-only: "true"` (bundles-format.md 2.5.1), unless the profile deploys
//! that Namespace itself. Entry point: [`implicit`].

use std::collections::BTreeSet;
use std::sync::Arc;

use airlock_bundle::vocabulary::CREATE_ONLY_ANNOTATION;
use serde_json::json;

use super::content::Rendered;
use super::object::Object;
use crate::sources::ObjectKey;
use crate::yaml;

/// The create-only Namespaces the objects of `rendered` need, for the profile `profile`.
pub fn implicit(profile: &str, rendered: &[Rendered]) -> Vec<Arc<Object>> {
    let deployed: BTreeSet<&str> = rendered
        .iter()
        .filter(|r| r.manifest.key.group.is_empty() && r.manifest.key.kind == "Namespace")
        .map(|r| r.manifest.key.name.as_str())
        .collect();
    let needed: BTreeSet<&str> = rendered
        .iter()
        .filter(|r| r.create_namespace && !r.manifest.key.namespace.is_empty())
        .map(|r| r.manifest.key.namespace.as_str())
        .filter(|ns| !deployed.contains(ns))
        .collect();
    needed
        .into_iter()
        .map(|ns| {
            let value = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "annotations": {CREATE_ONLY_ANNOTATION: "true"}},
            });
            Arc::new(Object {
                key: ObjectKey::new("v1", "Namespace", "", ns),
                origin: format!("{profile}: the namespace of its objects in {ns}"),
                yaml: yaml::emit(&[value]).into(),
                implicit: true,
                confidential: false,
            })
        })
        .collect()
}
