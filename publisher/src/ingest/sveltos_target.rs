//! Writes what a report says per profile (`addons`, `profiles`) to the Sveltos objects of
//! the management cluster that Sveltos's own tools read: the cluster's ClusterConfiguration
//! and the profiles' status. Every write is a server-side apply under the publisher's field
//! manager, the status through the status subresource; a profile's lists, which hold every
//! cluster, are applied conditional on the resourceVersion read, and read again on a
//! conflict.
//!
//! A management cluster without the ClusterConfiguration CRD (Sveltos's addon-controller
//! not installed) gets none of this, and that is no error. A `--to-dir` target has none of
//! these objects: nothing is written there.

use airlock_bundle::ClusterId;
use airlock_bundle::statement::rfc3339;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

use super::addons::{self, ProfileRef, ProfileState};
use super::profiles;
use super::report::PullReport;
use super::target::TargetError;
use crate::annotations::FIELD_MANAGER;
use crate::sveltos::live::sveltos_kinds;

/// Attempts at a profile's status when others write it meanwhile.
const CONFLICT_ATTEMPTS: usize = 4;

/// What was written for one report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// The ClusterConfiguration was written (false: no CRD, or the report saw no bundle).
    pub configuration: bool,
    /// Profiles whose status changed.
    pub profiles: usize,
}

fn configuration_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("config.projectsveltos.io", "v1beta1", "ClusterConfiguration");
    ApiResource::from_gvk_with_plural(&gvk, "clusterconfigurations")
}

fn error(what: String, e: kube::Error) -> TargetError {
    TargetError::Object { what, message: e.to_string() }
}

/// Records `report` of `cluster` on the ClusterConfiguration and the profiles it names.
pub async fn write(client: &kube::Client, cluster: &ClusterId, report: &PullReport) -> Result<Written, TargetError> {
    let resource = configuration_resource();
    let name = addons::configuration_name(cluster);
    let what = || format!("ClusterConfiguration {}/{name}", cluster.namespace());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &resource);
    let old = match api.get_opt(&name).await {
        Ok(found) => found.map(|o| o.data["status"].clone()).unwrap_or(Value::Null),
        Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(Written::default()),
        Err(e) => return Err(error(what(), e)),
    };
    let Some(change) = addons::addons(report, cluster, &old) else { return Ok(Written::default()) };
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let object = json!({
        "apiVersion": resource.api_version, "kind": resource.kind,
        "metadata": {"name": name, "namespace": cluster.namespace(), "labels": addons::configuration_labels(cluster)},
    });
    match api.patch(&name, &apply, &Patch::Apply(&object)).await {
        // The kind is not served: Sveltos's addon-controller CRDs are not installed.
        Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(Written::default()),
        Err(e) => return Err(error(what(), e)),
        Ok(_) => {}
    }
    let status = json!({"apiVersion": resource.api_version, "kind": resource.kind, "status": change.status});
    api.patch_status(&name, &apply, &Patch::Apply(&status)).await.map_err(|e| error(what(), e))?;
    let time = rfc3339::format(&report.finished_at);
    let mut changed = 0;
    for state in &change.profiles {
        if profile(client, cluster, state, &time).await? {
            changed += 1;
        }
    }
    Ok(Written { configuration: true, profiles: changed })
}

/// Records `state` on its profile; false when the profile is gone or nothing changed.
async fn profile(client: &kube::Client, cluster: &ClusterId, state: &ProfileState, time: &str) -> Result<bool, TargetError> {
    let [_, (cluster_profiles, _), (namespaced, _)] = sveltos_kinds();
    let (api, resource, what): (Api<DynamicObject>, _, _) = match &state.profile {
        ProfileRef::ClusterProfile(name) => {
            (Api::all_with(client.clone(), &cluster_profiles), cluster_profiles, format!("ClusterProfile {name}"))
        }
        ProfileRef::Profile { namespace, name } => {
            (Api::namespaced_with(client.clone(), namespace, &namespaced), namespaced, format!("Profile {namespace}/{name}"))
        }
    };
    let name = state.profile.name();
    for _ in 0..CONFLICT_ATTEMPTS {
        let Some(found) = api.get_opt(name).await.map_err(|e| error(what.clone(), e))? else { return Ok(false) };
        let current = serde_json::to_value(&found).expect("a Kubernetes object serialises");
        let Some(status) = profiles::status(&current, cluster, state, time) else { return Ok(false) };
        let patch = json!({
            "apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": name, "resourceVersion": found.metadata.resource_version},
            "status": status,
        });
        match api.patch_status(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&patch)).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.is_conflict() => continue,
            Err(e) => return Err(error(what, e)),
        }
    }
    Err(TargetError::Object { what, message: format!("its status changed {CONFLICT_ATTEMPTS} times while being written") })
}
