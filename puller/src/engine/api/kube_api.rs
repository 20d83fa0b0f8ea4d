//! The one place the engine talks to the API server: discovery per group-version, apply,
//! create, get, list (whole or by pages), delete, merge and JSON patch, each request counted (`Outcome::api_requests`).
//!
//! Discovery asks only for the group-versions the bundle and the inventory use, one
//! request each, and caches the answer for the run: a full discovery costs dozens of
//! requests on every run, and one broken aggregated API (a metrics server that is down)
//! would fail it. The aggregated discovery endpoint is never used: 1.20 answers it with 406.
//! Kinds the caller already knows (`KnownKind`, kept in the state from the last apply) are
//! not asked for at all: a kind's resource name and scope never change while it is served
//! (both are immutable in a CRD), and a kind no longer served answers 404, which the
//! callers handle as they handle a kind discovery does not list.
//! Requests are sent raw so that an apply can tell created (201) from configured (200).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::TryStreamExt;
pub(crate) use kube::api::PropagationPolicy;
use kube::api::{ApiResource, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent, WatchParams};
use kube::core::{DynamicObject, GroupVersion, Request, Resource, Status};
use kube::discovery::Scope;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::model::error::{ApiError, EngineError};
use crate::engine::model::object::{KnownKind, ObjectId};
use crate::engine::model::tenants::Tenants;

/// Who a write is sent as: the puller (None), or the tenant ServiceAccount of the
/// object's part.
pub(crate) type Writer<'a> = Option<&'a airlock_bundle::statement::ServiceAccountRef>;

/// Server-side apply's field manager: whose fields Airlock owns.
pub(crate) const FIELD_MANAGER: &str = "airlock";
/// How long a new CRD may take to become Established (usually well under a second).
const ESTABLISHED_TIMEOUT: Duration = Duration::from_secs(60);

/// A kind the API server serves.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    pub resource: ApiResource,
    pub namespaced: bool,
}

impl Served {
    fn known(&self) -> KnownKind {
        KnownKind {
            api_version: self.resource.api_version.clone(),
            kind: self.resource.kind.clone(),
            plural: self.resource.plural.clone(),
            namespaced: self.namespaced,
        }
    }
}

impl KnownKind {
    fn served(&self) -> Served {
        let (group, version) = self.api_version.split_once('/').unwrap_or(("", &self.api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, &self.kind);
        Served { resource: ApiResource::from_gvk_with_plural(&gvk, &self.plural), namespaced: self.namespaced }
    }
}

/// A counting, caching view of one API server for one run.
pub(crate) struct Api {
    client: kube::Client,
    requests: AtomicU64,
    /// Per apiVersion: the kinds served, or None when the group-version is not served.
    served: Mutex<HashMap<String, Option<Vec<Served>>>>,
    /// Kinds known without discovery, by (apiVersion, kind).
    known: Mutex<HashMap<(String, String), Served>>,
    /// Who writes a tenant part's objects: never `client`.
    tenants: Tenants,
}

impl Api {
    pub(crate) fn new(client: &kube::Client, known: &[KnownKind], tenants: &Tenants) -> Api {
        Api {
            client: client.clone(),
            tenants: tenants.clone(),
            requests: AtomicU64::new(0),
            served: Mutex::new(HashMap::new()),
            known: Mutex::new(known.iter().map(|k| ((k.api_version.clone(), k.kind.clone()), k.served())).collect()),
        }
    }

    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The served kind of `id`'s apiVersion, or None when the server does not serve it.
    pub(crate) async fn served(&self, id: &ObjectId) -> Result<Option<Served>, EngineError> {
        let api_version = id.api_version();
        let find = |kinds: &Option<Vec<Served>>| kinds.iter().flatten().find(|s| s.resource.kind == id.kind).cloned();
        if let Some(kinds) = self.served.lock().expect("not poisoned").get(&api_version) {
            return Ok(find(kinds));
        }
        if let Some(known) = self.known.lock().expect("not poisoned").get(&(api_version.clone(), id.kind.clone())) {
            return Ok(Some(known.clone()));
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
            Err(e) => return Err(EngineError::Discovery { api_version, message: e.to_string() }),
        };
        let found = find(&kinds);
        self.served.lock().expect("not poisoned").insert(api_version, kinds);
        Ok(found)
    }

    /// Forgets what discovery said and what was known about `api_version`, after a CRD
    /// changed it or a request found it not served.
    pub(crate) fn forget(&self, api_version: &str) {
        self.served.lock().expect("not poisoned").remove(api_version);
        self.known.lock().expect("not poisoned").retain(|(v, _), _| v != api_version);
    }

