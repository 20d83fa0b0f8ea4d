//! Source B: a live management cluster (`--kubeconfig`, `KUBECONFIG`, `--context`, or
//! in-cluster config).
//!
//! Lists SveltosClusters, ClusterProfiles and Profiles (v1beta1, page by page), and gets
//! only the ConfigMaps, Secrets and template resources that rendering names: a management
//! cluster holds far more Secrets than any profile references. Kinds other than
//! ConfigMap and Secret are found through discovery. Nothing is written to the cluster.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, TypeMeta};
use kube::discovery::{Scope, pinned_kind};
use serde_json::Value;

use super::inventory::{Inventory, ObjectKey, Reference, Resources, SourceError};
use super::model::{CLUSTER_GROUP, PROFILE_GROUP};

/// The Sveltos version the publisher reads.
pub const SVELTOS_VERSION: &str = "v1beta1";
/// Objects per list request: keeps each answer small on large management clusters.
const PAGE_SIZE: u32 = 500;

/// The three Sveltos kinds the publisher lists, with whether they are namespaced.
pub fn sveltos_kinds() -> [(ApiResource, bool); 3] {
    let ar = |group: &str, kind: &str, plural: &str| {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, SVELTOS_VERSION, kind), plural)
    };
    [
        (ar(CLUSTER_GROUP, "SveltosCluster", "sveltosclusters"), true),
        (ar(PROFILE_GROUP, "ClusterProfile", "clusterprofiles"), false),
        (ar(PROFILE_GROUP, "Profile", "profiles"), true),
    ]
}

/// A connection to the management cluster.
#[derive(Clone)]
pub struct LiveSource {
    client: kube::Client,
}

impl LiveSource {
    pub fn new(client: kube::Client) -> LiveSource {
        LiveSource { client }
    }

    pub async fn inventory(&self) -> Result<Inventory, SourceError> {
        let mut objects = Vec::new();
        for (ar, _) in sveltos_kinds() {
            objects.extend(self.list(&ar).await?);
        }
        Inventory::from_objects(objects.iter().map(|v| {
            let origin = ObjectKey::of(v).map_or_else(|| "management cluster".into(), |k| format!("management cluster {k}"));
            (origin, v)
        }))
    }

    async fn list(&self, ar: &ApiResource) -> Result<Vec<Value>, SourceError> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), ar);
        let kube_err = |e: kube::Error| {
            let hint = if matches!(&e, kube::Error::Api(s) if s.code == 404) { " (is the Sveltos CRD installed?)" } else { "" };
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

    pub async fn fetch(&self, wanted: &BTreeSet<Reference>) -> Result<Resources, SourceError> {
        let mut found = BTreeMap::new();
        let mut discovered: BTreeMap<String, (ApiResource, Scope)> = BTreeMap::new();
        for r in wanted {
            let key = &r.key;
            let kube_err = |e: kube::Error| SourceError::Kube { what: format!("get {key}"), message: e.to_string() };
            let value = match (key.group.as_str(), key.kind.as_str()) {
                ("", "ConfigMap") => get_typed::<ConfigMap>(&self.client, key).await.map_err(kube_err)?,
                ("", "Secret") => get_typed::<Secret>(&self.client, key).await.map_err(kube_err)?,
                _ => {
                    let gvk_id = format!("{}/{}", r.api_version, key.kind);
                    if !discovered.contains_key(&gvk_id) {
                        let (group, version) = r.api_version.rsplit_once('/').unwrap_or(("", &r.api_version));
                        let gvk = GroupVersionKind::gvk(group, version, &key.kind);
                        let (ar, caps) = pinned_kind(&self.client, &gvk).await.map_err(kube_err)?;
                        discovered.insert(gvk_id.clone(), (ar, caps.scope));
                    }
                    let (ar, scope) = &discovered[&gvk_id];
                    let api: Api<DynamicObject> = match scope {
                        Scope::Namespaced => Api::namespaced_with(self.client.clone(), &key.namespace, ar),
                        Scope::Cluster => Api::all_with(self.client.clone(), ar),
                    };
                    api.get_opt(&key.name).await.map_err(kube_err)?.map(|o| typed_value(o, ar))
                }
            };
            if let Some(v) = value {
                found.insert(key.clone(), v);
            }
        }
        Ok(Resources(found))
    }
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
