//! Source B: a live management cluster (`--kubeconfig`, `KUBECONFIG`, `--context`, or
//! in-cluster config).
//!
//! Lists SveltosClusters, ClusterProfiles and Profiles (v1beta1, page by page), and the
//! ClusterSets, Sets, RoleRequests, Classifiers, EventSources, EventTriggers and EventReports when their CRDs are installed, and gets only the ConfigMaps,
//! Secrets and template resources that rendering names: a management cluster holds far
//! more Secrets than any profile references. Kinds other than ConfigMap and Secret are
//! found through discovery; a Flux source is read in the version asked for when the API
//! server serves it, else in the one it prefers among those serving the kind. An object
//! that cannot be read fails only the profiles that reference it. Nothing is written to
//! the cluster.
//!
//! The reads go through a [`ClusterReader`]: [`KubeReader`] holds the client; the
//! publisher's render worker, which holds no credentials, reads through its signer
//! process's. What is read is parsed here, on the caller's side.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, TypeMeta};
use kube::discovery::{Scope, pinned_kind};
use serde_json::Value;

use super::inventory::{Inventory, Resources, SourceError};
use super::key::{ObjectKey, Reference};
use super::model::kustomization::FLUX_SOURCE_GROUP;
use super::model::{CLUSTER_GROUP, PROFILE_GROUP, SVELTOS_VERSION};
/// What a list of a kind whose CRD is not installed says.
const NOT_INSTALLED: &str = " (is the Sveltos CRD installed?)";
/// Objects per list request: keeps each answer small on large management clusters.
const PAGE_SIZE: u32 = 500;

fn sveltos_resource(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, SVELTOS_VERSION, kind), plural)
}

/// The three Sveltos kinds the publisher lists, with whether they are namespaced.
pub fn sveltos_kinds() -> [(ApiResource, bool); 3] {
    [
        (sveltos_resource(CLUSTER_GROUP, "SveltosCluster", "sveltosclusters"), true),
        (sveltos_resource(PROFILE_GROUP, "ClusterProfile", "clusterprofiles"), false),
        (sveltos_resource(PROFILE_GROUP, "Profile", "profiles"), true),
    ]
}

/// The set kinds `setRefs` name, RoleRequests, Classifiers, the event kinds and the health
/// check kinds: listed when their CRDs are installed, none otherwise.
fn optional_kinds() -> [ApiResource; 9] {
    [
        sveltos_resource(CLUSTER_GROUP, "ClusterSet", "clustersets"),
        sveltos_resource(CLUSTER_GROUP, "Set", "sets"),
        sveltos_resource(CLUSTER_GROUP, "RoleRequest", "rolerequests"),
        sveltos_resource(CLUSTER_GROUP, "Classifier", "classifiers"),
        sveltos_resource(CLUSTER_GROUP, "HealthCheck", "healthchecks"),
        sveltos_resource(CLUSTER_GROUP, "ClusterHealthCheck", "clusterhealthchecks"),
        sveltos_resource(CLUSTER_GROUP, "EventSource", "eventsources"),
        sveltos_resource(CLUSTER_GROUP, "EventTrigger", "eventtriggers"),
        sveltos_resource(CLUSTER_GROUP, "EventReport", "eventreports"),
    ]
}

/// The reads the live source makes of the management cluster.
#[async_trait]
pub trait ClusterReader: Send + Sync {
    /// Every object of the listed kind whose plural is `plural` (one of [`sveltos_kinds`]
    /// and the optional kinds), with apiVersion and kind set.
    async fn list(&self, plural: &str) -> Result<Vec<Value>, SourceError>;

    /// Each of `wanted`, in order: `None` when it does not exist, an error message when it
    /// cannot be read.
    async fn get(&self, wanted: &[Reference]) -> Vec<Result<Option<Value>, String>>;
}

/// The management cluster, as the source reads it.
#[derive(Clone)]
pub struct LiveSource {
    reader: Arc<dyn ClusterReader>,
}

impl LiveSource {
    pub fn new(client: kube::Client) -> LiveSource {
        LiveSource::through(Arc::new(KubeReader { client }))
    }

    /// A source whose reads `reader` makes.
    pub fn through(reader: Arc<dyn ClusterReader>) -> LiveSource {
        LiveSource { reader }
    }

    pub async fn inventory(&self) -> Result<Inventory, SourceError> {
        let mut objects = Vec::new();
        for (ar, _) in sveltos_kinds() {
            objects.extend(self.reader.list(&ar.plural).await?);
        }
        for ar in optional_kinds() {
            match self.reader.list(&ar.plural).await {
                Ok(sets) => objects.extend(sets),
                Err(SourceError::Kube { message, .. }) if message.contains(NOT_INSTALLED) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Inventory::from_objects(objects.iter().map(|v| {
            let origin = ObjectKey::of(v).map_or_else(|| "management cluster".into(), |k| format!("management cluster {k}"));
            (origin, v)
        })))
    }

    /// The referenced objects that exist; one that cannot be read (no permission, an
    /// unknown kind) is a failure of the profiles referencing it, not of the run.
    pub async fn fetch(&self, wanted: &BTreeSet<Reference>) -> Resources {
        let wanted: Vec<Reference> = wanted.iter().cloned().collect();
        let read = self.reader.get(&wanted).await;
        let mut found = BTreeMap::new();
        let mut failed = BTreeMap::new();
        for (r, read) in wanted.into_iter().zip(read) {
            match read {
                Ok(Some(v)) => {
                    found.insert(r.key, v);
                }
                Ok(None) => {}
                Err(message) => {
                    failed.insert(r.key.clone(), format!("management cluster: get {}: {message}", r.key));
                }
            }
        }
        Resources::new(found, failed)
    }
}

/// A management cluster read with the publisher's own client.
pub struct KubeReader {
    client: kube::Client,
}

impl KubeReader {
    pub fn new(client: kube::Client) -> KubeReader {
        KubeReader { client }
    }
}

#[async_trait]
impl ClusterReader for KubeReader {
    async fn list(&self, plural: &str) -> Result<Vec<Value>, SourceError> {
        let listed = sveltos_kinds().into_iter().map(|(ar, _)| ar).chain(optional_kinds()).find(|ar| ar.plural == plural);
        let ar =
            listed.ok_or_else(|| SourceError::Kube { what: format!("list {plural}"), message: "not a kind the publisher lists".into() })?;
        self.list_all(&ar).await
    }

