//! Drift detection for ContinuousWithDriftDetection profiles: one list call per kind (per
//! watched namespace when watch-namespaces restrict the puller's permissions), selected by
//! Airlock's cluster label, so a check costs about one request per kind, not one per
//! object. Each desired object is compared with its live copy (`compare::first_drift`);
//! only drifted or deleted objects are re-applied. Fields the object's drift exclusions
//! name are not compared (spec 5.8). A list answered 404 means the kind is no
//! longer served (its CRD was deleted): its objects are then treated as those of a kind
//! discovery does not list, which a correction serves again by re-applying the CRD.

use std::collections::{BTreeMap, HashMap};

use airlock_bundle::vocabulary::CLUSTER_LABEL;
use futures::StreamExt;
use serde_json::Value;

use crate::engine::api::kube_api::Api;
use crate::engine::drift::compare::first_drift;
use crate::engine::model::error::EngineError;
use crate::engine::model::settings::Settings;
use crate::engine::parse::manifest::cluster_label;
use crate::engine::plan::scope::Target;

const NOT_SERVED: &str = "its kind is not served: the CRD defining it is missing";

/// For each target: None when the live object matches, else how it drifted. Targets of a
/// kind found not served lose their `served`.
pub(crate) async fn detect(api: &Api, targets: &mut [Target], settings: &Settings) -> Result<Vec<Option<String>>, EngineError> {
    let per_namespace = settings.watch_namespaces.is_some();
    let mut out = vec![None; targets.len()];
    let mut lists: BTreeMap<(String, String, Option<String>), Vec<usize>> = BTreeMap::new();
    for (i, target) in targets.iter().enumerate() {
        if target.served.is_none() {
            out[i] = Some(NOT_SERVED.into());
            continue;
        }
        let id = &target.object.id;
        let namespace = if target.namespaced && per_namespace { id.namespace.clone() } else { None };
        lists.entry((id.api_version(), id.kind.clone(), namespace)).or_default().push(i);
    }
    let selector = format!("{CLUSTER_LABEL}={}", cluster_label(&settings.cluster));
    let targets_read = &*targets;
    let requests = lists.into_iter().map(|((api_version, kind, namespace), members)| {
        let (selector, targets) = (&selector, targets_read);
        async move {
            let served = targets[members[0]].served.as_ref().expect("only served kinds are listed");
            let items = match api.list(served, namespace.as_deref(), selector).await {
                Ok(items) => Some(items),
                Err(e) if e.code == 404 => {
                    api.forget(&api_version);
                    None
                }
                Err(error) => return Err(EngineError::List { api_version, kind, error }),
            };
            Ok((members, items))
        }
    });
    let listed: Vec<_> = futures::stream::iter(requests).buffer_unordered(settings.concurrency.max(1)).collect().await;
    for listed in listed {
        let (members, items) = listed?;
        let Some(items) = items else {
            for i in members {
                targets[i].served = None;
                out[i] = Some(NOT_SERVED.into());
            }
            continue;
        };
        let live: HashMap<(Option<&str>, &str), &Value> = items
            .iter()
            .filter_map(|item| {
                let namespace = item.pointer("/metadata/namespace").and_then(Value::as_str);
                Some(((namespace, item.pointer("/metadata/name")?.as_str()?), item))
            })
            .collect();
        for i in members {
            let object = &targets[i].object;
            out[i] = match live.get(&(object.id.namespace.as_deref(), object.id.name.as_str())) {
                None => Some("deleted from the cluster".into()),
                Some(live) => {
                    let manifest = object.manifest.value();
                    let compared = object.rules.exclusions.without(&object.id, &manifest);
                    first_drift(compared.as_ref().unwrap_or(&manifest), live).map(|change| change.as_drift())
                }
            };
        }
    }
    Ok(out)
}