    /// How `id`'s kind is served, from what this run learnt, without asking.
    pub(crate) fn learnt(&self, id: &ObjectId) -> Option<KnownKind> {
        let api_version = id.api_version();
        let cached = self.served.lock().expect("not poisoned").get(&api_version).cloned();
        match cached {
            Some(kinds) => kinds.into_iter().flatten().find(|s| s.resource.kind == id.kind).map(|s| s.known()),
            None => self.known.lock().expect("not poisoned").get(&(api_version, id.kind.clone())).map(Served::known),
        }
    }

    /// Server-side apply as `by`; returns whether the object was created, and the object.
    pub(crate) async fn apply(
        &self,
        by: Writer<'_>,
        served: &Served,
        id: &ObjectId,
        manifest: &RawValue,
        force: bool,
        dry_run: bool,
    ) -> Result<(bool, Value), ApiError> {
        let mut params = PatchParams::apply(FIELD_MANAGER);
        params.force = force;
        params.dry_run = dry_run;
        let request = self.request(served, id.namespace.as_deref()).patch(&id.name, &params, &Patch::Apply(manifest));
        let (status, body) = self.send_as(by, request).await?;
        Ok((status == 201, parse(&body)?))
    }

    /// A JSON merge patch of the object under `manager`, as `by`, for fields the manifests
    /// never name (a restart's pod-template annotation).
    pub(crate) async fn merge(
        &self,
        by: Writer<'_>,
        served: &Served,
        id: &ObjectId,
        patch: &Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        let params = PatchParams { field_manager: Some(manager.into()), ..PatchParams::default() };
        let request = self.request(served, id.namespace.as_deref()).patch(&id.name, &params, &Patch::Merge(patch));
        let (_, body) = self.send_as(by, request).await?;
        parse(&body)
    }

    /// A JSON patch of the object under `manager`, as `by`: `patch` is its operations,
    /// whose `test`s make it conditional (422 when one fails).
    pub(crate) async fn json_patch(
        &self,
        by: Writer<'_>,
        served: &Served,
        id: &ObjectId,
        patch: Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        let patch = serde_json::from_value(patch).map_err(|e| ApiError { code: 0, message: format!("building the patch: {e}") })?;
        let params = PatchParams { field_manager: Some(manager.into()), ..PatchParams::default() };
        let request = self.request(served, id.namespace.as_deref()).patch(&id.name, &params, &Patch::<()>::Json(patch));
        let (_, body) = self.send_as(by, request).await?;
        parse(&body)
    }