    async fn get(&self, wanted: &[Reference]) -> Vec<Result<Option<Value>, String>> {
        let mut discovered: BTreeMap<String, Result<(ApiResource, Scope), String>> = BTreeMap::new();
        let mut out = Vec::with_capacity(wanted.len());
        for r in wanted {
            out.push(self.get_one(r, &mut discovered).await);
        }
        out
    }
}

impl KubeReader {
    async fn list_all(&self, ar: &ApiResource) -> Result<Vec<Value>, SourceError> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), ar);
        let kube_err = |e: kube::Error| {
            let hint = if matches!(&e, kube::Error::Api(s) if s.code == 404) { NOT_INSTALLED } else { "" };
            SourceError::Kube { what: format!("list {}", ar.plural), message: format!("{e}{hint}") }
        };
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(PAGE_SIZE);
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            let page = api.list(&params).await.map_err(kube_err)?;
            out.extend(page.items.into_iter().map(|o| typed_value(o, ar)));
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                return Ok(out);
            }
        }
    }

    async fn get_one(
        &self,
        r: &Reference,
        discovered: &mut BTreeMap<String, Result<(ApiResource, Scope), String>>,
    ) -> Result<Option<Value>, String> {
        let key = &r.key;
        let text = |e: kube::Error| e.to_string();
        match (key.group.as_str(), key.kind.as_str()) {
            ("", "ConfigMap") => get_typed::<ConfigMap>(&self.client, key).await.map_err(text),
            ("", "Secret") => get_typed::<Secret>(&self.client, key).await.map_err(text),
            _ => {
                let gvk_id = format!("{}/{}", r.api_version, key.kind);
                if !discovered.contains_key(&gvk_id) {
                    let (group, version) = r.api_version.rsplit_once('/').unwrap_or(("", &r.api_version));
                    let found = if group == FLUX_SOURCE_GROUP {
                        self.any_served(group, version, &key.kind).await
                    } else {
                        let gvk = GroupVersionKind::gvk(group, version, &key.kind);
                        pinned_kind(&self.client, &gvk).await.map(|(ar, caps)| (ar, caps.scope)).map_err(text)
                    };
                    discovered.insert(gvk_id.clone(), found);
                }
                let (ar, scope) = discovered[&gvk_id].clone()?;
                let api: Api<DynamicObject> = match scope {
                    Scope::Namespaced => Api::namespaced_with(self.client.clone(), &key.namespace, &ar),
                    Scope::Cluster => Api::all_with(self.client.clone(), &ar),
                };
                Ok(api.get_opt(&key.name).await.map_err(text)?.map(|o| typed_value(o, &ar)))
            }
        }
    }

    /// `kind` of `group` in `version` when the API server serves it there, else in the
    /// first of its versions, by Kubernetes's version priority, that serves the kind.
    async fn any_served(&self, group: &str, version: &str, kind: &str) -> Result<(ApiResource, Scope), String> {
        let api_group = kube::discovery::group(&self.client, group).await.map_err(|e| format!("discover {group}: {e}"))?;
        let serving: Vec<&str> =
            api_group.versions().filter(|v| api_group.versioned_resources(v).iter().any(|(ar, _)| ar.kind == kind)).collect();
        let chosen = served_version(version, &serving)
            .ok_or_else(|| format!("the API server serves no version of {kind}.{group} (is Flux installed?)"))?;
        let found = api_group.versioned_resources(chosen).into_iter().find(|(ar, _)| ar.kind == kind);
        let (ar, caps) = found.expect("chosen among the versions serving the kind");
        Ok((ar, caps.scope))
    }
}

/// The version to read a kind in: `requested` when it is among `serving` (the versions
/// that serve the kind, by version priority), else the first of them.
fn served_version<'a>(requested: &str, serving: &[&'a str]) -> Option<&'a str> {
    serving.iter().find(|v| **v == requested).or_else(|| serving.first()).copied()
}

async fn get_typed<K>(client: &kube::Client, key: &ObjectKey) -> Result<Option<Value>, kube::Error>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), &key.namespace);
    Ok(api.get_opt(&key.name).await?.map(|o| serde_json::to_value(o).expect("a Kubernetes object serialises")))
}

/// The object as JSON with apiVersion and kind set: list items may come without them.
fn typed_value(mut obj: DynamicObject, ar: &ApiResource) -> Value {
    obj.types = Some(TypeMeta { api_version: ar.api_version.clone(), kind: ar.kind.clone() });
    serde_json::to_value(obj).expect("a Kubernetes object serialises")
}

#[cfg(test)]
mod tests {
    use super::served_version;

    #[test]
    fn reads_a_flux_source_in_v1beta2_when_v1_is_not_served() {
        assert_eq!(served_version("v1", &["v1beta2"]), Some("v1beta2"));
        assert_eq!(served_version("v1", &["v1beta2", "v1"]), Some("v1"), "the version asked for, when served, wins");
        assert_eq!(served_version("v1", &["v1", "v1beta2"]), Some("v1"));
        assert_eq!(served_version("v1", &[]), None);
    }
}
