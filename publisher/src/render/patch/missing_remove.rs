//! Sveltos's own pre-filter (`filterApplicablePatches`): in a JSON 6902 patch, each
//! `remove` of a path the object lacks is dropped for that object instead of failing it,
//! and the rest of the patch applies.
//!
//! Sveltos reads a patch as operations only when its trimmed text starts with `[` or
//! `- `, and then as a YAML document (JSON included) that must be a list of maps; any
//! other patch passes whole, for kustomize to apply or refuse. An operation is dropped
//! when its `op` is the string `remove` and its `path` a non-empty string that does not
//! reach into the object. When one is dropped, the operations left are written again as
//! JSON through Go's float64 (what kustomize then reads); when none is left, the patch is
//! dropped for that object. Entry points: [`operations`] once per patch, [`filter`] per
//! object.

use serde_json::Value;

use super::json_patch::normalize_numbers;

/// A patch's operations as Sveltos's filter reads them, or `None` when it passes whole.
pub(super) fn operations(text: &str) -> Option<Vec<Value>> {
    let trimmed = text.trim();
    if !trimmed.starts_with('[') && !trimmed.starts_with("- ") {
        return None;
    }
    let first = crate::yaml::parse_documents(trimmed).ok()?.into_iter().next().unwrap_or(Value::Null);
    match first {
        Value::Array(items) if items.iter().all(|op| op.is_object() || op.is_null()) => Some(items),
        Value::Null => Some(Vec::new()),
        _ => None,
    }
}

/// What the filter makes of a patch for one object.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Filtered {
    /// Every operation stays: the patch applies as written.
    Whole,
    /// Some were dropped: the text of the ones left, and the dropped ones.
    Rebuilt { text: String, dropped: Vec<Removal> },
    /// None is left: the patch does not apply to the object.
    Empty { dropped: Vec<Removal> },
}

/// A dropped `remove`: its index in the patch and its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Removal {
    pub index: usize,
    pub path: String,
}

/// Sveltos's `filterPatchOperations` for `object`.
pub(super) fn filter(operations: &[Value], object: &Value) -> Filtered {
    let mut kept = Vec::with_capacity(operations.len());
    let mut dropped = Vec::new();
    for (index, op) in operations.iter().enumerate() {
        let text = |field: &str| op.get(field).and_then(Value::as_str);
        match (text("op"), text("path")) {
            (Some("remove"), Some(path)) if !path.is_empty() && !path_exists(object, path) => {
                dropped.push(Removal { index, path: path.to_string() });
            }
            _ => kept.push(op.clone()),
        }
    }
    if kept.is_empty() {
        return Filtered::Empty { dropped };
    }
    if dropped.is_empty() {
        return Filtered::Whole;
    }
    let mut kept = Value::Array(kept);
    normalize_numbers(&mut kept);
    Filtered::Rebuilt { text: kept.to_string(), dropped }
}

/// Sveltos's `pathExistsInObject`: the pointer's segments, empty ones skipped and `~1`
/// then `~0` decoded, walked through maps by key and lists by index.
fn path_exists(object: &Value, path: &str) -> bool {
    let mut current = object;
    for segment in path.trim_matches('/').split('/').filter(|s| !s.is_empty()) {
        let key = segment.replace("~1", "/").replace("~0", "~");
        current = match current {
            Value::Object(map) => match map.get(&key) {
                Some(value) => value,
                None => return false,
            },
            Value::Array(items) => match key.parse::<i64>().ok().and_then(|i| usize::try_from(i).ok()).and_then(|i| items.get(i)) {
                Some(value) => value,
                None => return false,
            },
            _ => return false,
        };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_operations_only_from_text_that_starts_as_a_list() {
        assert_eq!(operations("- op: remove\n  path: /a\n").unwrap(), vec![json!({"op": "remove", "path": "/a"})]);
        assert_eq!(operations(r#" [{"op": "remove", "path": "/a"}, null]"#).unwrap().len(), 2);
        assert_eq!(operations("[]").unwrap(), Vec::<Value>::new());
        assert_eq!(operations("-\n  op: remove\n  path: /a"), None, "no space after the dash");
        assert_eq!(operations("kind: ConfigMap\nmetadata: {name: a}"), None);
        assert_eq!(operations("- just text"), None, "an item that is no map");
        assert_eq!(operations("[{op: remove"), None, "not YAML");
    }

    #[test]
    fn walks_maps_by_key_and_lists_by_index() {
        let object = json!({"metadata": {"labels": {"a": "1", "x/y": "2", "t~": null}}, "spec": {"containers": [{"name": "x"}]}});
        for path in ["/metadata/labels/a", "metadata/labels/a/", "/metadata//labels", "/metadata/labels/x~1y", "/metadata/labels/t~0", "/"]
        {
            assert!(path_exists(&object, path), "{path}");
        }
        for path in ["/metadata/labels/b", "/spec/containers/1", "/spec/containers/-1", "/spec/containers/name", "/metadata/labels/t~0/z"] {
            assert!(!path_exists(&object, path), "{path}");
        }
        assert!(path_exists(&object, "/spec/containers/+0/name"), "Go's Atoi takes a sign");
        assert!(path_exists(&object, "/spec/containers/00"), "and leading zeros");
    }

    #[test]
    fn drops_each_missing_remove_and_rebuilds_the_rest_as_json() {
        let object = json!({"spec": {"replicas": 1}});
        let ops =
            operations("- {op: remove, path: /spec/gone}\n- {op: remove, path: /spec/replicas}\n- {op: add, path: /spec/x, value: 1.0}")
                .unwrap();
        let Filtered::Rebuilt { text, dropped } = filter(&ops, &object) else { panic!("rebuilt") };
        assert_eq!(dropped, vec![Removal { index: 0, path: "/spec/gone".into() }]);
        assert_eq!(text, r#"[{"op":"remove","path":"/spec/replicas"},{"op":"add","path":"/spec/x","value":1}]"#);
        assert_eq!(filter(&ops[1..], &object), Filtered::Whole);
        assert_eq!(filter(&ops[..1], &object), Filtered::Empty { dropped: vec![Removal { index: 0, path: "/spec/gone".into() }] });
        assert_eq!(filter(&[], &object), Filtered::Empty { dropped: Vec::new() }, "an empty patch is dropped too");
        let odd =
            [json!({"op": "remove", "path": ""}), json!({"op": "remove", "path": 5}), json!({"op": "Remove", "path": "/no"}), Value::Null];
        assert_eq!(filter(&odd, &object), Filtered::Whole, "only a string `remove` with a string path is judged");
    }
}
