//! Which kinds the API server serves and whether they are namespaced: discovery for kinds
//! it serves, the bundle's own CRDs for kinds it will serve once they are applied. Also
//! settles each object's namespace: a namespaced object without one goes to `default`
//! (whatever the puller's own namespace is), a cluster-scoped one drops it.
//!
//! Read-only: it runs before the policy check, so before any write.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::Value;

use crate::engine::api::kube_api::{Api, Served};
use crate::engine::model::error::EngineError;
use crate::engine::model::object::DesiredObject;
use crate::engine::model::order::{CRD_GROUP, CRD_KIND, Class, Stage};

/// Where kubectl puts a namespaced object without a namespace.
const DEFAULT_NAMESPACE: &str = "default";
/// How long discovery may lag behind a CRD's Established condition.
const DISCOVERY_RETRIES: u32 = 20;
const DISCOVERY_RETRY_DELAY: Duration = Duration::from_millis(500);

/// A desired object with what the API server knows of its kind.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub object: DesiredObject,
    /// None while its kind is defined by a CRD of the bundle that is not served yet.
    pub served: Option<Served>,
    pub namespaced: bool,
    pub stage: Stage,
}

/// Resolves every object's kind; a kind neither served nor defined by a CRD of the bundle
/// is an error listing every such object (the API server may gain it: retry next run).
pub(crate) async fn resolve(api: &Api, desired: Vec<DesiredObject>) -> Result<Vec<Target>, EngineError> {
    let defined = crd_scopes(&desired);
    let mut targets = Vec::with_capacity(desired.len());
    let mut unknown = Vec::new();
    for mut object in desired {
        let served = api.served(&object.id).await?;
        let namespaced = match (&served, defined.get(&(object.id.group.clone(), object.id.kind.clone()))) {
            (Some(served), _) => served.namespaced,
            (None, Some(&namespaced)) => namespaced,
            (None, None) => {
                unknown.push(format!("{} {} ({})", object.id.api_version(), object.id, object.source));
                continue;
            }
        };
        settle_namespace(&mut object, namespaced);
        let stage = Stage::new(Class::of(&object.id.group, &object.id.kind, namespaced), object.wave, object.tier);
        targets.push(Target { object, served, namespaced, stage });
    }
    if !unknown.is_empty() {
        return Err(EngineError::UnservedKinds { objects: unknown });
    }
    Ok(targets)
}

/// After CRDs were applied: asks discovery again for the kinds still missing, retrying
/// while discovery catches up. Targets whose kind never appears stay unresolved.
pub(crate) async fn refresh<'a>(api: &Api, targets: impl Iterator<Item = &'a mut Target>) -> Result<(), EngineError> {
    let mut missing: Vec<&mut Target> = targets.filter(|t| t.served.is_none()).collect();
    for attempt in 0..DISCOVERY_RETRIES {
        if missing.is_empty() {
            break;
        }
        if attempt > 0 {
            tokio::time::sleep(DISCOVERY_RETRY_DELAY).await;
        }
        for target in &missing {
            api.forget(&target.object.id.api_version());
        }
        for target in missing.iter_mut() {
            target.served = api.served(&target.object.id).await?;
        }
        missing.retain(|t| t.served.is_none());
    }
    Ok(())
}

/// (group, kind) → namespaced, for every kind a CRD of the bundle defines.
pub(crate) fn crd_scopes(desired: &[DesiredObject]) -> HashMap<(String, String), bool> {
    desired
        .iter()
        .filter(|o| o.id.group == CRD_GROUP && o.id.kind == CRD_KIND)
        .filter_map(|crd| {
            let manifest = crd.manifest.value();
            let spec = manifest.get("spec")?;
            let group = spec.get("group")?.as_str()?;
            let kind = spec.pointer("/names/kind")?.as_str()?;
            Some(((group.to_string(), kind.to_string()), spec.get("scope").and_then(Value::as_str) == Some("Namespaced")))
        })
        .collect()
}

fn settle_namespace(object: &mut DesiredObject, namespaced: bool) {
    match (namespaced, &object.id.namespace) {
        (true, None) => {
            object.id.namespace = Some(DEFAULT_NAMESPACE.into());
            object.manifest.edit_metadata(|metadata| {
                metadata.insert("namespace".into(), DEFAULT_NAMESPACE.into());
            });
        }
        (false, Some(_)) => {
            object.id.namespace = None;
            object.manifest.edit_metadata(|metadata| {
                metadata.remove("namespace");
            });
        }
        _ => {}
    }
}

/// Targets grouped by stage, in the order a sync runs them.
pub(crate) fn stages<T>(items: Vec<(Target, T)>) -> Vec<Vec<(Target, T)>> {
    let mut by_stage: BTreeMap<Stage, Vec<(Target, T)>> = BTreeMap::new();
    for item in items {
        by_stage.entry(item.0.stage).or_default().push(item);
    }
    by_stage.into_values().collect()
}
