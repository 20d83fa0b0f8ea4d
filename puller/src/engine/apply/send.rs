//! One object's step of a run: what to do with it ([`Step`]) and doing it: a server-side
//! apply (a dry-run one for previews), a create of a create-only object (spec 2.5.1), or
//! nothing, with the result, the inventory entry and what waiting for a CRD needs.
//!
//! An object with drift exclusions that exists already is sent without the excluded
//! fields, so the values the cluster holds stay; the first create sends it whole (spec
//! 5.8). A create-only object is read first and created only when absent, with a plain
//! create, which the API server refuses rather than update an object made meanwhile. An
//! object marked for recreation whose update is refused so is deleted and applied anew
//! (`recreate`, spec 2.5.2). The order of the steps and what stops them is `apply`'s
//! business.

use std::collections::HashSet;

use airlock_bundle::StopMatchingBehavior;
use serde_json::Value;

use crate::engine::api::kube_api::{Api, Served};
use crate::engine::apply::hook_run;
use crate::engine::apply::recreate;
use crate::engine::drift::compare::{diff, render_changes};
use crate::engine::model::error::ApiError;
use crate::engine::model::helm::Wait;
use crate::engine::model::object::{DesiredObject, InventoryEntry, Manifest};
use crate::engine::model::order::Class;
use crate::engine::model::outcome::{Action, ObjectResult};
use crate::engine::model::settings::Settings;
use crate::engine::model::step::Step;
use crate::engine::parse::manifest::cluster_label;
use crate::engine::plan::scope::Target;

/// Why a create-only object that exists was not written.
const CREATE_ONLY_EXISTS: &str = "create-only: it exists, and is left as it is";

/// One object's result, its inventory entry, and, when it was really applied, the
/// object's uid, for a CRD what waiting until it is Established needs (how CRDs are
/// served, its name, the object the apply answered), and for an object of a release that
/// waits, how it is served and its wait; its entry when this run created it and a failed
/// run would delete it again, kept even if waiting for it fails. The manifest is not kept: it was sent.
pub(crate) struct Done {
    pub result: ObjectResult,
    pub entry: Option<InventoryEntry>,
    pub uid: Option<String>,
    pub crd: Option<(Served, String, Value)>,
    pub ready: Option<(Served, Wait)>,
    pub created: Option<InventoryEntry>,
}

impl Done {
    /// An object that was not (really) applied.
    pub(crate) fn not_applied(result: ObjectResult, entry: Option<InventoryEntry>) -> Done {
        Done { result, entry, uid: None, crd: None, ready: None, created: None }
    }

    /// Marks it failed with `error`.
    pub(crate) fn fail(&mut self, error: &ApiError) {
        self.result.action = Action::Failed;
        self.result.detail = Some(error.to_string());
    }
}

/// The result of `action` on `object`.
pub(crate) fn result(object: &DesiredObject, action: Action, detail: Option<String>) -> ObjectResult {
    ObjectResult { id: object.id.clone(), profile: object.profile.clone(), action, detail, sealed: object.sealed }
}

