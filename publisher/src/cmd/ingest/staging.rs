//! Sveltos staging work for an Airlock cluster: the unsupported way of running Sveltos's
//! controllers beside Airlock (docs/operations.md, "Sveltos beside Airlock").
//!
//! Sveltos's controllers treat every SveltosCluster with `spec.pullMode: true` as a cluster
//! of their own agent, and stage what they would deploy there as ConfigurationGroups in the
//! cluster's namespace, labelled `pullmode.projectsveltos.io/clustername: <name>` (the only
//! label the agent filters on; the namespace does the rest). Nothing on an Airlock cluster
//! consumes them, so their content never arrives and Sveltos reports it as pending or
//! failed. This module finds such groups ([`list`]) and records them where Sveltos's schema
//! allows ([`record`]): the SveltosCluster's status has no conditions, and a server-side
//! apply of a field its CRD lacks is refused, so the finding is the annotation
//! [`STAGED_ANNOTATION`] and a Warning Event on the SveltosCluster. It never deletes or
//! changes a ConfigurationGroup: they are Sveltos's, and its controller would write them
//! again.

use std::collections::BTreeSet;

use airlock_bundle::ClusterId;
use airlock_bundle::vocabulary::STAGED_ANNOTATION;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::target::TargetError;
use crate::annotations::FIELD_MANAGER;

/// The label Sveltos's pull-mode library puts on every ConfigurationGroup (and bundle) it
/// stages for a cluster: the cluster's name.
pub const CLUSTER_NAME_LABEL: &str = "pullmode.projectsveltos.io/clustername";
/// The kind of the Sveltos object that staged a group (`ClusterSummary`, `Classifier`, ...).
pub const REQUESTOR_KIND_LABEL: &str = "pullmode.projectsveltos.io/requestorkind";
/// What part of that object staged it (`Resources`, `Helm`, `Kustomize`, ...).
pub const REQUESTOR_FEATURE_LABEL: &str = "pullmode.projectsveltos.io/requestorfeature";
/// The staging object's name: an annotation, as names exceed a label value's 63 characters.
pub const REQUESTOR_NAME_ANNOTATION: &str = "pullmode.projectsveltos.io/requestorname";
/// The Event's reason, for `kubectl get events --field-selector reason=...`.
pub const EVENT_REASON: &str = "SveltosStagesConfiguration";

/// One ConfigurationGroup Sveltos staged for the cluster, as its labels name its author.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Staged {
    pub requestor_kind: String,
    pub requestor_name: String,
    pub feature: String,
    /// The ConfigurationGroup's own name.
    pub group: String,
}

impl std::fmt::Display for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} ({})", self.requestor_kind, self.requestor_name, self.feature)
    }
}

/// The groups of `groups` (ConfigurationGroups as JSON) staged for `cluster`, sorted.
pub fn staged_for(cluster: &ClusterId, groups: &[Value]) -> Vec<Staged> {
    let text = |v: &Value| v.as_str().unwrap_or("?").to_string();
    let mut found: Vec<Staged> = groups
        .iter()
        .filter(|g| g["metadata"]["namespace"] == cluster.namespace() && g["metadata"]["labels"][CLUSTER_NAME_LABEL] == cluster.name())
        .map(|g| {
            let meta = &g["metadata"];
            Staged {
                requestor_kind: text(&meta["labels"][REQUESTOR_KIND_LABEL]),
                requestor_name: text(&meta["annotations"][REQUESTOR_NAME_ANNOTATION]),
                feature: text(&meta["labels"][REQUESTOR_FEATURE_LABEL]),
                group: text(&meta["name"]),
            }
        })
        .collect();
    found.sort();
    found
}

/// The annotation's value for `staged`: each author once, `Kind/name (feature)`, sorted.
pub fn summary(staged: &[Staged]) -> Option<String> {
    let authors: BTreeSet<String> = staged.iter().map(ToString::to_string).collect();
    (!authors.is_empty()).then(|| authors.into_iter().collect::<Vec<_>>().join(", "))
}

/// The warning `status` prints and the Event carries.
pub fn warning(cluster: &ClusterId, summary: &str) -> String {
    format!(
        "{cluster}: Sveltos stages ConfigurationGroups for this Airlock cluster ({summary}); nothing here consumes them, \
         so Sveltos shows them pending or failed: give the SveltosCluster a sharding.projectsveltos.io/key no Sveltos \
         controller serves, or keep Sveltos's selectors off it (docs/operations.md, Sveltos beside Airlock)"
    )
}

fn resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("lib.projectsveltos.io", "v1beta1", "ConfigurationGroup");
    ApiResource::from_gvk_with_plural(&gvk, "configurationgroups")
}

/// Every ConfigurationGroup staged for a cluster, in `namespace` or (None) everywhere: empty
/// when the CRD is not installed (no Sveltos pull mode on this management cluster).
pub async fn list(client: &kube::Client, namespace: Option<&str>) -> Result<Vec<Value>, TargetError> {
    let resource = resource();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    match api.list(&ListParams::default().labels(CLUSTER_NAME_LABEL)).await {
        Ok(list) => Ok(list.items.into_iter().map(|o| serde_json::to_value(o).expect("a Kubernetes object serialises")).collect()),
        Err(e) if airlock_cli::absent(&e) => Ok(Vec::new()),
        // A publisher whose RBAC predates the check: it cannot look, which is no failure of
        // the ingest it runs beside.
        Err(kube::Error::Api(s)) if s.is_forbidden() => {
            tracing::warn!("cannot list ConfigurationGroups ({}): Sveltos staging for Airlock clusters goes undetected", s.message);
            Ok(Vec::new())
        }
        Err(e) => Err(TargetError::Object { what: "ConfigurationGroups".into(), message: e.to_string() }),
    }
}

