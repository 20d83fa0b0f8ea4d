//! Firing one Helm hook (spec 2.5.3), as Helm's `execHook` does: with
//! `before-hook-creation`, the previous copy is deleted and waited for until it is gone;
//! the hook is applied; a Job is then waited for until it is Complete or Failed, a Pod
//! until it Succeeded or Failed, at most the hook's timeout (any other kind is done once
//! applied); then it is deleted when its policy says so for how it ended. A hook that
//! fails or times out fails, and stops the objects of its part after it (`gate`).
//!
//! Deletes are in the background, as Helm's: a Job's Pods go after it.

use serde_json::Value;
use tokio::time::{Duration, Instant, sleep};

use super::error::ApiError;
use super::hook::Hook;
use super::kube_api::{Api, PropagationPolicy, Served};
use super::object::DesiredObject;
use super::recreate;

/// The first pause between two reads of a hook's status; it doubles up to `MAX_POLL`.
const FIRST_POLL: Duration = Duration::from_millis(200);
const MAX_POLL: Duration = Duration::from_secs(2);

/// Fires `object`, a hook, and waits for it: whether it was created, the object the
/// apply answered, and how it ended.
pub(super) async fn fire(
    api: &Api,
    served: &Served,
    object: &DesiredObject,
    hook: &Hook,
    force: bool,
) -> Result<(bool, Value, String), ApiError> {
    if hook.delete_before {
        recreate::delete_and_wait(api, served, object, PropagationPolicy::Background).await?;
    }
    let (created, live) = api.apply(served, &object.id, object.manifest.json(), force, false).await?;
    let uid = live.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
    let ended = finished(api, served, object, hook).await;
    let delete = match &ended {
        Ok(_) => hook.delete_succeeded,
        Err(_) => hook.delete_failed,
    };
    if delete {
        let namespace = object.id.namespace.as_deref();
        api.delete(served, namespace, &object.id.name, &uid, PropagationPolicy::Background).await?;
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
    let deadline = Instant::now() + hook.timeout;
    let mut pause = FIRST_POLL;
    loop {
        let live = api.get(served, object.id.namespace.as_deref(), &object.id.name).await?;
        let Some(live) = live else {
            return Err(failed(format!("{} was deleted before it finished", object.id.kind)));
        };
        match state(&object.id.kind, &live) {
            State::Succeeded => return Ok(format!("{} succeeded", object.id.kind)),
            State::Failed(why) => return Err(failed(format!("{} failed: {why}", object.id.kind))),
            State::Running => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(failed(format!("{} did not finish within {}s", object.id.kind, hook.timeout.as_secs())));
        }
        sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(MAX_POLL);
    }
}

fn failed(message: String) -> ApiError {
    ApiError { code: 0, message: format!("hook: {message}") }
}

/// Where a hook Job or Pod stands.
#[derive(Debug, PartialEq, Eq)]
enum State {
    Running,
    Succeeded,
    Failed(String),
}

/// A Job by its Complete and Failed conditions, a Pod by its phase.
fn state(kind: &str, live: &Value) -> State {
    if kind == "Pod" {
        return match live.pointer("/status/phase").and_then(Value::as_str) {
            Some("Succeeded") => State::Succeeded,
            Some("Failed") => State::Failed(live.pointer("/status/reason").and_then(Value::as_str).unwrap_or("phase Failed").to_string()),
            _ => State::Running,
        };
    }
    let conditions = live.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let holds = |kind: &str| conditions.iter().find(|c| c["type"] == kind && c["status"] == "True");
    if holds("Complete").is_some() {
        return State::Succeeded;
    }
    match holds("Failed") {
        Some(c) => {
            let why: Vec<&str> = [&c["reason"], &c["message"]].into_iter().filter_map(Value::as_str).collect();
            State::Failed(if why.is_empty() { "condition Failed".into() } else { why.join(": ") })
        }
        None => State::Running,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_job_ends_by_its_conditions() {
        let job = |conditions: Value| json!({"status": {"conditions": conditions}});
        assert_eq!(state("Job", &json!({})), State::Running);
        assert_eq!(state("Job", &job(json!([{"type": "Complete", "status": "False"}]))), State::Running);
        assert_eq!(state("Job", &job(json!([{"type": "Complete", "status": "True"}]))), State::Succeeded);
        let failed = job(
            json!([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]),
        );
        assert_eq!(state("Job", &failed), State::Failed("BackoffLimitExceeded: Job has reached the specified backoff limit".into()));
    }

    #[test]
    fn a_pod_ends_by_its_phase() {
        let pod = |phase: &str| json!({"status": {"phase": phase}});
        assert_eq!(state("Pod", &pod("Running")), State::Running);
        assert_eq!(state("Pod", &pod("Pending")), State::Running);
        assert_eq!(state("Pod", &pod("Succeeded")), State::Succeeded);
        assert_eq!(state("Pod", &pod("Failed")), State::Failed("phase Failed".into()));
    }
}
