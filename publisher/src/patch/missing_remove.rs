//! Sveltos's own pre-filter (`filterApplicablePatches`): a patch that removes a path the
//! object lacks is dropped for that object instead of failing it.
//!
//! Sveltos finds the operation by scanning the text, not by parsing it: the first `op:`
//! and the first `path:` anywhere, lines joined by spaces, quotes trimmed. So only YAML
//! spellings (`op: remove`, not JSON's `"op": "remove"`) are seen, only the first operation
//! counts, and a patch with more operations after a remove yields a path with the next
//! item's `-` on it, which no object has. The path is walked through maps only, without
//! unescaping `~1`: a remove under a list, or of a key with a `/`, is always dropped.

use serde_json::Value;

/// The path Sveltos sees a patch remove, when it sees the patch as a remove.
pub(super) fn removed_path(text: &str) -> Option<String> {
    let line = text.split('\n').collect::<Vec<_>>().join(" ");
    let after = |marker: &str, stop: &str| {
        let at = line.find(marker)?;
        let mut value = line[at + marker.len()..].trim();
        if let Some(end) = value.find(stop) {
            value = &value[..end];
        }
        Some(value.trim().trim_matches(['"', '\'']).to_string())
    };
    let op = after("op:", "path:")?;
    let path = after("path:", "op:")?;
    (op == "remove" && !path.is_empty()).then_some(path)
}

/// Sveltos's `pathExistsInObject`: each segment a key of the map reached so far; a
/// segment that reaches no map leaves the walk where it was.
pub(super) fn path_exists(object: &Value, path: &str) -> bool {
    let Some(mut current) = object.as_object() else { return false };
    for key in path.trim_matches('/').split('/').filter(|k| !k.is_empty()) {
        let Some(value) = current.get(key) else { return false };
        if let Some(map) = value.as_object() {
            current = map;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_first_operation_as_sveltos_scans_it() {
        assert_eq!(removed_path("- op: remove\n  path: /spec/replicas\n").as_deref(), Some("/spec/replicas"));
        assert_eq!(removed_path("- path: \"/a\"\n  op: 'remove'").as_deref(), Some("/a"));
        assert_eq!(removed_path("- op: add\n  path: /a\n  value: 1"), None);
        assert_eq!(removed_path(r#"[{"op": "remove", "path": "/a"}]"#), None, "JSON spelling is not seen");
        assert_eq!(removed_path("- op: remove\n  path: /a\n- op: add\n  path: /b").as_deref(), Some("/a -"));
    }

    #[test]
    fn walks_maps_only() {
        let object = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "x"}]}});
        assert!(path_exists(&object, "/metadata/labels/a"));
        assert!(!path_exists(&object, "/metadata/labels/b"));
        assert!(!path_exists(&object, "/spec/containers/0/name"), "list indices are keys of the parent map");
        assert!(path_exists(&object, "/spec/containers/containers"), "a list leaves the walk at its parent map");
        assert!(!path_exists(&object, "/metadata/annotations~1x"));
    }
}
