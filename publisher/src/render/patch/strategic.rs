//! Strategic merge patches as kustomize applies them: kyaml's `merge2` walk, a port of
//! kustomize's `ApplySmPatch` around it, over the node [`Tree`].
//!
//! Maps merge field by field; a patch's `null` deletes a field (a null the object holds is
//! kept); scalars and lists without a schema are replaced; lists the schema merges go to
//! `assoc`. `$patch: replace|delete|merge` works on maps and lists. kyaml knows no other
//! directive: `$setElementOrder/…`, `$retainKeys` and `$deleteFromPrimitiveList/…` are
//! merged as the plain fields they look like, which is what Sveltos deploys.
//!
//! Around the walk, as kustomize: the patch's labels and annotations are read as strings
//! (`null` becomes `"null"`, and an empty or null map says nothing), its apiVersion is the
//! object's, the object keeps its kind, name and namespace whatever the patch says, and a
//! `$patch: replace` of the whole document changes nothing.

use serde_json::{Map, Value};

use super::assoc;
use super::elements::{Directive, MergeError, directive, dotted};
use super::schema::Schema;
use super::tree::{Id, Kind, Node, Tree, value_text as text};

/// Applies one strategic merge patch document to an object; `None` when the patch deletes
/// it (`$patch: delete`, or a merge that leaves nothing).
pub(super) fn merge(object: &Value, patch: &Value) -> Result<Option<Value>, MergeError> {
    let patch = prepared(object, patch);
    let mut tree = Tree::default();
    let dest = tree.add(object);
    let origin = tree.add(&patch);
    // kustomize keeps the object's own root node, merged in place, and looks at what the
    // walk returns only to see whether it deleted the object: a `$patch: replace` of the
    // whole document changes nothing.
    if walk(&mut tree, Some(dest), Some(origin), None, &mut Vec::new())?.is_none() {
        return Ok(None);
    }
    let mut merged = tree.value(dest);
    if merged.as_object().is_none_or(Map::is_empty) {
        return Ok(None);
    }
    restore_identity(&mut merged, object);
    Ok(Some(merged))
}

/// kyaml's `Walker.Walk` with the `merge2` visitor: merges one pair of nodes.
fn walk(
    tree: &mut Tree,
    dest: Option<Id>,
    origin: Option<Id>,
    schema: Option<Schema>,
    path: &mut Vec<String>,
) -> Result<Option<Id>, MergeError> {
    let schema = schema.or_else(|| kind_schema(tree, dest)).or_else(|| kind_schema(tree, origin));
    let (object_kind, patch_kind) = (dest.and_then(|d| tree.kind(d)), origin.and_then(|o| tree.kind(o)));
    if let (Some(object), Some(patch)) = (object_kind, patch_kind)
        && object != patch
    {
        return Err(MergeError::KindMismatch { path: dotted(path), object: object.name(), patch: patch.name() });
    }
    let kind = object_kind.or(patch_kind);
    match kind {
        None | Some(Kind::Map) => walk_map(tree, dest, origin, schema, path),
        Some(Kind::Seq) => match schema.and_then(|s| s.merge_keys().map(|keys| (s, keys))) {
            Some((schema, keys)) => assoc::merge(tree, dest, origin, schema, keys, path, walk),
            None => Ok(origin.or(dest)),
        },
        Some(Kind::Scalar) => Ok(origin.or(dest)),
    }
}

/// kyaml's `GetSchema` where no schema came down: a map with its own apiVersion and kind
/// of a built-in type brings that type's schema.
fn kind_schema(tree: &Tree, id: Option<Id>) -> Option<Schema> {
    let id = id.filter(|&id| tree.is_map(id))?;
    let api_version = tree.field(id, "apiVersion").map(|v| tree.text(v)).filter(|t| !t.is_empty())?;
    let kind = tree.field(id, "kind").map(|v| tree.text(v)).filter(|t| !t.is_empty())?;
    Schema::of_kind(&api_version, &kind)
}

/// kyaml's `walkMap`: the map `visit_map` picks, each field of either side merged into it.
fn walk_map(
    tree: &mut Tree,
    dest: Option<Id>,
    origin: Option<Id>,
    schema: Option<Schema>,
    path: &mut Vec<String>,
) -> Result<Option<Id>, MergeError> {
    let Some(dest) = visit_map(tree, dest, origin, path)? else { return Ok(None) };
    let mut names = tree.field_names(dest);
    names.extend(origin.map(|o| tree.field_names(o)).unwrap_or_default());
    names.sort();
    names.dedup();
    for name in names {
        let field_schema = schema.and_then(|s| s.field(&name));
        let (d, o) = (tree.field(dest, &name), origin.and_then(|o| tree.field(o, &name)));
        path.push(name);
        let merged = walk(tree, d, o, field_schema, path)?;
        let name = path.pop().expect("pushed above");
        tree.set_field(dest, &name, merged);
    }
    Ok(Some(dest))
}

/// `merge2`'s `VisitMap`: which map the fields merge into, if any.
fn visit_map(tree: &mut Tree, dest: Option<Id>, origin: Option<Id>, path: &[String]) -> Result<Option<Id>, MergeError> {
    if dest.is_none_or(|d| tree.is_null(d)) {
        // An unknown directive is ignored here, as kyaml does.
        let asked = origin.map(|o| directive(tree, o, path).unwrap_or(Directive::Merge));
        if asked == Some(Directive::Delete) {
            return Ok(None);
        }
        if origin.is_none() && dest.is_some() {
            // The object's own null stays, as an untagged scalar the field setter keeps.
            return Ok(Some(tree.push(Node::Scalar { value: Value::Null, quoted: false })));
        }
        return Ok(origin);
    }
    let Some(origin) = origin else { return Ok(dest) };
    if tree.is_null(origin) {
        return Ok(None);
    }
    Ok(match directive(tree, origin, path)? {
        Directive::Delete => None,
        Directive::Replace => Some(origin),
        Directive::Merge => dest,
    })
}

/// The patch as kustomize merges it into `object` (`CopyMergeMetaDataFieldsFrom`, `SetGvk`).
fn prepared(object: &Value, patch: &Value) -> Value {
    let mut patch = patch.clone();
    if let Some(metadata) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["labels", "annotations"] {
            let strings: Map<String, Value> = match metadata.remove(field) {
                Some(Value::Object(map)) => map.into_iter().map(|(k, v)| (k, Value::String(text(&v)))).collect(),
                _ => Map::new(),
            };
            if !strings.is_empty() {
                metadata.insert(field.to_string(), Value::Object(strings));
            }
        }
    }
    if let (Some(api_version), Some(map)) = (object.get("apiVersion"), patch.as_object_mut()) {
        map.insert("apiVersion".to_string(), api_version.clone());
    }
    patch
}

/// kustomize sets the object's kind, name and namespace back after the merge (no
/// namespace: none, whatever the patch added).
fn restore_identity(merged: &mut Value, object: &Value) {
    let get = |pointer: &str| object.pointer(pointer).map(text).unwrap_or_default();
    let (kind, name, namespace) = (get("/kind"), get("/metadata/name"), get("/metadata/namespace"));
    let Some(map) = merged.as_object_mut() else { return };
    map.insert("kind".to_string(), Value::String(kind));
    let metadata = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    let metadata = metadata.as_object_mut().expect("made a map above");
    metadata.insert("name".to_string(), Value::String(name));
    if namespace.is_empty() {
        metadata.remove("namespace");
    } else {
        metadata.insert("namespace".to_string(), Value::String(namespace));
    }
}
