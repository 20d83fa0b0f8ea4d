//! Writes what a report means for the cluster's health checks to the management cluster
//! (bundles-format.md 14.5): the HealthCheckReports of the HealthChecks it carries
//! (`health_reports`; server-side apply, stale ones deleted), then, for every
//! ClusterHealthCheck selecting the cluster, the liveness checks judged
//! (`cluster_health`), the notifications due sent (`notify`), and the cluster's entry in
//! the ClusterHealthCheck's `status.clusterCondition` written with what was sent, so the
//! next ingest, in this process or another, sends only on the next transition.
//!
//! A management cluster that does not serve the HealthCheck, ClusterHealthCheck or
//! HealthCheckReport CRD gets none of this, and that is no error. A HealthCheck or
//! ClusterHealthCheck that cannot be read is left out (named in the log): what it
//! recorded stays as it was.

use std::collections::BTreeMap;

use airlock_bundle::ClusterId;
use airlock_bundle::statement::{Evaluation, rfc3339};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, TypeMeta};
use serde_json::{Value, json};

use super::cluster_health::{self, Facts};
use super::health_reports;
use super::notify;
use super::report::PullReport;
use super::target::TargetError;
use crate::annotations::FIELD_MANAGER;
use crate::sources::health_check::{self, ClusterHealthCheck, NotificationKind};
use crate::sources::live::sveltos_kinds;
use crate::sources::model::{CLUSTER_GROUP, SVELTOS_VERSION};
use crate::sources::parse::{parse_cluster_health_check, parse_health_check};

/// Attempts at a ClusterHealthCheck's status when others write it meanwhile.
const CONFLICT_ATTEMPTS: usize = 4;

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(CLUSTER_GROUP, SVELTOS_VERSION, kind), plural)
}

fn error(what: String, e: kube::Error) -> TargetError {
    TargetError::Object { what, message: e.to_string() }
}

/// Every object of `resource` as JSON, `None` when the kind is not served.
async fn list(api: &Api<DynamicObject>, resource: &ApiResource, params: &ListParams) -> Result<Option<Vec<Value>>, TargetError> {
    match api.list(params).await {
        Ok(list) => Ok(Some(list.items.into_iter().map(|o| typed(o, resource)).collect())),
        Err(e) if airlock_cli::absent(&e) => Ok(None),
        Err(e) => Err(error(format!("list {}s", resource.kind), e)),
    }
}

/// Records what `report` means for the health checks of `cluster`, whose SveltosCluster
/// is `object`. Returns how many HealthCheckReports were written or deleted.
pub async fn write(client: &kube::Client, cluster: &ClusterId, object: &Value, report: &PullReport) -> Result<usize, TargetError> {
    let (hc_resource, chc_resource) = (resource("HealthCheck", "healthchecks"), resource("ClusterHealthCheck", "clusterhealthchecks"));
    let Some(listed) = list(&Api::all_with(client.clone(), &hc_resource), &hc_resource, &ListParams::default()).await? else {
        return Ok(0);
    };
    let health_checks: Vec<Evaluation> = listed.iter().filter_map(|v| readable(parse_health_check(v), cluster)).collect();
    let chc_api: Api<DynamicObject> = Api::all_with(client.clone(), &chc_resource);
    let Some(listed) = list(&chc_api, &chc_resource, &ListParams::default()).await? else { return Ok(0) };
    let checks: Vec<(ClusterHealthCheck, Value)> =
        listed.into_iter().filter_map(|v| readable(parse_cluster_health_check(&v), cluster).map(|c| (c, v))).collect();
    let labels: BTreeMap<String, String> = serde_json::from_value(object["metadata"]["labels"].clone()).unwrap_or_default();
    let parsed: Vec<ClusterHealthCheck> = checks.iter().map(|(c, _)| c.clone()).collect();
    let carried = health_check::carried(&parsed, &health_checks, &labels);

    let report_resource = resource("HealthCheckReport", "healthcheckreports");
    let reports: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &report_resource);
    let what = |name: &str| format!("HealthCheckReport {}/{name}", cluster.namespace());
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let mut written = 0;
    for whole in health_reports::reports(cluster, &carried, &report.evaluations) {
        let name = whole["metadata"]["name"].as_str().expect("named").to_string();
        match reports.patch(&name, &apply, &Patch::Apply(&whole)).await {
            Err(e) if airlock_cli::absent(&e) => return Ok(0),
            Err(e) => return Err(error(what(&name), e)),
            Ok(_) => written += 1,
        }
    }
    let selector = ListParams::default().labels(&health_reports::reports_selector(cluster));
    let kept = list(&reports, &report_resource, &selector).await?.unwrap_or_default();
    let mut facts = Facts::default();
    for kept in &kept {
        let Some(name) = health_reports::health_check_of(kept) else { continue };
        if carried.iter().any(|c| c.name == name) {
            facts.health.insert(name.to_string(), health_reports::unhealthy(kept));
            continue;
        }
        let report_name = kept["metadata"]["name"].as_str().unwrap_or_default();
        match reports.delete(report_name, &DeleteParams::default()).await {
            Ok(_) => written += 1,
            Err(e) if airlock_cli::absent(&e) => {}
            Err(e) => return Err(error(what(report_name), e)),
        }
    }
    facts.addon_failures = addon_failures(client, cluster).await?;
    let hash = {
        let digests: Vec<String> = carried.iter().map(|e| e.digest().to_string()).collect();
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(airlock_bundle::Digest::of(digests.join(",").as_bytes()).hex())
    };
    let now = rfc3339::format(&jiff::Timestamp::now());
    for (check, value) in &checks {
        let selects = check.selects(&labels);
        let recorded = value["status"]["clusterCondition"].as_array().into_iter().flatten().any(|e| cluster_health::is_for(e, cluster));
        if !selects && !recorded {
            continue;
        }
        let entry = if selects { Some(judge(client, check, value, cluster, &facts, &hash, &now).await) } else { None };
        record(&chc_api, &chc_resource, &check.name, cluster, entry.as_ref()).await?;
    }
    Ok(written)
}

