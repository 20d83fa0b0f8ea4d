//! Writes what a report says per profile (`addons`, `profiles`, `dryrun`, `drift`) to the
//! Sveltos objects of the management cluster that Sveltos's own tools read: the cluster's
//! ClusterConfiguration (with the drift per profile as an annotation), the profiles'
//! status, and a ClusterReport per previewed profile. Every write is a server-side apply under the publisher's field
//! manager, the status through the status subresource; a profile's lists, which hold every
//! cluster, are applied conditional on the resourceVersion read, and read again on a
//! conflict.
//!
//! A management cluster without the ClusterConfiguration CRD (Sveltos's addon-controller
//! not installed) gets none of this, and that is no error. A `--to-dir` target has none of
//! these objects: nothing is written there.

use airlock_bundle::ClusterId;
use airlock_bundle::statement::rfc3339;
use airlock_bundle::vocabulary::DRIFT_ANNOTATION;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

use super::addons::{self, ProfileState};
use super::configuration::ProfileRef;
use super::drift;
use super::report::PullReport;
use super::target::TargetError;
use super::{dryrun, profiles};
use crate::annotations::FIELD_MANAGER;
use crate::sources::live::sveltos_kinds;

/// Attempts at a profile's status when others write it meanwhile.
const CONFLICT_ATTEMPTS: usize = 4;

/// What was written for one report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// The ClusterConfiguration was written (false: no CRD, or the report saw no bundle).
    pub configuration: bool,
    /// Profiles whose status changed.
    pub profiles: usize,
    /// ClusterReports of previewed profiles written.
    pub dry_runs: usize,
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
    let (old, old_drift) = match api.get_opt(&name).await {
        Ok(found) => {
            let drift = found.as_ref().and_then(|o| o.metadata.annotations.as_ref()?.get(DRIFT_ANNOTATION).cloned());
            (found.map(|o| o.data["status"].clone()).unwrap_or(Value::Null), drift)
        }
        // The kind is not served: Sveltos's addon-controller CRDs are not installed.
        Err(e) if airlock_cli::absent(&e) => return Ok(Written::default()),
        Err(e) => return Err(error(what(), e)),
    };
    let Some(change) = addons::addons(report, cluster, &old) else { return Ok(Written::default()) };
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let mut object = json!({
        "apiVersion": resource.api_version, "kind": resource.kind,
        "metadata": {"name": name, "namespace": cluster.namespace(), "labels": addons::configuration_labels(cluster)},
    });
    if let Some(drift) = drift::record(report, cluster, old_drift.as_deref()) {
        object["metadata"]["annotations"] = json!({DRIFT_ANNOTATION: drift});
    }
    match api.patch(&name, &apply, &Patch::Apply(&object)).await {
        Err(e) if airlock_cli::absent(&e) => return Ok(Written::default()),
        Err(e) => return Err(error(what(), e)),
        Ok(_) => {}
    }
    let status = json!({"apiVersion": resource.api_version, "kind": resource.kind, "status": change.status});
    api.patch_status(&name, &apply, &Patch::Apply(&status)).await.map_err(|e| error(what(), e))?;
    let time = rfc3339::format(&report.finished_at);
    let mut written = Written { configuration: true, ..Default::default() };
    for state in &change.profiles {
        if profile(client, cluster, state, &time).await? {
            written.profiles += 1;
        }
    }
    for (profile, entries) in dryrun::previews(report, cluster) {
        if cluster_report(client, cluster, &profile, entries).await? {
            written.dry_runs += 1;
        }
    }
    Ok(written)
}

/// The API of `profile`'s kind, its resource, and how errors name it.
fn profile_api(client: &kube::Client, profile: &ProfileRef) -> (Api<DynamicObject>, ApiResource, String) {
    let [_, (cluster_profiles, _), (namespaced, _)] = sveltos_kinds();
    match profile {
        ProfileRef::ClusterProfile(name) => {
            (Api::all_with(client.clone(), &cluster_profiles), cluster_profiles, format!("ClusterProfile {name}"))
        }
        ProfileRef::Profile { namespace, name } => {
            (Api::namespaced_with(client.clone(), namespace, &namespaced), namespaced, format!("Profile {namespace}/{name}"))
        }
    }
}

/// Writes the ClusterReport of `profile`'s preview on `cluster`, owned by the profile as
/// Sveltos's are; false when the profile is gone or the CRD is not installed.
async fn cluster_report(
    client: &kube::Client,
    cluster: &ClusterId,
    profile: &ProfileRef,
    entries: Vec<Value>,
) -> Result<bool, TargetError> {
    let (profiles, profile_resource, what) = profile_api(client, profile);
    let Some(owner) = profiles.get_opt(profile.name()).await.map_err(|e| error(what, e))? else { return Ok(false) };
    let gvk = GroupVersionKind::gvk("config.projectsveltos.io", "v1beta1", "ClusterReport");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "clusterreports");
    let name = dryrun::report_name(profile, cluster);
    let what = || format!("ClusterReport {}/{name}", cluster.namespace());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &resource);
    let owner = json!({"apiVersion": profile_resource.api_version, "kind": profile_resource.kind, "name": profile.name(), "uid": owner.metadata.uid});
    let object = json!({
        "apiVersion": resource.api_version, "kind": resource.kind,
        "metadata": {"name": name, "namespace": cluster.namespace(), "labels": dryrun::report_labels(profile, cluster), "ownerReferences": [owner]},
        "spec": {"clusterNamespace": cluster.namespace(), "clusterName": cluster.name()},
    });
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    match api.patch(&name, &apply, &Patch::Apply(&object)).await {
        Err(e) if airlock_cli::absent(&e) => return Ok(false),
        Err(e) => return Err(error(what(), e)),
        Ok(_) => {}
    }
    let status = json!({"apiVersion": resource.api_version, "kind": resource.kind, "status": {"resourceReports": entries}});
    api.patch_status(&name, &apply, &Patch::Apply(&status)).await.map_err(|e| error(what(), e))?;
    Ok(true)
}

/// Records `state` on its profile; false when the profile is gone or nothing changed.
async fn profile(client: &kube::Client, cluster: &ClusterId, state: &ProfileState, time: &str) -> Result<bool, TargetError> {
    let (api, resource, what) = profile_api(client, &state.profile);
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
