//! The watch-namespaces policy, checked on the whole bundle before any write. With a watch
//! list, a bundle must gain no permission outside it (spec 5.2, "Containment"):
//!
//! - a namespaced object must be in a watched namespace, and not in the puller's own, where
//!   its state, inventory, Lease and keys live: the one exception there is the
//!   store-credentials Secret the publisher relays in the part `Airlock.system` (spec 2.6),
//!   since the puller cannot read its next bundle without it;
//! - a cluster-scoped object must be a Namespace of the list (a create-only one, spec 2.5.1,
//!   or not) or named in the signed `clusterScoped` allow-list; a CustomResourceDefinition
//!   with a conversion webhook never passes, listed or not, since the API server would send
//!   that webhook every object of the kind;
//! - inside the list too: a Namespace may not set the operator's labels and annotations
//!   (`namespace_keys`), and Endpoints and EndpointSlices, which can point a Service at any
//!   address, pass only when the site allows them.
//!
//! Under `reject` the run stops with every offending object listed, under `filter` the
//! object is dropped and reported. Without a list nothing is restricted, as in Sveltos. The
//! effective list (local setting narrowed by the bundle's) is the caller's business.

use airlock_bundle::path::SYSTEM_PART;
use airlock_bundle::statement::{ClusterScopedObject, ProfileEntry};
use serde_json::Value;

use crate::engine::model::error::EngineError;
use crate::engine::model::order::{CRD_GROUP, CRD_KIND};
use crate::engine::model::outcome::{Action, ObjectResult};
use crate::engine::model::settings::{NamespacePolicy, Settings};
use crate::engine::plan::namespace_keys;
use crate::engine::plan::scope::Target;

/// The Secret with the puller's renewed store credentials (spec 2.6).
pub(crate) const STORE_CREDENTIALS_SECRET: &str = "airlock-store-credentials";
const ENDPOINT_SLICE_GROUP: &str = "discovery.k8s.io";

/// Whether `namespace` is inside the watch list (None: no restriction).
pub(crate) fn watched(watch: Option<&[String]>, namespace: &str) -> bool {
    watch.is_none_or(|list| list.iter().any(|n| n == namespace))
}

