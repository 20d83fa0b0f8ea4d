//! Restarting workloads whose mounted configuration changed (Sveltos `reloader`, spec
//! 5.10). The puller runs on a schedule, so a change is seen at the next run, not when it
//! happens: each run reads the ConfigMaps and Secrets every Deployment, StatefulSet and
//! DaemonSet of a reloader part mounts as a volume, digests their data per workload, and
//! rolls out again each workload whose digest moved since the one recorded, as `kubectl
//! rollout restart` does: a pod-template annotation set to the time.
//!
//! The annotation is written with a merge patch under a field manager of its own, so the
//! server-side apply of the manifest, which never names it, neither removes it nor
//! conflicts with it, and drift detection, which compares only the fields the manifest
//! sets, does not see it as drift. A workload seen for the first time is recorded, not
//! restarted: its pods started with the data there is. Keeping the digests between runs
//! is the caller's (`Mounted`). Entry points: [`workloads`], [`check_reload`].

use std::collections::BTreeSet;

use airlock_bundle::vocabulary::RESTARTED_AT_ANNOTATION;
use airlock_bundle::{Digest, SyncMode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::engine::api::kube_api::Api;
use crate::engine::model::error::{ApiError, EngineError};
use crate::engine::model::object::{DesiredObject, KnownKind, ObjectId};
use crate::engine::model::outcome::{Action, ObjectResult, Outcome};
use crate::engine::model::settings::Settings;
use crate::engine::model::tenants::Tenants;

/// The field manager of that annotation, kept apart from the manifests' (`airlock`).
const RELOADER_MANAGER: &str = "airlock-reloader";
/// The kinds a reloader restarts, all of group `apps`.
const KINDS: [(&str, &str); 3] = [("Deployment", "deployments"), ("StatefulSet", "statefulsets"), ("DaemonSet", "daemonsets")];

/// A workload of a reloader part and the ConfigMaps and Secrets it mounts as volumes.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub id: ObjectId,
    pub profile: String,
    pub config_maps: BTreeSet<String>,
    pub secrets: BTreeSet<String>,
    /// The tenant its part is applied as, who restarts it too.
    pub service_account: Option<airlock_bundle::statement::ServiceAccountRef>,
}

/// The digest of what one workload mounts, as a run last saw it: kept by the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mounted {
    pub workload: ObjectId,
    pub digest: Digest,
}

/// The workloads of reloader parts among `desired`, with what they mount (no API calls).
/// Parts held back, DryRun parts, which deploy nothing, and objects outside the
/// watch-namespaces, which the policy drops, have none.
pub fn workloads(desired: &[DesiredObject], settings: &Settings) -> Vec<Workload> {
    let watched = |ns: &Option<String>| match (&settings.watch_namespaces, ns) {
        (Some(list), Some(ns)) => list.contains(ns),
        _ => true,
    };
    desired
        .iter()
        .filter(|o| o.rules.reloader && o.sync_mode != SyncMode::DryRun && !settings.held_back.contains_key(&o.profile))
        .filter(|o| watched(&o.id.namespace))
        .filter(|o| o.id.group == "apps" && KINDS.iter().any(|(k, _)| *k == o.id.kind))
        .map(|o| {
            let manifest = o.manifest.value();
            let volumes = manifest.pointer("/spec/template/spec/volumes").and_then(Value::as_array).cloned().unwrap_or_default();
            let (mut config_maps, mut secrets) = (BTreeSet::new(), BTreeSet::new());
            let name = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(String::from);
            for volume in &volumes {
                config_maps.extend(volume.get("configMap").and_then(|c| name(c, "name")));
                secrets.extend(volume.get("secret").and_then(|s| name(s, "secretName")));
                for source in volume.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten() {
                    config_maps.extend(source.get("configMap").and_then(|c| name(c, "name")));
                    secrets.extend(source.get("secret").and_then(|s| name(s, "name")));
                }
            }
            Workload {
                id: o.id.clone(),
                profile: o.profile.clone(),
                config_maps,
                secrets,
                service_account: o.rules.service_account.clone(),
            }
        })
        .filter(|w| !w.config_maps.is_empty() || !w.secrets.is_empty())
        .collect()
}

/// The kinds this module reads and writes, known without discovery: all are core kinds
/// served under these names since Kubernetes 1.9.
fn known() -> Vec<KnownKind> {
    let kind = |api_version: &str, kind: &str, plural: &str| KnownKind {
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    };
    let mut known = vec![kind("v1", "ConfigMap", "configmaps"), kind("v1", "Secret", "secrets")];
    known.extend(KINDS.iter().map(|(k, plural)| kind("apps/v1", k, plural)));
    known
}