/// Records on the SveltosCluster `object` what was found: the annotation set, changed or
/// removed, and a Warning Event each time the set of authors changes to a non-empty one.
/// Returns whether anything was written.
pub async fn record(client: &kube::Client, cluster: &ClusterId, object: &Value, staged: &[Staged]) -> Result<bool, TargetError> {
    let now = summary(staged);
    let before = object["metadata"]["annotations"][STAGED_ANNOTATION].as_str().map(str::to_string);
    if now == before {
        return Ok(false);
    }
    let kube_error = |e: kube::Error| TargetError::Kube { cluster: cluster.clone(), message: e.to_string() };
    let [(clusters, _), ..] = crate::sources::live::sveltos_kinds();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &clusters);
    let merge = json!({"metadata": {"annotations": {STAGED_ANNOTATION: now}}});
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    api.patch(cluster.name(), &params, &Patch::Merge(&merge)).await.map_err(kube_error)?;
    if let Some(summary) = &now {
        event(client, cluster, object, &warning(cluster, summary)).await.map_err(kube_error)?;
    }
    Ok(true)
}

async fn event(client: &kube::Client, cluster: &ClusterId, object: &Value, message: &str) -> Result<(), kube::Error> {
    let time = Timestamp::now().to_string();
    let event: Event = serde_json::from_value(json!({
        "metadata": {"generateName": format!("{}.", cluster.name()), "namespace": cluster.namespace()},
        "involvedObject": {
            "apiVersion": object["apiVersion"], "kind": "SveltosCluster", "namespace": cluster.namespace(),
            "name": cluster.name(), "uid": object["metadata"]["uid"],
        },
        "reason": EVENT_REASON, "message": message, "type": "Warning", "count": 1,
        "firstTimestamp": time, "lastTimestamp": time, "source": {"component": FIELD_MANAGER},
    }))
    .expect("a well-formed Event");
    Api::<Event>::namespaced(client.clone(), cluster.namespace()).create(&PostParams::default(), &event).await.map(drop)
}

/// Lists the groups staged for each of `clusters` (SveltosClusters as JSON, those `register`
/// made: they carry a report key) and records them; one warning line per cluster with some.
pub async fn check(client: &kube::Client, clusters: &[Value]) -> Result<Vec<String>, TargetError> {
    let groups = list(client, None).await?;
    let mut warnings = Vec::new();
    for object in clusters {
        let meta = &object["metadata"];
        let (Some(namespace), Some(name)) = (meta["namespace"].as_str(), meta["name"].as_str()) else { continue };
        let Ok(cluster) = ClusterId::new(namespace, name) else { continue };
        if meta["annotations"][airlock_bundle::vocabulary::REPORT_KEY_ANNOTATION].is_null() {
            continue;
        }
        let staged = staged_for(&cluster, &groups);
        record(client, &cluster, object, &staged).await?;
        if let Some(summary) = summary(&staged) {
            warnings.push(warning(&cluster, &summary));
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(namespace: &str, name: &str, cluster: &str, kind: &str, requestor: &str, feature: &str) -> Value {
        json!({"metadata": {
            "namespace": namespace, "name": name,
            "labels": {CLUSTER_NAME_LABEL: cluster, REQUESTOR_KIND_LABEL: kind, REQUESTOR_FEATURE_LABEL: feature},
            "annotations": {REQUESTOR_NAME_ANNOTATION: requestor},
        }})
    }

    #[test]
    fn finds_the_groups_of_the_cluster_by_namespace_and_name_label() {
        let cluster = ClusterId::new("fleet", "edge-1").unwrap();
        let groups = [
            group("fleet", "cg-b", "edge-1", "ClusterSummary", "web-sveltos-edge-1", "Helm"),
            group("fleet", "cg-a", "edge-1", "ClusterSummary", "web-sveltos-edge-1", "Resources"),
            group("fleet", "cg-c", "edge-2", "ClusterSummary", "web-sveltos-edge-2", "Resources"),
            group("other", "cg-d", "edge-1", "Classifier", "gpu", "Classifier"),
        ];
        let found = staged_for(&cluster, &groups);
        assert_eq!(found.iter().map(|s| s.group.as_str()).collect::<Vec<_>>(), ["cg-b", "cg-a"]);
        assert_eq!(
            summary(&found).as_deref(),
            Some("ClusterSummary/web-sveltos-edge-1 (Helm), ClusterSummary/web-sveltos-edge-1 (Resources)")
        );
        assert!(staged_for(&ClusterId::new("fleet", "edge-3").unwrap(), &groups).is_empty());
        assert_eq!(summary(&[]), None);
    }

    #[test]
    fn a_group_without_requestor_marks_says_so() {
        let cluster = ClusterId::new("fleet", "edge-1").unwrap();
        let bare = json!({"metadata": {"namespace": "fleet", "name": "cg", "labels": {CLUSTER_NAME_LABEL: "edge-1"}}});
        assert_eq!(summary(&staged_for(&cluster, &[bare])).as_deref(), Some("?/? (?)"));
    }
}
