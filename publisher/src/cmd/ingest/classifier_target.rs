//! Writes what a report means for the cluster's Classifiers (`classified`) to the
//! management cluster: the labels the Classifiers give or take on the SveltosCluster (a
//! merge patch of those keys alone), a ClassifierReport per (classifier, cluster) pair in
//! the cluster's namespace (server-side apply under the publisher's field manager, its
//! status through the status subresource), and the deletion of the reports of
//! Classifiers that are gone. Profiles select on the labels at the next publish.
//!
//! A management cluster that does not serve the Classifier or ClassifierReport CRD gets
//! none of this, and that is no error. A Classifier that cannot be read is left out, and
//! so is its report: what it did to the cluster stays as it was until it is fixed.

use std::collections::BTreeMap;

use airlock_bundle::ClusterId;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, TypeMeta};
use serde_json::{Value, json};

use super::classified::{self, Kept};
use super::report::PullReport;
use super::target::TargetError;
use crate::annotations::FIELD_MANAGER;
use crate::sources::classifier::Classifier;
use crate::sources::live::sveltos_kinds;
use crate::sources::model::{CLUSTER_GROUP, SVELTOS_VERSION};
use crate::sources::parse::parse_classifier;

pub(super) fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(CLUSTER_GROUP, SVELTOS_VERSION, kind), plural)
}

pub(super) fn error(what: String, e: kube::Error) -> TargetError {
    TargetError::Object { what, message: e.to_string() }
}

/// Records what `report` means for the Classifiers of `cluster`, whose SveltosCluster is
/// `object`. Returns how many ClassifierReports were written or deleted.
pub async fn write(client: &kube::Client, cluster: &ClusterId, object: &Value, report: &PullReport) -> Result<usize, TargetError> {
    let classifier_resource = resource("Classifier", "classifiers");
    let listed = match Api::<DynamicObject>::all_with(client.clone(), &classifier_resource).list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(e) if airlock_cli::absent(&e) => return Ok(0),
        Err(e) => return Err(error("list Classifiers".into(), e)),
    };
    let (mut classifiers, mut broken) = (Vec::<Classifier>::new(), Vec::new());
    for item in listed {
        let name = item.metadata.name.clone().unwrap_or_default();
        let value = typed(item, &classifier_resource);
        match parse_classifier(&value) {
            Ok(c) => classifiers.push(c),
            Err(e) => {
                tracing::warn!("{e}: its labels on {cluster} are left as they are");
                broken.push(name);
            }
        }
    }
    classifiers.sort_by(|a, b| a.name.cmp(&b.name));
    let report_resource = resource("ClassifierReport", "classifierreports");
    let reports: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &report_resource);
    let what = |name: &str| format!("ClassifierReport {}/{name}", cluster.namespace());
    let kept_reports = match reports.list(&ListParams::default().labels(&classified::reports_selector(cluster))).await {
        Ok(list) => list.items,
        Err(e) if airlock_cli::absent(&e) => return Ok(0),
        Err(e) => return Err(error(format!("list ClassifierReports of {cluster}"), e)),
    };
    let kept: BTreeMap<String, Kept> = kept_reports
        .into_iter()
        .filter_map(|r| classified::kept_of(&typed(r, &report_resource)))
        .filter(|(name, _)| !broken.contains(name))
        .collect();
    let out = classified::of_report(&classifiers, report, object, &kept);

    if !out.labels.is_empty() {
        let [(cluster_resource, _), ..] = sveltos_kinds();
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &cluster_resource);
        let patch = json!({"metadata": {"labels": out.labels}});
        api.patch(cluster.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| TargetError::Kube { cluster: cluster.clone(), message: format!("classifier labels: {e}") })?;
    }
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let mut written = 0;
    for pair in &out.pairs {
        let mut whole = classified::report_object(cluster, pair);
        let status = whole.as_object_mut().and_then(|o| o.remove("status")).unwrap_or(Value::Null);
        let name = classified::report_name(&pair.classifier, cluster);
        reports.patch(&name, &apply, &Patch::Apply(&whole)).await.map_err(|e| error(what(&name), e))?;
        let status = json!({"apiVersion": whole["apiVersion"], "kind": whole["kind"], "status": status});
        reports.patch_status(&name, &apply, &Patch::Apply(&status)).await.map_err(|e| error(what(&name), e))?;
        written += 1;
    }
    for gone in &out.gone {
        let name = classified::report_name(gone, cluster);
        match reports.delete(&name, &DeleteParams::default()).await {
            Ok(_) => written += 1,
            Err(e) if airlock_cli::absent(&e) => {}
            Err(e) => return Err(error(what(&name), e)),
        }
    }
    Ok(written)
}

/// The listed object as JSON with apiVersion and kind set.
pub(super) fn typed(mut object: DynamicObject, resource: &ApiResource) -> Value {
    object.types = Some(TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() });
    serde_json::to_value(object).expect("a Kubernetes object serialises")
}
