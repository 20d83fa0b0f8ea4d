//! Where the SveltosClusters live that `ingest` reads keys from and writes status to: the
//! management cluster, or the `<ns>.<name>.sveltoscluster.yaml` files `register cluster
//! --to-dir` writes for management sets kept in Git.
//!
//! On the management cluster the status goes through the status subresource (server-side
//! apply, forced: the puller's report is the authority on it) and the annotations through a
//! merge patch of only those keys, so the labels, spec and report key that `register` applied
//! keep their owner. In a directory the file is rewritten whole, through a rename.

use std::path::{Path, PathBuf};

use airlock_bundle::ClusterId;
use kube::api::{Api, DynamicObject, Patch, PatchParams, TypeMeta};
use kube::discovery::ApiResource;
use serde_json::{Map, Value, json};

use super::status::{OWNED_STATUS, Update};
use crate::annotations::FIELD_MANAGER;
use crate::sources::live::sveltos_kinds;
use crate::yaml;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    #[error("management cluster: SveltosCluster {cluster}: {message}")]
    Kube { cluster: ClusterId, message: String },
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("management cluster: listing SveltosClusters: {message}")]
    List { message: String },
    /// A Sveltos object a report's profiles are recorded on (ClusterConfiguration, profile).
    #[error("management cluster: {what}: {message}")]
    Object { what: String, message: String },
}

/// The SveltosClusters' home.
pub enum Target {
    Live(kube::Client),
    /// The SveltosCluster files in `clusters`; the Classifiers that label them are those of
    /// the manifests under `classifiers`.
    Dir {
        clusters: PathBuf,
        classifiers: PathBuf,
    },
}

impl Target {
    /// The files in `dir`, labelled by the Classifiers under it.
    pub fn dir(dir: &Path) -> Target {
        Target::Dir { clusters: dir.to_path_buf(), classifiers: dir.to_path_buf() }
    }

    /// The SveltosCluster `cluster` as JSON, or `None` when there is none.
    pub async fn get(&self, cluster: &ClusterId) -> Result<Option<Value>, TargetError> {
        match self {
            Target::Live(client) => {
                let (api, resource) = api(client, cluster);
                let found = api.get_opt(cluster.name()).await.map_err(|e| kube_error(cluster, e))?;
                Ok(found.map(|mut o| {
                    o.types = Some(TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() });
                    serde_json::to_value(o).expect("a Kubernetes object serialises")
                }))
            }
            Target::Dir { clusters, .. } => read_file(&file_of(clusters, cluster), cluster),
        }
    }

    /// Every SveltosCluster, as JSON: of the management cluster (one list), or of the
    /// directory's `*.sveltoscluster.yaml` files.
    pub async fn list(&self) -> Result<Vec<Value>, TargetError> {
        match self {
            Target::Live(client) => {
                let [(resource, _), ..] = sveltos_kinds();
                let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
                let all = api.list(&Default::default()).await.map_err(|e| TargetError::List { message: e.to_string() })?;
                Ok(all
                    .items
                    .into_iter()
                    .map(|mut o| {
                        o.types = Some(TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() });
                        serde_json::to_value(o).expect("a Kubernetes object serialises")
                    })
                    .collect())
            }
            Target::Dir { clusters: dir, .. } => {
                let err = |e: std::io::Error| TargetError::File { path: dir.display().to_string(), message: e.to_string() };
                let mut objects = Vec::new();
                for entry in std::fs::read_dir(dir).map_err(err)? {
                    let name = entry.map_err(err)?.file_name().to_string_lossy().into_owned();
                    let Some((namespace, name)) = name.strip_suffix(".sveltoscluster.yaml").and_then(|n| n.split_once('.')) else {
                        continue;
                    };
                    let Ok(cluster) = ClusterId::new(namespace, name) else { continue };
                    objects.extend(read_file(&file_of(dir, &cluster), &cluster)?);
                }
                Ok(objects)
            }
        }
    }

    /// Writes `update` to `cluster`, whose current object is `object`.
    pub async fn write(&self, cluster: &ClusterId, object: &Value, update: &Update) -> Result<(), TargetError> {
        match self {
            Target::Live(client) => {
                let (api, resource) = api(client, cluster);
                let status = json!({"apiVersion": resource.api_version, "kind": resource.kind, "status": update.status});
                let apply = PatchParams::apply(FIELD_MANAGER).force();
                api.patch_status(cluster.name(), &apply, &Patch::Apply(&status)).await.map_err(|e| kube_error(cluster, e))?;
                if update.annotations.is_empty() {
                    return Ok(());
                }
                // The report time goes last, with the other annotations: if the status write
                // failed, the next ingest still finds this report new and tries again.
                let annotations: Map<String, Value> =
                    update.annotations.iter().map(|(k, v)| (k.to_string(), v.clone().map_or(Value::Null, Value::String))).collect();
                let merge = json!({"metadata": {"annotations": annotations}});
                let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
                api.patch(cluster.name(), &params, &Patch::Merge(&merge)).await.map_err(|e| kube_error(cluster, e))?;
                Ok(())
            }
            Target::Dir { clusters, .. } => write_file(&file_of(clusters, cluster), &updated(object, update)),
        }
    }
}

