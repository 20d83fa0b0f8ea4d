//! A `jobCheck`: the check's Job runs anew each time the check runs. The Job is created
//! with this cluster's `airlock.dev/cluster` label, and a Job of that name left by an
//! earlier run is deleted first (its Pods in the background), by its uid, only when it
//! carries that label: a Job Airlock did not create for this cluster is left in place and
//! the check fails, naming it. The new one is then created and watched until it is
//! Complete (the check passes), Failed (it fails, with the Job's reason) or the timeout
//! passes (it fails). The finished Job is left in place, so its Pods' logs can be read
//! until the next run.

use std::time::Duration;

use airlock_bundle::statement::JobCheck;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use tokio::time::{Instant, sleep};

use airlock_bundle::vocabulary::CLUSTER_LABEL;

/// How often the Job's status is read.
const POLL: Duration = Duration::from_secs(1);

/// Runs the check's Job; `label` is this cluster's `airlock.dev/cluster` value. Reads go
/// through `client`, the delete and the create through `writer` (the tenant's of a tenant
/// part, spec 5.3).
pub async fn run(client: &kube::Client, writer: &kube::Client, check: &JobCheck, label: &str) -> Result<(), String> {
    let mut job: Job = serde_json::from_value(check.manifest.clone()).map_err(|e| format!("the Job manifest: {e}"))?;
    job.metadata.labels.get_or_insert_default().insert(CLUSTER_LABEL.into(), label.into());
    let (namespace, name) = (job.metadata.namespace.clone().unwrap_or_default(), job.metadata.name.clone().unwrap_or_default());
    let described = format!("Job {namespace}/{name}");
    let api: Api<Job> = Api::namespaced(client.clone(), &namespace);
    let write: Api<Job> = Api::namespaced(writer.clone(), &namespace);
    let deadline = Instant::now() + Duration::from_secs(check.timeout_seconds);
    let fail = |what: &str, e: kube::Error| format!("{what} {described}: {e}");
    if let Some(earlier) = api.get_opt(&name).await.map_err(|e| fail("reading", e))? {
        let owner = earlier.metadata.labels.as_ref().and_then(|l| l.get(CLUSTER_LABEL));
        if owner.map(String::as_str) != Some(label) {
            let owner = owner.map_or_else(|| format!("no {CLUSTER_LABEL} label"), |o| format!("{CLUSTER_LABEL}={o}"));
            return Err(format!("{described} is not Airlock's for this cluster ({owner}): left in place, not deleted"));
        }
        let uid = earlier.metadata.uid.clone();
        let params = DeleteParams { preconditions: Some(Preconditions { uid, resource_version: None }), ..DeleteParams::background() };
        match write.delete(&name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(fail("deleting the earlier", e)),
        }
    }
    while api.get_opt(&name).await.map_err(|e| fail("reading", e))?.is_some() {
        if Instant::now() >= deadline {
            return Err(format!("the earlier {described} was not gone within {}s", check.timeout_seconds));
        }
        sleep(POLL).await;
    }
    write.create(&PostParams::default(), &job).await.map_err(|e| fail("creating", e))?;
    loop {
        let current = api.get(&name).await.map_err(|e| fail("reading", e))?;
        let conditions = current.status.and_then(|s| s.conditions).unwrap_or_default();
        let holds = |kind: &str| conditions.iter().find(|c| c.type_ == kind && c.status == "True");
        if holds("Complete").is_some() {
            return Ok(());
        }
        if let Some(failed) = holds("Failed") {
            let reason = [failed.reason.as_deref(), failed.message.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(": ");
            return Err(format!("{described} failed: {reason}"));
        }
        if Instant::now() >= deadline {
            return Err(format!("{described} did not complete within {}s", check.timeout_seconds));
        }
        sleep(POLL).await;
    }
}
