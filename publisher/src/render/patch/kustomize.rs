//! One object through the in-memory `kustomize build` Sveltos runs: the object as the only
//! resource, the patches as `patches:` entries with their targets, applied in order.
//!
//! Each patch selects the object again (`target`), then changes it: JSON 6902 operations
//! (`json_patch`) or strategic merge documents (`strategic`). A strategic merge patch
//! without a target must name the object by its own apiVersion, kind, name and namespace;
//! a JSON 6902 patch must have a target. kustomize writes the object's annotations out as
//! strings, and none when they are empty or null. A patch may delete the object
//! (`$patch: delete`); later patches then find nothing, and Sveltos, given no object back,
//! deploys the original.

use serde_json::{Map, Value};

use super::body::{self, Body, BodyError};
use super::error::{PatchError, describe};
use super::parsed::ForObject;
use super::target::{Id, text_map};
use super::{json_patch, strategic};

/// What the build made of the object.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Built {
    Object(Value),
    /// A patch deleted it.
    Deleted,
}

/// Runs the patches over the object, as kustomize would.
pub(super) fn build(object: &Value, patches: &[ForObject<'_>]) -> Result<Built, PatchError> {
    let name = describe(object);
    if let Err(reason) = body::check_object(object) {
        let patch = patches.first().map(|p| p.patch.source.clone()).unwrap_or_default();
        return Err(PatchError::InvalidObject { patch, object: name, reason });
    }
    // The ids an untargeted patch may name: the original's and those before each JSON
    // 6902 patch (kustomize's `PrevIds`), besides the current one.
    let mut ids = vec![Id::of(object)];
    let mut current = Some(object.clone());
    for ForObject { patch, body } in patches {
        let source = || patch.source.clone();
        let body = (**body).as_ref().map_err(|e| PatchError::InvalidPatch { patch: source(), object: name.clone(), error: e.clone() })?;
        let selected = |current: &Option<Value>| -> Result<bool, PatchError> {
            let (Some(target), Some(value)) = (&patch.target, current) else { return Ok(false) };
            target.kustomize_selects(object, value).map_err(|error| PatchError::InvalidTarget {
                patch: source(),
                object: name.clone(),
                error,
            })
        };
        let merge_failed = |error| PatchError::StrategicMerge { patch: source(), object: name.clone(), error };
        match (body, &patch.target) {
            (Body::Json6902(_) | Body::NoDocument, None) => {
                return Err(PatchError::Json6902WithoutTarget { patch: source(), object: name });
            }
            (Body::NoDocument, Some(_)) => {
                if selected(&current)? {
                    return Err(PatchError::InvalidPatch { patch: source(), object: name, error: BodyError::NoDocument });
                }
            }
            (Body::Json6902(ops), Some(_)) => {
                if !selected(&current)? {
                    continue;
                }
                let value = current.as_mut().expect("selected");
                ids.push(Id::of(value));
                json_patch::apply(value, ops).map_err(|error| PatchError::Json6902 { patch: source(), object: name.clone(), error })?;
            }
            (Body::Strategic(docs), Some(_)) => {
                if docs.len() > 1 {
                    return Err(PatchError::SeveralDocuments { patch: source(), object: name });
                }
                if let Some(doc) = docs.first()
                    && selected(&current)?
                {
                    let value = current.as_ref().expect("selected");
                    current = strategic::merge(value, doc).map_err(merge_failed)?;
                }
            }
            (Body::Strategic(docs), None) => {
                for doc in docs {
                    let wanted = Id::of(doc);
                    let found = current.as_ref().filter(|v| Id::of(v).same(&wanted) || ids.iter().any(|id| id.same(&wanted)));
                    let Some(value) = found else {
                        return Err(PatchError::OtherObject { patch: source(), object: name, wanted: wanted.to_string() });
                    };
                    current = strategic::merge(value, doc).map_err(merge_failed)?;
                }
            }
        }
    }
    Ok(match current {
        None => Built::Deleted,
        Some(mut value) => {
            annotations_as_strings(&mut value);
            Built::Object(value)
        }
    })
}

/// kustomize writes annotations back as a string map when it writes the object out: each
/// value by its text (`5` becomes `"5"`, `null` becomes `"null"`), and none at all when
/// the map is empty or null.
fn annotations_as_strings(value: &mut Value) {
    let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let Some(annotations) = metadata.get("annotations") else { return };
    let strings: Map<String, Value> = text_map(Some(annotations)).into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    if strings.is_empty() {
        metadata.remove("annotations");
    } else {
        metadata.insert("annotations".to_string(), Value::Object(strings));
    }
}
