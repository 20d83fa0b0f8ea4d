//! Firing one Helm hook (spec 2.5.3), as Helm's `execHook` does: with
//! `before-hook-creation`, the previous copy is deleted and waited for until it is gone;
//! the hook is applied; a Job is then waited for until it is Complete or Failed, a Pod
//! until it Succeeded or Failed, at most the hook's timeout (any other kind is done once
//! applied); then it is deleted when its policy says so for how it ended. A hook that
//! fails or times out fails, and stops the objects of its part after it (`gate`).
//!
//! Deletes are in the background, as Helm's: a Job's Pods go after it. A live object of
//! the hook's name that is not Airlock's for this cluster is neither deleted nor written:
//! the hook fails and the object stays (`recreate::ours`).

use serde_json::Value;

use crate::engine::api::kube_api::{Api, PropagationPolicy, Served};
use crate::engine::api::poll::{self, Progress, Unsettled};
use crate::engine::apply::ready;
use crate::engine::apply::recreate;
use crate::engine::model::error::ApiError;
use crate::engine::model::helm::Hook;
use crate::engine::model::object::DesiredObject;

/// Fires `object`, a hook, and waits for it: whether it was created, the object the
/// apply answered, and how it ended. `label` is this cluster's `airlock.dev/cluster` value.
pub(crate) async fn fire(
    api: &Api,
    served: &Served,
    object: &DesiredObject,
    hook: &Hook,
    label: &str,
    force: bool,
) -> Result<(bool, Value, String), ApiError> {
    if hook.delete_before {
        recreate::delete_and_wait(api, served, object, label, PropagationPolicy::Background).await?;
    } else if let Some(live) = api.get(served, object.id.namespace.as_deref(), &object.id.name).await? {
        // The apply would take it over, and the hook's policy may then delete it.
        recreate::ours(&live, &object.id, label)?;
    }
    let (created, live) =
        api.apply(object.rules.service_account.as_ref(), served, &object.id, object.manifest.json(), force, false).await?;
    let uid = live.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
    let ended = finished(api, served, object, hook).await;
    let delete = match &ended {
        Ok(_) => hook.delete_succeeded,
        Err(_) => hook.delete_failed,
    };
    if delete {
        let namespace = object.id.namespace.as_deref();
        api.delete(object.rules.service_account.as_ref(), served, namespace, &object.id.name, &uid, PropagationPolicy::Background).await?;
    }
    let ended = ended?;
    Ok((created, live, if delete { format!("{ended}, then deleted") } else { ended }))
}

/// Waits until the hook finished, as far as its kind can: how it ended, or why it failed.
async fn finished(api: &Api, served: &Served, object: &DesiredObject, hook: &Hook) -> Result<String, ApiError> {
    let waits = matches!((object.id.group.as_str(), object.id.kind.as_str()), ("batch", "Job") | ("", "Pod"));
    if !waits {
        return Ok("applied".into());
    }
    let kind = &object.id.kind;
    match poll::until(api, served, &object.id, hook.timeout, |live| state(kind, live)).await? {
        Ok(()) => Ok(format!("{kind} succeeded")),
        Err(Unsettled::Gone) => Err(failed(format!("{kind} was deleted before it finished"))),
        Err(Unsettled::Failed(why)) => Err(failed(format!("{kind} failed: {why}"))),
        Err(Unsettled::TimedOut(_)) => Err(failed(format!("{kind} did not finish within {}s", hook.timeout.as_secs()))),
    }
}

fn failed(message: String) -> ApiError {
    ApiError { code: 0, message: format!("hook: {message}") }
}

/// Where a hook Job or Pod stands: a Job by its Complete and Failed conditions, a Pod by
/// its phase.
fn state(kind: &str, live: &Value) -> Progress {
    if kind == "Pod" {
        return match live.pointer("/status/phase").and_then(Value::as_str) {
            Some("Succeeded") => Progress::Done,
            Some("Failed") => {
                Progress::Failed(live.pointer("/status/reason").and_then(Value::as_str).unwrap_or("phase Failed").to_string())
            }
            _ => Progress::Pending("running".into()),
        };
    }
    ready::job(live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_ends_by_its_phase_and_a_job_by_its_conditions() {
        let pod = |phase: &str| json!({"status": {"phase": phase}});
        assert_eq!(state("Pod", &pod("Running")), Progress::Pending("running".into()));
        assert_eq!(state("Pod", &pod("Pending")), Progress::Pending("running".into()));
        assert_eq!(state("Pod", &pod("Succeeded")), Progress::Done);
        assert_eq!(state("Pod", &pod("Failed")), Progress::Failed("phase Failed".into()));
        assert_eq!(state("Job", &json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}})), Progress::Done);
    }
}