/// Runs `step` on `target`; `previous` is its entry in the previous inventory, and
/// `created_namespaces` the Namespaces this run creates (a preview of an object in one
/// of them cannot be sent).
pub(crate) async fn one(
    api: &Api,
    settings: &Settings,
    created_namespaces: &HashSet<String>,
    target: Target,
    step: Step,
    previous: Option<&InventoryEntry>,
) -> Done {
    let object = &target.object;
    let result = |action: Action, detail: Option<String>| result(object, action, detail);
    let fresh = InventoryEntry {
        id: object.id.clone(),
        profile: object.profile.clone(),
        applied_hash: object.hash.clone(),
        leave_on_removal: object.stop_matching_behavior == StopMatchingBehavior::LeavePolicies,
        release: object.release.clone(),
        hook: object.hook.is_some(),
        propagation: object.propagation,
        // Adopted once, adopted for good: the object was not Airlock's to begin with.
        adopted: previous.is_some_and(|p| p.adopted),
        service_account: object.rules.service_account.clone(),
    };
    let kept = previous.cloned();
    let (drift, preview) = match &step {
        Step::Unchanged => return Done::not_applied(result(Action::Unchanged, None), Some(fresh)),
        Step::Keep(entry) => {
            let entry = InventoryEntry { applied_hash: entry.applied_hash.clone(), ..fresh };
            let detail = Some("OneTime: applied before, never updated".to_string());
            return Done::not_applied(result(Action::Unchanged, detail), Some(entry));
        }
        Step::Skip(why) => return Done::not_applied(result(Action::Skipped, Some(why.clone())), kept),
        Step::Idle(why) => return Done::not_applied(result(Action::Unchanged, Some(why.to_string())), Some(fresh)),
        Step::Preview => (None, true),
        Step::Apply | Step::CreateOnly | Step::Fire(_) => (None, settings.dry_run),
        Step::Correct(how) => (Some(how.clone()), settings.dry_run),
    };
    // Correcting drift takes back fields another manager changed, which a plain apply
    // would refuse as a conflict.
    let force = object.force_conflicts || drift.is_some();
    if preview {
        let entry = if object.create_only { None } else { kept.clone() };
        return match dry_run(api, created_namespaces, &target, force).await {
            Ok((action, detail)) => {
                let detail = match (&drift, detail) {
                    (Some(how), Some(d)) => Some(format!("drifted: {how}\n{d}")),
                    (Some(how), None) => Some(format!("drifted: {how}")),
                    (None, d) => d,
                };
                Done::not_applied(result(action, detail), entry)
            }
            Err(e) => Done::not_applied(result(Action::Failed, Some(e.to_string())), entry),
        };
    }
    let Some(served) = &target.served else {
        let detail = format!("{} {} is not served, although its CRD was applied", object.id.api_version(), object.id.kind);
        return Done::not_applied(result(Action::Failed, Some(detail)), kept);
    };
    let label = cluster_label(&settings.cluster);
    let mut fired = None;
    let mut sent = match (&step, &object.hook) {
        (Step::CreateOnly, _) => create(api, served, object).await,
        (Step::Fire(event), Some(hook)) => hook_run::fire(api, served, object, hook, &label, force).await.map(|(created, live, ended)| {
            fired = Some(format!("{} hook: {ended}", event.as_str()));
            Some((created, live))
        }),
        _ => apply(api, served, object, force).await,
    };
    let mut recreated = None;
    if let Err(e) = &sent
        && !matches!(step, Step::Fire(_))
        && object.force_recreate
        && recreate::needed(e)
    {
        recreated = Some(format!("recreated: the update was refused: {e}"));
        sent = if fresh.adopted || object.adopt {
            // An adopted object was not Airlock's to begin with: it is never deleted.
            let message = format!("{}; not re-created: {} is adopted, and Airlock deletes only what it created", e.message, object.id);
            Err(ApiError { message, ..e.clone() })
        } else {
            recreate::run(api, served, object, &label, force, e.clone()).await.map(Some)
        };
    }
    match sent {
        Ok(None) => Done::not_applied(result(Action::Unchanged, Some(CREATE_ONLY_EXISTS.into())), None),
        Ok(Some((created, live))) => {
            let action = match (&drift, &recreated, created) {
                (Some(_), _, _) => Action::DriftCorrected,
                (None, Some(_), _) => Action::Recreated,
                (None, None, true) => Action::Created,
                (None, None, false) => Action::Configured,
            };
            let detail = match (drift, recreated) {
                (Some(how), Some(why)) => Some(format!("drifted: {how}\n{why}")),
                (how, why) => how.or(why).or(fired),
            };
            let uid = live.pointer("/metadata/uid").and_then(Value::as_str).map(String::from);
            tracing::info!(object = %object.id, action = ?action, "applied");
            let crd = (target.stage.class == Class::Crd).then(|| (served.clone(), object.id.name.clone(), live));
            let cleans_up = object.cleanup_on_fail.install || object.cleanup_on_fail.upgrade;
            let created = (action == Action::Created && cleans_up && !object.create_only).then(|| fresh.clone());
            let entry = (!object.create_only).then_some(fresh);
            let waits = matches!(action, Action::Created | Action::Configured | Action::Recreated);
            let ready = object.wait.filter(|_| waits).map(|wait| (served.clone(), wait));
            Done { result: result(action, detail), entry, uid, crd, ready, created }
        }
        Err(e) => {
            match object.sealed {
                true => tracing::warn!(object = %object.id, "apply failed (the error is withheld: the object came encrypted)"),
                false => tracing::warn!(object = %object.id, error = %e, "apply failed"),
            }
            let entry = if object.create_only { None } else { kept };
            Done::not_applied(result(Action::Failed, Some(e.to_string())), entry)
        }
    }
}