fn api(client: &kube::Client, cluster: &ClusterId) -> (Api<DynamicObject>, ApiResource) {
    let [(resource, _), ..] = sveltos_kinds();
    (Api::namespaced_with(client.clone(), cluster.namespace(), &resource), resource)
}

fn kube_error(cluster: &ClusterId, e: kube::Error) -> TargetError {
    TargetError::Kube { cluster: cluster.clone(), message: e.to_string() }
}

/// `<dir>/<ns>.<name>.sveltoscluster.yaml`, as `register cluster --to-dir` names it.
pub fn file_of(dir: &Path, cluster: &ClusterId) -> PathBuf {
    dir.join(format!("{}.{}.sveltoscluster.yaml", cluster.namespace(), cluster.name()))
}

fn read_file(path: &Path, cluster: &ClusterId) -> Result<Option<Value>, TargetError> {
    let err = |message: String| TargetError::File { path: path.display().to_string(), message };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(e.to_string())),
    };
    let mut docs = yaml::parse_documents(&text).map_err(|e| err(format!("not valid YAML: {e}")))?;
    let object = match (docs.pop(), docs.is_empty()) {
        (Some(object), true) => object,
        _ => return Err(err("expected exactly one YAML document, the SveltosCluster".into())),
    };
    let names = (object["metadata"]["namespace"].as_str(), object["metadata"]["name"].as_str());
    if object["kind"] != "SveltosCluster" || names != (Some(cluster.namespace()), Some(cluster.name())) {
        return Err(err(format!("does not hold SveltosCluster {cluster}")));
    }
    Ok(Some(object))
}

/// `object` with the update applied: status fields replaced, annotations set or removed.
pub fn updated(object: &Value, update: &Update) -> Value {
    let mut object = object.clone();
    if !object["status"].is_object() {
        object["status"] = json!({});
    }
    let status = object["status"].as_object_mut().expect("made an object above");
    for owned in OWNED_STATUS {
        status.remove(owned);
    }
    for (k, v) in &update.status {
        status.insert(k.clone(), v.clone());
    }
    if !object["metadata"]["annotations"].is_object() {
        object["metadata"]["annotations"] = json!({});
    }
    let annotations = object["metadata"]["annotations"].as_object_mut().expect("made an object above");
    for (k, v) in &update.annotations {
        match v {
            Some(v) => annotations.insert(k.to_string(), v.clone().into()),
            None => annotations.remove(*k),
        };
    }
    object
}

/// Replaces `path` through a temporary file and a rename, so a reader never sees half a file.
pub fn write_file(path: &Path, object: &Value) -> Result<(), TargetError> {
    let err = |e: std::io::Error| TargetError::File { path: path.display().to_string(), message: e.to_string() };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, yaml::emit(std::slice::from_ref(object))).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