/// `parsed`, or `None` with a warning naming what cannot be read.
fn readable<T>(parsed: Result<T, crate::sources::model::ModelError>, cluster: &ClusterId) -> Option<T> {
    parsed.map_err(|e| tracing::warn!("{e}: what it recorded for {cluster} is left as it is")).ok()
}

/// Decides `check` for `cluster`, sends what is due, and gives the cluster's new entry.
async fn judge(
    client: &kube::Client,
    check: &ClusterHealthCheck,
    value: &Value,
    cluster: &ClusterId,
    facts: &Facts,
    hash: &str,
    now: &str,
) -> Value {
    let previous = value["status"]["clusterCondition"].as_array().into_iter().flatten().find(|e| cluster_health::is_for(e, cluster));
    let previous = previous.cloned().unwrap_or(Value::Null);
    let decision = cluster_health::decide(check, cluster, facts, &previous, now);
    let mut sent = BTreeMap::new();
    for notification in check.notifications.iter().filter(|n| decision.send.contains(&n.name)) {
        let outcome = match (&notification.kind, &notification.secret) {
            (NotificationKind::KubernetesEvent, _) => notify::event(client, value, &decision.message, decision.passing).await,
            (NotificationKind::Teams, Some(secret)) => notify::teams(client, secret, &decision.message, decision.passing).await,
            (NotificationKind::Teams, None) => Err("a Teams notification needs a notificationRef to its Secret".into()),
            (NotificationKind::Other(kind), _) => {
                Err(format!("notification type {kind} is not sent by Airlock (KubernetesEvent and Teams are)"))
            }
        };
        match &outcome {
            Ok(()) => {
                tracing::info!(%cluster, check = %check.name, notification = %notification.name, passing = decision.passing, "notification sent")
            }
            Err(why) => {
                tracing::warn!(%cluster, check = %check.name, notification = %notification.name, "notification not delivered: {why}")
            }
        }
        sent.insert(notification.name.clone(), outcome);
    }
    cluster_health::entry(check, cluster, &decision, &sent, &previous, hash)
}

/// Writes `entry` as `cluster`'s in the status of the ClusterHealthCheck `name` (removes
/// it for `None`), and the cluster in `matchingClusters` accordingly; conditional on the
/// resourceVersion read, read again on a conflict.
async fn record(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    name: &str,
    cluster: &ClusterId,
    entry: Option<&Value>,
) -> Result<(), TargetError> {
    let what = format!("ClusterHealthCheck {name}");
    for _ in 0..CONFLICT_ATTEMPTS {
        let Some(found) = api.get_opt(name).await.map_err(|e| error(what.clone(), e))? else { return Ok(()) };
        let current = typed(found, resource);
        let others = |field: &str, this: &dyn Fn(&Value) -> bool| -> Vec<Value> {
            current["status"][field].as_array().into_iter().flatten().filter(|v| !this(v)).cloned().collect()
        };
        let mut conditions = others("clusterCondition", &|e| cluster_health::is_for(e, cluster));
        let this_ref = cluster_health::cluster_ref(cluster);
        let mut matching = others("matchingClusters", &|r| {
            r["kind"] == "SveltosCluster" && r["namespace"] == this_ref["namespace"] && r["name"] == this_ref["name"]
        });
        if let Some(entry) = entry {
            conditions.push(entry.clone());
            matching.push(this_ref);
        }
        let patch = json!({
            "apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": name, "resourceVersion": current["metadata"]["resourceVersion"]},
            "status": {"clusterCondition": conditions, "matchingClusters": matching},
        });
        match api.patch_status(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.is_conflict() => continue,
            Err(e) => return Err(error(what, e)),
        }
    }
    Err(TargetError::Object { what, message: format!("its status changed {CONFLICT_ATTEMPTS} times while being written") })
}

/// Each profile failing on `cluster`, as its status records it (`status.failedClusters`,
/// which ingest writes): `Kind/name: message`.
async fn addon_failures(client: &kube::Client, cluster: &ClusterId) -> Result<Vec<String>, TargetError> {
    let [_, (cluster_profiles, _), (profiles, _)] = sveltos_kinds();
    let mut failures = Vec::new();
    let apis = [
        (Api::<DynamicObject>::all_with(client.clone(), &cluster_profiles), cluster_profiles),
        (Api::namespaced_with(client.clone(), cluster.namespace(), &profiles), profiles),
    ];
    for (api, resource) in apis {
        for profile in list(&api, &resource, &ListParams::default()).await?.unwrap_or_default() {
            for failed in profile["status"]["failedClusters"].as_array().into_iter().flatten() {
                let r = &failed["clusterRef"];
                if r["kind"] == "SveltosCluster" && r["namespace"] == cluster.namespace() && r["name"] == cluster.name() {
                    let name = profile["metadata"]["name"].as_str().unwrap_or_default();
                    failures.push(format!("{}/{name}: {}", resource.kind, failed["failureMessage"].as_str().unwrap_or_default()));
                }
            }
        }
    }
    Ok(failures)
}

/// The listed object as JSON with apiVersion and kind set.
fn typed(mut object: DynamicObject, resource: &ApiResource) -> Value {
    object.types = Some(TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() });
    serde_json::to_value(object).expect("a Kubernetes object serialises")
}
