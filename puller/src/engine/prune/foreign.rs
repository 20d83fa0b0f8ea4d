//! Which of the objects a run would write exist already and are not Airlock's for this
//! cluster (spec 2.5.4), for the ownership check.
//!
//! The objects are read by kind and namespace (cluster-scoped kinds as one group): one
//! paged LIST of the group's objects that do not carry this cluster's label answers for
//! all of its objects at once, where a GET each would cost the API server a request per
//! object, as many as the first sync's applies. A group of one object is read with a
//! GET, which costs no more and cannot page through a crowded namespace. A LIST the puller
//! may not make (a contained puller is granted some cluster-scoped objects by name, which
//! allows get and not list) is answered by a GET per object instead, so the answer is the
//! same whatever the RBAC.

use std::collections::{BTreeMap, HashMap};

use airlock_bundle::vocabulary::CLUSTER_LABEL;
use futures::StreamExt;
use serde_json::Value;

use crate::engine::api::kube_api::{Api, Served};
use crate::engine::model::error::{ApiError, EngineError};
use crate::engine::model::object::{ObjectId, ObjectKey};
use crate::engine::prune::owner::{describe_owner, owner};

/// Objects per LIST page: a page's objects are held only while its names are looked up.
pub(crate) const PAGE: u32 = 500;

/// The objects of one kind in one namespace, by name.
type Group<'a> = (&'a Served, Option<&'a str>, BTreeMap<&'a str, &'a ObjectId>);

/// Of `objects` (each with how its kind is served), those that exist and do not carry
/// `label` (this cluster's `airlock.dev/cluster` value), each with its owner as a message
/// names it. At most `concurrency` requests in flight. A failed read is an error naming
/// the object it was for (of a LIST, the group's first).
pub(crate) async fn find<'a>(
    api: &Api,
    objects: impl Iterator<Item = (&'a Served, &'a ObjectId)>,
    label: &str,
    concurrency: usize,
) -> Result<HashMap<ObjectKey, String>, EngineError> {
    let mut groups: BTreeMap<(String, String, Option<&str>), Group<'a>> = BTreeMap::new();
    for (served, id) in objects {
        let namespace = id.namespace.as_deref();
        let key = (served.resource.api_version.clone(), served.resource.plural.clone(), namespace);
        groups.entry(key).or_insert_with(|| (served, namespace, BTreeMap::new())).2.insert(&id.name, id);
    }
    let selector = format!("{CLUSTER_LABEL}!={label}");
    let reads = groups.into_values().map(|group| read_group(api, group, &selector, label));
    let found: Vec<Result<_, EngineError>> = futures::stream::iter(reads).buffer_unordered(concurrency.max(1)).collect().await;
    let mut foreign = HashMap::new();
    for group in found {
        foreign.extend(group?);
    }
    Ok(foreign)
}

/// The foreign objects of one group: by GET when it has one object or the LIST is
/// forbidden, else by LIST.
async fn read_group(
    api: &Api,
    (served, namespace, names): Group<'_>,
    selector: &str,
    label: &str,
) -> Result<Vec<(ObjectKey, String)>, EngineError> {
    if names.len() > 1 {
        match list_group(api, served, namespace, &names, selector, label).await {
            Err(e) if e.code == 403 => {
                tracing::debug!(kind = %served.resource.kind, namespace, error = %e, "may not list: reading each object");
            }
            Err(error) => {
                let first = names.values().next().expect("a group has objects");
                return Err(EngineError::Read { object: first.to_string(), error });
            }
            Ok(found) => return Ok(found),
        }
    }
    let mut found = Vec::new();
    for id in names.values() {
        let live = api.get(served, namespace, &id.name).await.map_err(|error| EngineError::Read { object: id.to_string(), error })?;
        found.extend(live.filter(|l| owner(l) != Some(label)).map(|l| (id.key(), describe_owner(&l))));
    }
    Ok(found)
}

/// The foreign objects of one group by a paged LIST of the objects without `label`.
async fn list_group(
    api: &Api,
    served: &Served,
    namespace: Option<&str>,
    names: &BTreeMap<&str, &ObjectId>,
    selector: &str,
    label: &str,
) -> Result<Vec<(ObjectKey, String)>, ApiError> {
    let mut found = Vec::new();
    let mut from = None;
    loop {
        let (page, next) = api.list_page(served, namespace, selector, PAGE, from).await?;
        for live in &page {
            let name = live.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            // The selector leaves this cluster's objects out; the check stays for an
            // answer that did not apply it.
            if let Some(id) = names.get(name)
                && owner(live) != Some(label)
            {
                found.push((id.key(), describe_owner(live)));
            }
        }
        match next {
            Some(token) => from = Some(token),
            None => return Ok(found),
        }
    }
}
