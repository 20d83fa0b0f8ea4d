//! Waiting until a release's objects are ready, as Helm's `--wait` (and `--wait-for-jobs`)
//! does before it runs the post- hooks (spec 2.5.3). An object annotated
//! `airlock.dev/helm-wait` is read after it was applied until its kind says it is ready,
//! at most `airlock.dev/helm-wait-timeout-seconds` (Helm's default of 300 s when absent):
//!
//! - a Deployment when its controller saw its generation and it has all replicas updated
//!   and, of them, as many available as `maxUnavailable` leaves (paused: at once);
//! - a StatefulSet when all replicas are ready and, under a rolling update, updated above
//!   the partition; a DaemonSet when every scheduled Pod is updated and as many are ready
//!   as `maxUnavailable` leaves; a ReplicaSet or ReplicationController when all replicas
//!   are ready;
//! - a Pod when it is Ready (or Succeeded); a PersistentVolumeClaim when Bound; a Service
//!   when it has a cluster IP or, of type LoadBalancer, an ingress address;
//! - a Job, with `jobs`, when Complete (Failed ends the wait); without, once applied;
//! - anything else once applied (CRDs are waited Established by the CRD stage).

use serde_json::Value;

use crate::engine::api::kube_api::{Api, Served};
use crate::engine::api::poll::{self, Progress, Unsettled};
use crate::engine::model::error::ApiError;
use crate::engine::model::helm::Wait;
use crate::engine::model::object::ObjectId;

/// Waits until the object `id` is ready; an error says where it stood.
pub(crate) async fn wait(api: &Api, served: &Served, id: &ObjectId, wait: Wait) -> Result<(), ApiError> {
    let (group, kind) = (id.group.as_str(), id.kind.as_str());
    let failed = |message: String| ApiError { code: 0, message: format!("wait: {kind} {}: {message}", id.name) };
    match poll::until(api, served, id, wait.timeout, |live| progress(group, kind, live, wait.jobs)).await? {
        Ok(()) => Ok(()),
        Err(Unsettled::Gone) => Err(failed("deleted before it was ready".into())),
        Err(Unsettled::Failed(why)) => Err(failed(why)),
        Err(Unsettled::TimedOut(standing)) => Err(failed(format!("not ready within {}s: {standing}", wait.timeout.as_secs()))),
    }
}