/// Server-side apply of `object`, without its excluded fields when it exists already:
/// whether it was created, and the object the server answered.
async fn apply(api: &Api, served: &Served, object: &DesiredObject, force: bool) -> Result<Option<(bool, Value)>, ApiError> {
    let stripped = match stripped(object) {
        Some(stripped) if api.get(served, object.id.namespace.as_deref(), &object.id.name).await?.is_some() => Some(stripped),
        _ => None,
    };
    let manifest = stripped.as_ref().unwrap_or(&object.manifest);
    api.apply(object.rules.service_account.as_ref(), served, &object.id, manifest.json(), force, false).await.map(Some)
}

/// A create-only object, created when absent: None when it exists.
async fn create(api: &Api, served: &Served, object: &DesiredObject) -> Result<Option<(bool, Value)>, ApiError> {
    if api.get(served, object.id.namespace.as_deref(), &object.id.name).await?.is_some() {
        return Ok(None);
    }
    Ok(api.create(object.rules.service_account.as_ref(), served, &object.id, object.manifest.json(), false).await?.map(|live| (true, live)))
}

/// The manifest without the fields its part's drift exclusions name for it, when any do.
fn stripped(object: &DesiredObject) -> Option<Manifest> {
    if object.rules.exclusions.is_empty() {
        return None;
    }
    object.rules.exclusions.without(&object.id, &object.manifest.value()).map(Manifest::from)
}

/// A server-side dry-run apply compared with the live object: what applying would do.
async fn dry_run(
    api: &Api,
    created_namespaces: &HashSet<String>,
    target: &Target,
    force: bool,
) -> Result<(Action, Option<String>), ApiError> {
    let object = &target.object;
    let Some(served) = &target.served else {
        return Ok((Action::WouldCreate, Some("its kind comes from a CRD that this bundle creates first".into())));
    };
    let namespace = object.id.namespace.as_deref();
    let live = api.get(served, namespace, &object.id.name).await?;
    let sent = match (&live, object.create_only) {
        (Some(_), true) => return Ok((Action::Unchanged, Some(CREATE_ONLY_EXISTS.into()))),
        (None, true) => {
            api.create(object.rules.service_account.as_ref(), served, &object.id, object.manifest.json(), true).await.map(|_| None)
        }
        (_, false) => {
            let stripped = live.as_ref().and_then(|_| stripped(object));
            let manifest = stripped.as_ref().unwrap_or(&object.manifest);
            api.apply(object.rules.service_account.as_ref(), served, &object.id, manifest.json(), force, true)
                .await
                .map(|(_, after)| Some(after))
        }
    };
    match sent {
        Ok(after) => Ok(match (live, after) {
            (Some(live), Some(after)) => {
                let changes = diff(&live, &after);
                if changes.is_empty() { (Action::Unchanged, None) } else { (Action::WouldConfigure, Some(render_changes(&changes))) }
            }
            _ => (Action::WouldCreate, None),
        }),
        Err(e) if object.force_recreate && live.is_some() && recreate::needed(&e) => {
            Ok((Action::WouldConfigure, Some(format!("would be deleted and re-created: the update is refused: {e}"))))
        }
        Err(e) if e.code == 404 && namespace.is_some_and(|ns| created_namespaces.contains(ns)) => {
            Ok((Action::WouldCreate, Some(format!("namespace {} is created by this bundle first", namespace.unwrap_or_default()))))
        }
        Err(e) => Err(e),
    }
}
