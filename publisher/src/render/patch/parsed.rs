//! A profile's patches as Sveltos collects them, and as [`ParsedPatch`]es: read and
//! compiled once, then applied to every object of every cluster.
//!
//! A patch that does not parse is kept with its error, which is raised only when the
//! patch meets an object its target matches: Sveltos hands kustomize only the patches that
//! match, so a broken patch that matches nothing deploys fine.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::body::{self, Body, BodyError};
use super::error::{PatchError, describe};
use super::missing_remove::{self, Filtered, Removal};
use super::target::Compiled;
use crate::sources::model::Target;

/// One patch, after templating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Where it comes from, for errors: `ClusterProfile/web spec.patches[2]`, or
    /// `ClusterProfile/web patchesFrom ConfigMap fleet/edge-patches key labels`.
    pub source: String,
    /// A strategic merge patch or a JSON 6902 patch, YAML or JSON.
    pub text: String,
    /// `None` matches every object.
    pub target: Option<Target>,
}

impl Patch {
    /// Reads one data value of a patchesFrom ConfigMap or Secret: a YAML document
    /// `{patch: "...", target: {...}}`, as Sveltos unmarshals it into a `Patch` (YAML 1.1,
    /// field names in any case, unknown fields ignored, an empty value an empty patch).
    pub fn from_data_value(source: impl Into<String>, value: &str) -> Result<Patch, PatchError> {
        let source = source.into();
        let invalid = |reason: String| PatchError::InvalidEntry { patch: source.clone(), reason };
        let doc = crate::yaml::parse_documents(value).map_err(|e| invalid(format!("not YAML: {e}")))?;
        let fields = match doc.into_iter().next() {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(invalid("not a map".into())),
        };
        let text = string(&fields, "patch").map_err(invalid)?.unwrap_or_default();
        let target = match field(&fields, "target") {
            None | Some(Value::Null) => None,
            Some(Value::Object(t)) => Some(Target {
                group: string(t, "group").map_err(invalid)?,
                version: string(t, "version").map_err(invalid)?,
                kind: string(t, "kind").map_err(invalid)?,
                name: string(t, "name").map_err(invalid)?,
                namespace: string(t, "namespace").map_err(invalid)?,
                label_selector: string(t, "labelSelector").map_err(invalid)?,
                annotation_selector: string(t, "annotationSelector").map_err(invalid)?,
            }),
            Some(_) => return Err(invalid("target is not a map".into())),
        };
        Ok(Patch { source, text, target })
    }
}

/// A field as Go's encoding/json finds it: by exact name, else ignoring case.
fn field<'m>(map: &'m Map<String, Value>, name: &str) -> Option<&'m Value> {
    map.get(name).or_else(|| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
}

fn string(map: &Map<String, Value>, name: &str) -> Result<Option<String>, String> {
    match field(map, name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{name} is not a string")),
    }
}

/// A patch read and compiled for reuse across objects and clusters.
#[derive(Debug)]
pub struct ParsedPatch {
    pub(super) source: String,
    pub(super) target: Option<Compiled>,
    pub(super) body: Result<Body, BodyError>,
    /// The operations Sveltos's pre-filter reads, when it reads the patch as a list.
    pub(super) operations: Option<Vec<Value>>,
}

/// A patch as it meets one object after Sveltos's pre-filters: the patch, and its body
/// for that object (the written one, or the operations left after the filter).
pub(super) struct ForObject<'p> {
    pub patch: &'p ParsedPatch,
    pub body: Cow<'p, Result<Body, BodyError>>,
}

/// A JSON 6902 `remove` that Sveltos drops for an object that lacks its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedOperation {
    /// The patch, as [`Patch::source`] names it.
    pub patch: String,
    /// The operation's index in the patch, from 0.
    pub index: usize,
    pub path: String,
    /// The object, as `Kind namespace/name`.
    pub object: String,
}

impl std::fmt::Display for DroppedOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: operation {} (remove {}) dropped for {}, which has no such path; the patch's other operations apply",
            self.patch, self.index, self.path, self.object
        )
    }
}

impl ParsedPatch {
    pub fn new(patch: &Patch) -> ParsedPatch {
        ParsedPatch {
            source: patch.source.clone(),
            target: patch.target.as_ref().map(Compiled::new),
            body: body::parse(&patch.text),
            operations: missing_remove::operations(&patch.text),
        }
    }

    /// Parses a profile's patches in Sveltos's order.
    pub fn all(patches: &[Patch]) -> Vec<ParsedPatch> {
        patches.iter().map(ParsedPatch::new).collect()
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Sveltos's pre-filters for one object: the target matches (`patchMatchesObject`),
    /// then each remove of a path the object lacks is dropped (`filterPatchOperations`),
    /// recorded in `dropped`. `None`: the patch does not apply to the object.
    pub(super) fn for_object(&self, object: &Value, dropped: &mut Vec<DroppedOperation>) -> Result<Option<ForObject<'_>>, PatchError> {
        let invalid = |error| PatchError::InvalidTarget { patch: self.source.clone(), object: describe(object), error };
        if let Some(target) = &self.target
            && !target.sveltos_matches(object).map_err(invalid)?
        {
            return Ok(None);
        }
        let Some(operations) = &self.operations else { return Ok(Some(ForObject { patch: self, body: Cow::Borrowed(&self.body) })) };
        let mut record = |removals: Vec<Removal>| {
            let name = describe(object);
            let each = removals.into_iter().map(|r| DroppedOperation {
                patch: self.source.clone(),
                index: r.index,
                path: r.path,
                object: name.clone(),
            });
            dropped.extend(each);
        };
        Ok(match missing_remove::filter(operations, object) {
            Filtered::Whole => Some(ForObject { patch: self, body: Cow::Borrowed(&self.body) }),
            Filtered::Rebuilt { text, dropped: removals } => {
                record(removals);
                Some(ForObject { patch: self, body: Cow::Owned(body::parse(&text)) })
            }
            Filtered::Empty { dropped: removals } => {
                record(removals);
                None
            }
        })
    }
}