/// Where a live object of `group`/`kind` stands.
fn progress(group: &str, kind: &str, live: &Value, jobs: bool) -> Progress {
    let spec = &live["spec"];
    let status = &live["status"];
    let count = |v: &Value| v.as_i64().unwrap_or(0);
    let replicas = spec["replicas"].as_i64().unwrap_or(1);
    match (group, kind) {
        ("apps", "Deployment") => {
            if spec["paused"] == true {
                return Progress::Done;
            }
            if let Some(pending) = unobserved(live) {
                return pending;
            }
            let allowed = unavailable(&spec["strategy"]["rollingUpdate"]["maxUnavailable"], replicas, 0.25);
            let (updated, available) = (count(&status["updatedReplicas"]), count(&status["availableReplicas"]));
            settled(
                updated >= replicas && available >= replicas - allowed,
                format!("{available} of {replicas} replicas available, {updated} updated"),
            )
        }
        ("apps", "StatefulSet") => {
            if let Some(pending) = unobserved(live) {
                return pending;
            }
            let rolling = spec["updateStrategy"]["type"].as_str().is_none_or(|t| t == "RollingUpdate");
            let partition = if rolling { count(&spec["updateStrategy"]["rollingUpdate"]["partition"]) } else { 0 };
            let (ready, updated) = (count(&status["readyReplicas"]), count(&status["updatedReplicas"]));
            let updated_enough = !rolling || updated >= replicas - partition;
            settled(ready >= replicas && updated_enough, format!("{ready} of {replicas} replicas ready, {updated} updated"))
        }
        ("apps", "DaemonSet") => {
            if let Some(pending) = unobserved(live) {
                return pending;
            }
            let desired = count(&status["desiredNumberScheduled"]);
            let allowed = match &spec["updateStrategy"]["rollingUpdate"]["maxUnavailable"] {
                Value::Null => desired.min(1),
                value => unavailable(value, desired, 0.0),
            };
            let (ready, updated) = (count(&status["numberReady"]), count(&status["updatedNumberScheduled"]));
            settled(updated >= desired && ready >= desired - allowed, format!("{ready} of {desired} Pods ready, {updated} updated"))
        }
        ("apps", "ReplicaSet") | ("", "ReplicationController") => {
            let ready = count(&status["readyReplicas"]);
            settled(ready >= replicas, format!("{ready} of {replicas} replicas ready"))
        }
        ("", "Pod") => {
            let phase = status["phase"].as_str().unwrap_or("Pending");
            let ready = conditions(live).any(|c| c["type"] == "Ready" && c["status"] == "True");
            match phase {
                "Failed" => {
                    Progress::Failed(format!("phase Failed{}", status["reason"].as_str().map(|r| format!(": {r}")).unwrap_or_default()))
                }
                "Succeeded" => Progress::Done,
                _ => settled(ready, format!("phase {phase}, not Ready")),
            }
        }
        ("", "PersistentVolumeClaim") => {
            let phase = status["phase"].as_str().unwrap_or("Pending");
            settled(phase == "Bound", format!("phase {phase}"))
        }
        ("", "Service") => match spec["type"].as_str().unwrap_or("ClusterIP") {
            "ExternalName" => Progress::Done,
            "LoadBalancer" => {
                let ingress = status["loadBalancer"]["ingress"].as_array().is_some_and(|i| !i.is_empty());
                settled(ingress, "no load balancer ingress yet".into())
            }
            _ => settled(spec["clusterIP"].as_str().is_some_and(|ip| !ip.is_empty()), "no cluster IP yet".into()),
        },
        ("batch", "Job") if jobs => job(live),
        _ => Progress::Done,
    }
}

/// A Job by its Complete and Failed conditions.
pub(crate) fn job(live: &Value) -> Progress {
    let holds = |kind: &str| conditions(live).find(|c| c["type"] == kind && c["status"] == "True");
    if holds("Complete").is_some() {
        return Progress::Done;
    }
    match holds("Failed") {
        Some(c) => {
            let why: Vec<&str> = [&c["reason"], &c["message"]].into_iter().filter_map(Value::as_str).collect();
            Progress::Failed(if why.is_empty() { "condition Failed".into() } else { why.join(": ") })
        }
        None => Progress::Pending("not complete yet".into()),
    }
}

fn conditions(live: &Value) -> impl Iterator<Item = &Value> {
    live["status"]["conditions"].as_array().into_iter().flatten()
}

fn settled(ready: bool, standing: String) -> Progress {
    if ready { Progress::Done } else { Progress::Pending(standing) }
}

/// Pending while the controller has not seen the object's latest generation: until then
/// its status describes the previous spec.
fn unobserved(live: &Value) -> Option<Progress> {
    let generation = live["metadata"]["generation"].as_i64().unwrap_or(0);
    let observed = live["status"]["observedGeneration"].as_i64().unwrap_or(0);
    (observed < generation).then(|| Progress::Pending(format!("generation {generation} not observed yet (at {observed})")))
}

/// How many of `total` replicas may be unavailable: an integer, or a percentage rounded
/// down, as the controllers read `maxUnavailable`; `default` is the share when unset.
fn unavailable(value: &Value, total: i64, default: f64) -> i64 {
    let share = |percent: f64| (total as f64 * percent).floor() as i64;
    match value {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => s.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()).map_or(0, |p| share(p / 100.0)),
        _ => share(default),
    }
}

#[cfg(test)]
#[path = "ready_tests.rs"]
mod tests;
