//! Deleting and creating again an object whose update the API server refused in a way
//! only that resolves (Sveltos `policyRefs[].force` and `projectsveltos.io/forceRecreate`,
//! spec 2.5.2): which refusals count, and doing it. Whether an object may be recreated is
//! read when the bundle is parsed (`manifest`); when to try is `send`'s.
//!
//! The old object is deleted in the foreground, so its dependents (a Job's Pods, a
//! Deployment's ReplicaSets) are gone before the new one is made: nothing of the old one
//! runs beside the new one or waits to be adopted by it. The wait is bounded; an object
//! still there after it fails this run, and the next run creates it once it is gone.
//!
//! Only an object Airlock created for this cluster is deleted, whatever the bundle says:
//! the live copy must carry this cluster's label, and the delete names its uid. A foreign
//! one, or one of the name made since it was read, is left in place and the object fails.
//! Entry points: [`needed`], [`run`], [`delete_and_wait`], [`ours`].

use std::time::Duration;

use serde_json::Value;

use crate::engine::api::kube_api::{Api, PropagationPolicy, Served};
use crate::engine::model::error::ApiError;
use crate::engine::model::object::{DesiredObject, ObjectId};
use crate::engine::prune::owner::{describe_owner, owner};

/// How long the deleted object may take to disappear, dependents included.
const GONE_TIMEOUT: Duration = Duration::from_secs(60);
/// The first pause between two reads while waiting; it doubles up to `MAX_POLL`, so a
/// quick deletion is seen quickly and a slow one is not asked about many times a second.
const FIRST_POLL: Duration = Duration::from_millis(100);
const MAX_POLL: Duration = Duration::from_secs(2);

/// Whether `error` refuses an update that deleting and creating the object could let
/// through: the update is invalid (422, reason Invalid: a field combination the object
/// cannot move to) or the server says a field is immutable, as Sveltos decides it.
pub(crate) fn needed(error: &ApiError) -> bool {
    error.code == 422 || error.message.to_ascii_lowercase().contains("immutable")
}

/// Deletes the live copy of `object`, waits until it is gone, and applies `object` anew:
/// whether it was created, and the object the server answered. `refused` is the error
/// that asked for it, returned as it is when there is no live copy to delete (the object
/// was refused as a create, which deleting cannot change).
/// `label` is this cluster's `airlock.dev/cluster` value.
pub(crate) async fn run(
    api: &Api,
    served: &Served,
    object: &DesiredObject,
    label: &str,
    force: bool,
    refused: ApiError,
) -> Result<(bool, Value), ApiError> {
    if !delete_and_wait(api, served, object, label, PropagationPolicy::Foreground).await? {
        return Err(refused);
    }
    match object.sealed {
        true => tracing::info!(object = %object.id, "deleted to be re-created (the refusal is withheld: the object came encrypted)"),
        false => tracing::info!(object = %object.id, error = %refused, "deleted to be re-created"),
    }
    api.apply(object.rules.service_account.as_ref(), served, &object.id, object.manifest.json(), force, false).await
}

/// Deletes the live copy of `object`, if there is one, and waits until it is gone:
/// whether there was one. A Helm hook's previous copy goes the same way. A live copy that
/// is not Airlock's for this cluster (`label`) is an error, and stays.
pub(crate) async fn delete_and_wait(
    api: &Api,
    served: &Served,
    object: &DesiredObject,
    label: &str,
    propagation: PropagationPolicy,
) -> Result<bool, ApiError> {
    let namespace = object.id.namespace.as_deref();
    let Some(live) = api.get(served, namespace, &object.id.name).await? else {
        return Ok(false);
    };
    ours(&live, &object.id, label)?;
    let Some(uid) = uid(&live) else {
        return Ok(false);
    };
    api.delete(object.rules.service_account.as_ref(), served, namespace, &object.id.name, &uid, propagation).await?;
    wait_gone(api, served, object, &uid).await?;
    Ok(true)
}

/// Refuses a live object that Airlock did not create for this cluster (`label`): it is
/// never deleted, so the object of the bundle that would replace it fails instead.
pub(crate) fn ours(live: &Value, id: &ObjectId, label: &str) -> Result<(), ApiError> {
    if owner(live) == Some(label) {
        return Ok(());
    }
    let message = format!("{id} is not Airlock's for this cluster ({}): left in place, not deleted", describe_owner(live));
    Err(ApiError { code: 0, message })
}

/// Waits until no object of `object`'s name with `uid` exists.
async fn wait_gone(api: &Api, served: &Served, object: &DesiredObject, uid: &str) -> Result<(), ApiError> {
    let deadline = tokio::time::Instant::now() + GONE_TIMEOUT;
    let mut pause = FIRST_POLL;
    loop {
        let live = api.get(served, object.id.namespace.as_deref(), &object.id.name).await?;
        if live.as_ref().and_then(self::uid).as_deref() != Some(uid) {
            return Ok(());
        }
        if tokio::time::Instant::now() + pause > deadline {
            let message = format!("deleted, but still there after {}s", GONE_TIMEOUT.as_secs());
            return Err(ApiError { code: 0, message });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_POLL);
    }
}

fn uid(live: &Value) -> Option<String> {
    live.pointer("/metadata/uid").and_then(Value::as_str).map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(code: u16, message: &str) -> ApiError {
        ApiError { code, message: message.into() }
    }

    #[test]
    fn invalid_and_immutable_refusals_need_a_recreate() {
        let immutable = r#"Service "web" is invalid: spec.clusterIP: Invalid value: "10.0.0.9": field is immutable"#;
        assert!(needed(&error(422, immutable)));
        assert!(needed(&error(422, "Deployment.apps \"web\" is invalid: spec.strategy.rollingUpdate: Forbidden")));
        assert!(needed(&error(400, "update rejected: Immutable field detected")));
    }

    #[test]
    fn only_an_object_labelled_for_this_cluster_is_ours_to_delete() {
        let id = crate::engine::testing::object("v1", "ConfigMap", Some("web"), "cfg").id;
        let labelled = |label: &str| serde_json::json!({"metadata": {"labels": {"airlock.dev/cluster": label}}});
        assert_eq!(ours(&labelled("fleet.edge-1"), &id, "fleet.edge-1"), Ok(()));
        for (live, owner) in [
            (labelled("fleet.edge-2"), "airlock.dev/cluster=fleet.edge-2"),
            (serde_json::json!({"metadata": {"labels": {"app": "x"}}}), "no airlock.dev/cluster label"),
            (serde_json::json!({"metadata": {}}), "no airlock.dev/cluster label"),
        ] {
            let refused = ours(&live, &id, "fleet.edge-1").expect_err("not ours");
            assert_eq!(
                refused.message,
                format!("ConfigMap web/cfg is not Airlock's for this cluster ({owner}): left in place, not deleted")
            );
        }
    }

    #[test]
    fn other_refusals_do_not() {
        let others = [
            error(409, "Apply failed with 1 conflict: conflict with \"kubectl\": .data.a"),
            error(403, "configmaps \"a\" is forbidden"),
            error(404, "namespaces \"gone\" not found"),
            error(0, "connection refused"),
            error(500, "etcdserver: request timed out"),
        ];
        assert!(!others.iter().any(needed), "{others:?}");
    }
}