/// Reads what each workload mounts and compares its digest with `recorded`. Read-only.
pub async fn check_reload(
    client: &kube::Client,
    tenants: &Tenants,
    workloads: Vec<Workload>,
    recorded: &[Mounted],
) -> Result<ReloadCheck, EngineError> {
    let api = Api::new(client, &known(), tenants);
    let mut checked = Vec::with_capacity(workloads.len());
    for workload in workloads {
        let digest = mounted_digest(&api, &workload).await?;
        let before = recorded.iter().find(|m| m.workload.key() == workload.id.key()).map(|m| m.digest);
        checked.push((workload, digest, before));
    }
    Ok(ReloadCheck { api, checked })
}

/// The digest of the data of every ConfigMap and Secret `workload` mounts; one that is
/// missing counts as absent, so its creation is a change too.
async fn mounted_digest(api: &Api, workload: &Workload) -> Result<Digest, EngineError> {
    let namespace = workload.id.namespace.clone();
    let mut seen = Vec::new();
    let sources = workload.config_maps.iter().map(|n| ("ConfigMap", n)).chain(workload.secrets.iter().map(|n| ("Secret", n)));
    for (kind, name) in sources {
        let id =
            ObjectId { group: String::new(), version: "v1".into(), kind: kind.into(), namespace: namespace.clone(), name: name.clone() };
        let served = api.served(&id).await?.expect("core kinds are known");
        let live =
            api.get(&served, namespace.as_deref(), name).await.map_err(|error| EngineError::Read { object: id.to_string(), error })?;
        let data = live.map(|l| json!([l.get("data"), l.get("binaryData")]));
        seen.push(json!([kind, name, data]));
    }
    Ok(Digest::of(&serde_json::to_vec(&seen).expect("JSON serialises")))
}

/// What a reload check found, ready to restart.
pub struct ReloadCheck {
    api: Api,
    /// Each workload, the digest of what it mounts now, and the one recorded.
    checked: Vec<(Workload, Digest, Option<Digest>)>,
}

impl ReloadCheck {
    /// How many workloads are due a restart.
    pub fn due(&self) -> usize {
        self.checked.iter().filter(|(_, now, before)| before.is_some_and(|b| b != *now)).count()
    }

    /// What to record, when nothing is restarted: the digests as they are now.
    pub fn mounted(&self) -> Vec<Mounted> {
        self.checked.iter().map(|(w, now, _)| Mounted { workload: w.id.clone(), digest: *now }).collect()
    }

    /// Restarts every workload that is due (under `dry_run`, only says it would), and
    /// gives the digests to record: a workload whose restart failed keeps the one
    /// recorded, so the next run tries again.
    pub async fn restart(self, dry_run: bool) -> (Outcome, Vec<Mounted>) {
        let mut results = Vec::new();
        let mut mounted = Vec::new();
        let at = airlock_bundle::statement::rfc3339::format(&jiff::Timestamp::now());
        for (workload, now, before) in self.checked {
            let mut keep = now;
            if let Some(before) = before.filter(|b| *b != now) {
                let detail = format!("restarted: {} it mounts changed", mounts(&workload));
                let (action, detail) = if dry_run {
                    (Action::WouldConfigure, Some(format!("would be {detail}")))
                } else {
                    match restart(&self.api, &workload, &at).await {
                        Ok(()) => (Action::Restarted, Some(detail)),
                        Err(e) => {
                            keep = before;
                            (Action::Failed, Some(format!("restart: {e}")))
                        }
                    }
                };
                results.push(ObjectResult { id: workload.id.clone(), profile: workload.profile.clone(), action, detail, sealed: false });
            }
            mounted.push(Mounted { workload: workload.id, digest: keep });
        }
        (Outcome { results, api_requests: self.api.requests(), ..Outcome::default() }, mounted)
    }
}

/// "ConfigMap a, Secret b": what a workload mounts.
fn mounts(workload: &Workload) -> String {
    let named = workload.config_maps.iter().map(|n| format!("ConfigMap {n}")).chain(workload.secrets.iter().map(|n| format!("Secret {n}")));
    named.collect::<Vec<_>>().join(", ")
}

async fn restart(api: &Api, workload: &Workload, at: &str) -> Result<(), ApiError> {
    let served = api.served(&workload.id).await.ok().flatten().expect("the workload kinds are known");
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT_ANNOTATION: at}}}}});
    api.merge(workload.service_account.as_ref(), &served, &workload.id, &patch, RELOADER_MANAGER).await?;
    tracing::info!(object = %workload.id, "restarted: what it mounts changed");
    Ok(())
}

#[cfg(test)]
#[path = "reload_tests.rs"]
mod tests;
