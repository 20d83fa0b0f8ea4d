//! A SveltosCluster ([`parse_cluster`]) and a ClusterSet or Set ([`parse_set`]).

use airlock_bundle::ClusterId;
use airlock_bundle::cron::Window;
use airlock_bundle::statement::{ActiveWindow, parse_cluster_scoped};
use airlock_bundle::vocabulary::{
    AGE_RECIPIENT_ANNOTATION, CLUSTER_SCOPED_ANNOTATION, MASS_PRUNE_ANNOTATION, PLAINTEXT_SECRETS_ALLOW, PLAINTEXT_SECRETS_ANNOTATION,
};
use serde_json::Value;

use super::reader::{Fields, Metadata, check_version, field_error};
use crate::sources::fields;
use crate::sources::model::{ClusterSet, ModelError, SveltosCluster, WATCH_NAMESPACES_ANNOTATION};

/// Parses a SveltosCluster object.
pub fn parse_cluster(value: &Value) -> Result<SveltosCluster, ModelError> {
    let meta = Metadata::of(value, "SveltosCluster")?;
    let ns = meta.namespace.unwrap_or_default();
    let object = format!("SveltosCluster {ns}/{}", meta.name);
    check_version(value, &object)?;
    let id = ClusterId::new(ns, meta.name).map_err(|e| ModelError::Malformed { object: object.clone(), message: e.to_string() })?;
    let annotations = meta.map("annotations")?;
    let watch_namespaces = annotations.get(WATCH_NAMESPACES_ANNOTATION).and_then(|v| {
        let list: Vec<String> = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        (!list.is_empty()).then_some(list)
    });
    let annotation_error = |key: &str, message: String| field_error(&object, &format!("metadata.annotations[{key}]"), message);
    let age_recipient = match annotations.get(AGE_RECIPIENT_ANNOTATION) {
        None => None,
        Some(text) => Some(text.trim().parse().map_err(|e| annotation_error(AGE_RECIPIENT_ANNOTATION, format!("{e}")))?),
    };
    let allow_plaintext_secrets = match annotations.get(PLAINTEXT_SECRETS_ANNOTATION).map(String::as_str) {
        None => false,
        Some(PLAINTEXT_SECRETS_ALLOW) => true,
        Some(other) => {
            let message =
                format!("{other:?}: the only value is {PLAINTEXT_SECRETS_ALLOW:?}; remove the annotation to refuse Secrets in clear");
            return Err(annotation_error(PLAINTEXT_SECRETS_ANNOTATION, message));
        }
    };
    let allow_mass_prune = match annotations.get(MASS_PRUNE_ANNOTATION).map(String::as_str) {
        None => false,
        Some("true") => true,
        Some(other) => {
            let message = format!("{other:?}: the only value is \"true\"; remove the annotation to let the guard hold mass prunes");
            return Err(annotation_error(MASS_PRUNE_ANNOTATION, message));
        }
    };
    let cluster_scoped = match annotations.get(CLUSTER_SCOPED_ANNOTATION) {
        None => Vec::new(),
        Some(text) => parse_cluster_scoped(text).map_err(|e| annotation_error(CLUSTER_SCOPED_ANNOTATION, e))?,
    };
    let spec = Fields::of(&value["spec"], "spec", &object)?;
    let window = spec.nested("activeWindow")?;
    let active_window = match (window.get::<String>("from")?, window.get::<String>("to")?) {
        (None, None) => None,
        (Some(from), Some(to)) => {
            Window::parse(&from, &to).map_err(|e| spec.error("activeWindow", e.to_string()))?;
            Some(ActiveWindow { from, to })
        }
        _ => return Err(spec.error("activeWindow", "needs both from and to".into())),
    };
    let paused: bool = spec.or_default("paused")?;
    Ok(SveltosCluster {
        id,
        labels: meta.map("labels")?,
        pull_mode: spec.or_default("pullMode")?,
        paused: paused && active_window.is_none(),
        watch_namespaces,
        active_window,
        age_recipient,
        allow_plaintext_secrets,
        allow_mass_prune,
        cluster_scoped,
        notes: fields::cluster_notes(&value["spec"]),
        object: value.clone(),
    })
}

/// Parses a ClusterSet (`namespaced == false`) or a Set: the SveltosClusters its status
/// says Sveltos's set controller selected.
pub fn parse_set(value: &Value, namespaced: bool) -> Result<ClusterSet, ModelError> {
    let kind = if namespaced { "Set" } else { "ClusterSet" };
    let meta = Metadata::of(value, kind)?;
    let namespace = namespaced.then(|| meta.namespace.unwrap_or_default().to_string());
    let object = match &namespace {
        Some(ns) => format!("Set {ns}/{}", meta.name),
        None => format!("ClusterSet {}", meta.name),
    };
    check_version(value, &object)?;
    let status = Fields::of(&value["status"], "status", &object)?;
    let mut selected = Vec::new();
    for (_, r) in status.items("selectedClusterRefs")? {
        let kind: String = r.or_default("kind")?;
        if !kind.is_empty() && kind != "SveltosCluster" {
            continue;
        }
        let ns: String = r.or_default("namespace")?;
        let name: String = r.or_default("name")?;
        let ns = if ns.is_empty() { namespace.clone().unwrap_or_default() } else { ns };
        selected.push(ClusterId::new(&ns, &name).map_err(|e| r.own_error(e.to_string()))?);
    }
    Ok(ClusterSet { namespace, name: meta.name.to_string(), selected })
}