/// Why the policy refuses an object.
enum Refusal {
    /// Namespaced in, or a Namespace named, a namespace outside the list.
    Outside(String),
    /// In the puller's own namespace, or that Namespace itself.
    OwnNamespace(String),
    /// Cluster-scoped and neither a watched Namespace nor in `clusterScoped`.
    ClusterScoped,
    /// A CustomResourceDefinition whose conversion strategy is `Webhook`.
    ConversionWebhook,
    /// A Namespace setting protected keys: (`label` or `annotation`, key).
    ProtectedKeys(Vec<(&'static str, String)>),
    /// Endpoints or an EndpointSlice, which the site does not allow.
    Endpoints,
}

impl Refusal {
    fn detail(&self, list: &str) -> String {
        match self {
            Refusal::Outside(namespace) => format!("namespace {namespace} is outside watch-namespaces {list}"),
            Refusal::OwnNamespace(namespace) => format!("namespace {namespace} is the puller's own"),
            Refusal::ClusterScoped => "cluster-scoped and not in clusterScoped".into(),
            Refusal::ConversionWebhook => "a CustomResourceDefinition with a conversion webhook".into(),
            Refusal::ProtectedKeys(keys) => {
                let keys: Vec<String> = keys.iter().map(|(what, key)| format!("{what} {key}")).collect();
                format!("{} protected: set by the cluster's operator, never by a bundle", keys.join(", "))
            }
            Refusal::Endpoints => "Endpoints and EndpointSlices can redirect a Service; the site does not allow them".into(),
        }
    }
}

/// Splits targets into those that may be applied and the results of those refused.
pub(crate) fn enforce(targets: Vec<Target>, settings: &Settings) -> Result<(Vec<Target>, Vec<ObjectResult>), EngineError> {
    let Some(watch) = settings.watch_namespaces.as_deref() else {
        return Ok((targets, Vec::new()));
    };
    let mut kept = Vec::with_capacity(targets.len());
    let mut refused = Vec::new();
    for t in targets {
        match refusal(&t, watch, settings).or_else(|| kept_from_bundle(&t, settings)) {
            None => kept.push(t),
            Some(why) => refused.push((t, why)),
        }
    }
    if refused.is_empty() {
        return Ok((kept, Vec::new()));
    }
    let list = watch.join(",");
    match settings.namespace_policy {
        NamespacePolicy::Reject => Err(EngineError::OutsideWatchNamespaces {
            objects: refused
                .iter()
                .map(|(t, why)| match why {
                    Refusal::Outside(_) => format!("{} ({})", t.object.id, t.object.source),
                    other => format!("{} ({}): {}", t.object.id, t.object.source, other.detail(&list)),
                })
                .collect(),
        }),
        NamespacePolicy::Filter => {
            let results = refused
                .into_iter()
                .map(|(t, why)| ObjectResult {
                    detail: Some(why.detail(&list)),
                    sealed: t.object.sealed,
                    id: t.object.id,
                    profile: t.object.profile,
                    action: Action::Refused,
                })
                .collect();
            Ok((kept, results))
        }
    }
}

/// Holds every part's checks to the watch-namespaces (`checks::refusals`): one that
/// reaches outside refuses the bundle, under `filter` too, since a check left out would
/// pass what it was there to hold back.
pub(crate) fn enforce_checks(profiles: &[ProfileEntry], settings: &Settings) -> Result<(), EngineError> {
    let Some(watch) = settings.watch_namespaces.as_deref() else {
        return Ok(());
    };
    let own = settings.own_namespace.as_deref();
    let refused: Vec<String> = profiles.iter().flat_map(|p| crate::engine::checks::refusals(p, watch, own)).collect();
    if refused.is_empty() { Ok(()) } else { Err(EngineError::OutsideWatchNamespaces { objects: refused }) }
}

/// Why `t` may not be applied on a cluster watching `watch`; None when it may.
fn refusal(t: &Target, watch: &[String], settings: &Settings) -> Option<Refusal> {
    let id = &t.object.id;
    let own = settings.own_namespace.as_deref();
    let namespace = match (t.namespaced, id.group.is_empty() && id.kind == "Namespace") {
        (true, _) => id.namespace.as_deref().unwrap_or_default(),
        (false, true) => id.name.as_str(),
        (false, false) => return cluster_scoped_refusal(t, &settings.cluster_scoped),
    };
    if own == Some(namespace) {
        return (!own_credentials(t, own)).then(|| Refusal::OwnNamespace(namespace.into()));
    }
    if watched(Some(watch), namespace) || (!t.namespaced && allow_listed(t, &settings.cluster_scoped)) {
        return None;
    }
    Some(if t.namespaced || t.object.create_only { Refusal::Outside(namespace.into()) } else { Refusal::ClusterScoped })
}

/// What a bundle may not write even inside its namespaces: the protected keys of a
/// Namespace, and Endpoints and EndpointSlices unless the site allows them.
fn kept_from_bundle(t: &Target, settings: &Settings) -> Option<Refusal> {
    let id = &t.object.id;
    if !t.namespaced && id.group.is_empty() && id.kind == "Namespace" {
        let keys = namespace_keys::set_keys(&t.object.manifest.value(), &settings.protected_namespace_keys);
        return (!keys.is_empty()).then_some(Refusal::ProtectedKeys(keys));
    }
    let endpoints = (id.group.is_empty() && id.kind == "Endpoints") || (id.group == ENDPOINT_SLICE_GROUP && id.kind == "EndpointSlice");
    (endpoints && !settings.allow_endpoints).then_some(Refusal::Endpoints)
}

/// A cluster-scoped object other than a Namespace: in the allow-list, and for a CRD
/// without a conversion webhook.
fn cluster_scoped_refusal(t: &Target, allowed: &[ClusterScopedObject]) -> Option<Refusal> {
    let id = &t.object.id;
    if id.group == CRD_GROUP && id.kind == CRD_KIND && conversion_webhook(&t.object.manifest.value()) {
        return Some(Refusal::ConversionWebhook);
    }
    (!allow_listed(t, allowed)).then_some(Refusal::ClusterScoped)
}

fn conversion_webhook(crd: &Value) -> bool {
    crd.pointer("/spec/conversion/strategy").and_then(Value::as_str) == Some("Webhook")
}

fn allow_listed(t: &Target, allowed: &[ClusterScopedObject]) -> bool {
    let id = &t.object.id;
    allowed.iter().any(|a| a.group == id.group && a.kind == id.kind && a.name == id.name)
}

/// Whether `t` is the relayed store-credentials Secret in the puller's own namespace.
pub(crate) fn own_credentials(t: &Target, own: Option<&str>) -> bool {
    let id = &t.object.id;
    t.namespaced
        && t.object.profile == SYSTEM_PART
        && id.group.is_empty()
        && id.kind == "Secret"
        && id.name == STORE_CREDENTIALS_SECRET
        && own.is_some_and(|own| id.namespace.as_deref() == Some(own))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