    /// Creates the object as `by`, which server-side apply would update if it existed:
    /// the object created, or None when one of that name exists (409).
    pub(crate) async fn create(
        &self,
        by: Writer<'_>,
        served: &Served,
        id: &ObjectId,
        manifest: &RawValue,
        dry_run: bool,
    ) -> Result<Option<Value>, ApiError> {
        let params = PostParams { dry_run, field_manager: Some(FIELD_MANAGER.into()) };
        let request = self.request(served, id.namespace.as_deref()).create(&params, manifest.get().as_bytes().to_vec());
        match self.send_as(by, request).await {
            Ok((_, body)) => Ok(Some(parse(&body)?)),
            Err(e) if e.code == 409 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The live object, or None when it does not exist.
    pub(crate) async fn get(&self, served: &Served, namespace: Option<&str>, name: &str) -> Result<Option<Value>, ApiError> {
        let request = self.request(served, namespace).get(name, &Default::default());
        match self.send(request).await {
            Ok((_, body)) => Ok(Some(parse(&body)?)),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every object of a kind carrying `selector`, in one request (no paging: lists of a
    /// few thousand objects are what the API server answers routinely).
    pub(crate) async fn list(&self, served: &Served, namespace: Option<&str>, selector: &str) -> Result<Vec<Value>, ApiError> {
        let request = self.request(served, namespace).list(&ListParams::default().labels(selector));
        let (_, body) = self.send(request).await?;
        items(&mut parse(&body)?)
    }

    /// One page of at most `limit` objects of a kind carrying `selector`, from where
    /// `from` (the last page's continue token) left off: the objects, and the token of the
    /// next page, None after the last.
    pub(crate) async fn list_page(
        &self,
        served: &Served,
        namespace: Option<&str>,
        selector: &str,
        limit: u32,
        from: Option<String>,
    ) -> Result<(Vec<Value>, Option<String>), ApiError> {
        let mut params = ListParams::default().labels(selector).limit(limit);
        params.continue_token = from;
        let (_, body) = self.send(self.request(served, namespace).list(&params)).await?;
        let mut list = parse(&body)?;
        let next = list.pointer("/metadata/continue").and_then(Value::as_str).filter(|t| !t.is_empty()).map(String::from);
        Ok((items(&mut list)?, next))
    }

    /// Deletes the object with this uid (so a re-created namesake survives); an object
    /// already gone is not an error. `propagation` says when its dependents go: in the
    /// background, or before the object itself (foreground).
    pub(crate) async fn delete(
        &self,
        by: Writer<'_>,
        served: &Served,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
        propagation: PropagationPolicy,
    ) -> Result<(), ApiError> {
        let params = DeleteParams {
            propagation_policy: Some(propagation),
            preconditions: Some(Preconditions { uid: Some(uid.to_string()), resource_version: None }),
            ..DeleteParams::default()
        };
        let request = self.request(served, namespace).delete(name, &params);
        match self.send_as(by, request).await {
            Err(e) if e.code == 404 => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Waits until the CRD `name` has condition Established=True, given the object its
    /// apply answered: at once when that says so, else by watching the CRD from that
    /// answer's resourceVersion. One request, answered the moment the condition is set,
    /// where polling would wait a poll interval and ask again and again.
    pub(crate) async fn wait_established(&self, served: &Served, name: &str, applied: &Value) -> Result<(), ApiError> {
        if established(applied) {
            return Ok(());
        }
        let timeout = || ApiError { code: 0, message: format!("not Established after {}s", ESTABLISHED_TIMEOUT.as_secs()) };
        let version = applied.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("0");
        let params = WatchParams::default().fields(&format!("metadata.name={name}")).timeout(ESTABLISHED_TIMEOUT.as_secs() as u32);
        let request = self
            .request(served, None)
            .watch(&params, version)
            .map_err(|e| ApiError { code: 0, message: format!("building request: {e}") })?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        let failed = |e: kube::Error| match e {
            kube::Error::Api(status) => ApiError { code: status.code, message: status.message },
            e => ApiError { code: 0, message: e.to_string() },
        };
        let watch = async {
            let events = self.client.request_events::<Value>(request).await.map_err(failed)?;
            futures::pin_mut!(events);
            while let Some(event) = events.try_next().await.map_err(failed)? {
                match event {
                    WatchEvent::Added(crd) | WatchEvent::Modified(crd) if established(&crd) => return Ok(()),
                    WatchEvent::Deleted(_) => return Err(ApiError { code: 404, message: "deleted while waiting".into() }),
                    WatchEvent::Error(status) => return Err(ApiError { code: status.code, message: status.message }),
                    _ => {}
                }
            }
            Err(timeout())
        };
        tokio::time::timeout(ESTABLISHED_TIMEOUT, watch).await.unwrap_or_else(|_| Err(timeout()))
    }

    fn request(&self, served: &Served, namespace: Option<&str>) -> Request {
        Request::new(DynamicObject::url_path(&served.resource, namespace))
    }

    /// A SelfSubjectAccessReview of the puller's own rights: the server's answer.
    pub(crate) async fn review(&self, review: &Value) -> Result<Value, ApiError> {
        let request = serde_json::to_vec(review).map_err(kube::core::request::Error::SerializeBody).and_then(|body| {
            http::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body)
                .map_err(kube::core::request::Error::BuildRequest)
        });
        let (_, answer) = self.send(request).await?;
        parse(&answer)
    }

    /// Counts and sends one request as the puller.
    async fn send(&self, request: Result<http::Request<Vec<u8>>, kube::core::request::Error>) -> Result<(u16, Vec<u8>), ApiError> {
        self.send_with(&self.client, request).await
    }

    /// Counts and sends one write as `by`: a tenant's through its impersonating client.
    async fn send_as(
        &self,
        by: Writer<'_>,
        request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<(u16, Vec<u8>), ApiError> {
        let client = match by {
            None => &self.client,
            Some(account) => self.tenants.writer(account)?,
        };
        self.send_with(client, request).await
    }

    /// Counts and sends one request through `client`; an error status becomes an
    /// [`ApiError`] with the server's message.
    async fn send_with(
        &self,
        client: &kube::Client,
        request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<(u16, Vec<u8>), ApiError> {
        let request = request.map_err(|e| ApiError { code: 0, message: format!("building request: {e}") })?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        let unreachable = |e: kube::Error| ApiError { code: 0, message: e.to_string() };
        let response = client.send(request.map(kube::client::Body::from)).await.map_err(unreachable)?;
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

/// Whether a CRD's status says Established=True.
fn established(crd: &Value) -> bool {
    let conditions = crd.pointer("/status/conditions").and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| c["type"] == "Established" && c["status"] == "True")
}

/// The objects of a list answer.
fn items(list: &mut Value) -> Result<Vec<Value>, ApiError> {
    match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => Ok(items),
        Some(Value::Null) | None => Ok(Vec::new()),
        Some(_) => Err(ApiError { code: 0, message: "list answer has no items array".into() }),
    }
}

fn parse(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError { code: 0, message: format!("unreadable answer: {e}") })
}
