//! The one place the engine talks to the API server: discovery per group-version, apply,
//! get, list and delete, each request counted (`Outcome::api_requests`).
//!
//! Discovery asks only for the group-versions the bundle and the inventory use, one
//! request each, and caches the answer for the run: a full discovery costs dozens of
//! requests on every run, and one broken aggregated API (a metrics server that is down)
//! would fail it. The aggregated discovery endpoint is never used: 1.20 answers it with 406.
//! Requests are sent raw so that an apply can tell created (201) from configured (200).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kube::api::{ApiResource, DeleteParams, ListParams, Patch, PatchParams, Preconditions, PropagationPolicy};
use kube::core::{DynamicObject, GroupVersion, Request, Resource, Status};
use kube::discovery::Scope;
use serde_json::Value;

use super::{EngineError, ObjectId};

/// Server-side apply's field manager: whose fields Airlock owns.
pub(super) const FIELD_MANAGER: &str = "airlock";
/// How long a new CRD may take to become Established (usually well under a second).
const ESTABLISHED_TIMEOUT: Duration = Duration::from_secs(60);
const ESTABLISHED_POLL: Duration = Duration::from_millis(250);

/// A request the API server refused or that did not reach it (`code` 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ApiError {
    pub code: u16,
    pub message: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            0 => write!(f, "{}", self.message),
            code => write!(f, "{} (HTTP {code})", self.message),
        }
    }
}

/// A kind the API server serves.
#[derive(Debug, Clone)]
pub(super) struct Served {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// A counting, caching view of one API server for one run.
pub(super) struct Api {
    client: kube::Client,
    requests: AtomicU64,
    /// Per apiVersion: the kinds served, or None when the group-version is not served.
    served: Mutex<HashMap<String, Option<Vec<Served>>>>,
}

impl Api {
    pub(super) fn new(client: &kube::Client) -> Api {
        Api { client: client.clone(), requests: AtomicU64::new(0), served: Mutex::new(HashMap::new()) }
    }

    pub(super) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The served kind of `id`'s apiVersion, or None when the server does not serve it.
    pub(super) async fn served(&self, id: &ObjectId) -> Result<Option<Served>, EngineError> {
        let api_version = id.api_version();
        let find = |kinds: &Option<Vec<Served>>| kinds.iter().flatten().find(|s| s.resource.kind == id.kind).cloned();
        if let Some(kinds) = self.served.lock().expect("not poisoned").get(&api_version) {
            return Ok(find(kinds));
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let kinds = match kube::discovery::pinned_group(&self.client, &GroupVersion::gv(&id.group, &id.version)).await {
            Ok(group) => Some(
                group
                    .versioned_resources(&id.version)
                    .into_iter()
                    .map(|(resource, caps)| Served { resource, namespaced: caps.scope == Scope::Namespaced })
                    .collect(),
            ),
            Err(kube::Error::Api(status)) if status.code == 404 => None,
            Err(e) => return Err(EngineError::Api(format!("discovery of {api_version}: {e}"))),
        };
        let found = find(&kinds);
        self.served.lock().expect("not poisoned").insert(api_version, kinds);
        Ok(found)
    }

    /// Forgets what discovery said about `api_version`, after a CRD changed it.
    pub(super) fn forget(&self, api_version: &str) {
        self.served.lock().expect("not poisoned").remove(api_version);
    }

    /// Server-side apply; returns whether the object was created, and the object.
    pub(super) async fn apply(
        &self,
        served: &Served,
        id: &ObjectId,
        manifest: &Value,
        force: bool,
        dry_run: bool,
    ) -> Result<(bool, Value), ApiError> {
        let mut params = PatchParams::apply(FIELD_MANAGER);
        params.force = force;
        params.dry_run = dry_run;
        let request = self.request(served, id.namespace.as_deref()).patch(&id.name, &params, &Patch::Apply(manifest));
        let (status, body) = self.send(request).await?;
        Ok((status == 201, parse(&body)?))
    }

    /// The live object, or None when it does not exist.
    pub(super) async fn get(
        &self,
        served: &Served,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, ApiError> {
        let request = self.request(served, namespace).get(name, &Default::default());
        match self.send(request).await {
            Ok((_, body)) => Ok(Some(parse(&body)?)),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every object of a kind carrying `selector`, in one request (no paging: lists of a
    /// few thousand objects are what the API server answers routinely).
    pub(super) async fn list(
        &self,
        served: &Served,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<Value>, ApiError> {
        let request = self.request(served, namespace).list(&ListParams::default().labels(selector));
        let (_, body) = self.send(request).await?;
        let mut list = parse(&body)?;
        match list.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => Ok(items),
            Some(Value::Null) | None => Ok(Vec::new()),
            Some(_) => Err(ApiError { code: 0, message: "list answer has no items array".into() }),
        }
    }

    /// Deletes the object with this uid (so a re-created namesake survives); an object
    /// already gone is not an error. Dependents are collected in the background.
    pub(super) async fn delete(
        &self,
        served: &Served,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
    ) -> Result<(), ApiError> {
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(Preconditions { uid: Some(uid.to_string()), resource_version: None }),
            ..DeleteParams::default()
        };
        let request = self.request(served, namespace).delete(name, &params);
        match self.send(request).await {
            Err(e) if e.code == 404 => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Waits until the CRD `name` has condition Established=True.
    pub(super) async fn wait_established(&self, served: &Served, name: &str) -> Result<(), ApiError> {
        let deadline = tokio::time::Instant::now() + ESTABLISHED_TIMEOUT;
        loop {
            let crd = self.get(served, None, name).await?;
            let conditions = crd.as_ref().and_then(|c| c.pointer("/status/conditions")).and_then(Value::as_array);
            let established =
                conditions.into_iter().flatten().any(|c| c["type"] == "Established" && c["status"] == "True");
            if established {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                let message = format!("not Established after {}s", ESTABLISHED_TIMEOUT.as_secs());
                return Err(ApiError { code: 0, message });
            }
            tokio::time::sleep(ESTABLISHED_POLL).await;
        }
    }

    fn request(&self, served: &Served, namespace: Option<&str>) -> Request {
        Request::new(DynamicObject::url_path(&served.resource, namespace))
    }

    /// Counts and sends one request; an error status becomes an [`ApiError`] with the
    /// server's message.
    async fn send(
        &self,
        request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<(u16, Vec<u8>), ApiError> {
        let request = request.map_err(|e| ApiError { code: 0, message: format!("building request: {e}") })?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        let unreachable = |e: kube::Error| ApiError { code: 0, message: e.to_string() };
        let response = self.client.send(request.map(kube::client::Body::from)).await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let body = response.into_body().collect_bytes().await.map_err(unreachable)?.to_vec();
        if status >= 400 {
            let message = match serde_json::from_slice::<Status>(&body) {
                Ok(s) if !s.message.is_empty() => s.message,
                _ => String::from_utf8_lossy(&body).trim().chars().take(500).collect(),
            };
            return Err(ApiError { code: status, message });
        }
        Ok((status, body))
    }
}

fn parse(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError { code: 0, message: format!("unreadable answer: {e}") })
}
