//! What a patch's text is, decided as kustomize's `PatchTransformer` decides it.
//!
//! kustomize tries both readings of the trimmed text and wants exactly one to succeed:
//! - JSON 6902: a list of operation maps, read as JSON when the text starts with `[` and
//!   as YAML 1.1 otherwise (`yaml.YAMLToJSON`);
//! - strategic merge: YAML documents (kyaml, YAML 1.2, so `yes` is a string), each a map
//!   with a `kind` and a `metadata.name`; empty documents are skipped.
//!
//! Text that is all empty documents but no list (`{}`) passes as strategic merge, then has
//! no document to apply, and kustomize runs it as JSON 6902, which fails to decode.
//! Before kustomize, Sveltos refuses a patch whose first document has a kind but no
//! metadata.name (`validatePatch`), with an error that says so.

use serde_json::Value;

use super::json_patch;

/// A patch's parsed text.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Body {
    /// Strategic merge patch documents.
    Strategic(Vec<Value>),
    /// JSON 6902 operations, checked as they run.
    Json6902(Vec<Value>),
    /// Strategic merge without a document: a JSON 6902 patch that fails when applied.
    NoDocument,
}

/// Why a patch's text is no patch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    #[error("the patch is empty")]
    Empty,
    #[error("the patch is neither a strategic merge patch ({strategic}) nor a JSON 6902 patch ({json6902})")]
    Neither { strategic: String, json6902: String },
    #[error("the patch reads both as a strategic merge patch and as a JSON 6902 patch")]
    Both,
    #[error("the patch holds no document, and kustomize cannot read it as JSON 6902 operations")]
    NoDocument,
    #[error(
        "the strategic merge patch for {api_version}/{kind} has no metadata.name, which Sveltos requires; to select objects by a name pattern, use a JSON 6902 patch"
    )]
    StrategicWithoutName { api_version: String, kind: String },
}

/// Reads a patch's text.
pub(super) fn parse(text: &str) -> Result<Body, BodyError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(BodyError::Empty);
    }
    if let Some((api_version, kind)) = unnamed_resource(text) {
        return Err(BodyError::StrategicWithoutName { api_version, kind });
    }
    match (strategic(text), operations(text)) {
        (Ok(_), Ok(_)) => Err(BodyError::Both),
        (Ok(docs), Err(_)) if docs.is_empty() => Ok(Body::NoDocument),
        (Ok(docs), Err(_)) => Ok(Body::Strategic(docs)),
        (Err(_), Ok(ops)) => Ok(Body::Json6902(ops)),
        (Err(strategic), Err(json6902)) => Err(BodyError::Neither { strategic, json6902 }),
    }
}

/// Sveltos's own check before kustomize (`validatePatch`): text that does not start as a
/// list (`[`, `- `) and whose first document has a kind but no metadata.name is refused,
/// even where kustomize would take it (a `List` kind). The apiVersion and kind, when so.
fn unnamed_resource(text: &str) -> Option<(String, String)> {
    if text.starts_with('[') || text.starts_with("- ") {
        return None;
    }
    let first = airlock_bundle::yaml::manifests(text).ok()?.into_iter().next()?.value;
    let kind = scalar_text(first.get("kind"));
    let named = first.get("metadata").and_then(|m| m.get("name")).is_some_and(|name| !scalar_text(Some(name)).is_empty());
    (!kind.is_empty() && !named).then(|| (scalar_text(first.get("apiVersion")), kind))
}

/// A scalar's text; empty for a map, a list, null or nothing.
fn scalar_text(value: Option<&Value>) -> String {
    value.filter(|v| !v.is_object() && !v.is_array() && !v.is_null()).map(super::tree::value_text).unwrap_or_default()
}

fn operations(text: &str) -> Result<Vec<Value>, String> {
    let value = if text.starts_with('[') {
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?
    } else {
        let docs = crate::yaml::parse_documents(text).map_err(|e| format!("not YAML: {e}"))?;
        let mut value = docs.into_iter().next().unwrap_or(Value::Null);
        json_patch::normalize_numbers(&mut value);
        value
    };
    json_patch::as_operations(value).ok_or_else(|| "not a list of operations".to_string())
}

fn strategic(text: &str) -> Result<Vec<Value>, String> {
    let docs = airlock_bundle::yaml::manifests(text).map_err(|e| format!("not YAML: {e}"))?;
    let mut out = Vec::new();
    for doc in docs.into_iter().map(|d| d.value) {
        if doc.is_null() || doc.as_object().is_some_and(|m| m.is_empty()) || doc.as_array().is_some_and(Vec::is_empty) {
            continue;
        }
        check_object(&doc)?;
        out.push(doc);
    }
    Ok(out)
}

/// kustomize's `GetValidatedMetadata`, which patches and objects alike must pass.
pub(super) fn check_object(value: &Value) -> Result<(), String> {
    let Some(map) = value.as_object() else { return Err("a document is not a map".into()) };
    let kind = scalar_text(map.get("kind"));
    if kind.is_empty() {
        return Err("no kind".into());
    }
    if !kind.ends_with("List") && scalar_text(value.pointer("/metadata/name")).is_empty() {
        return Err("no metadata.name".into());
    }
    Ok(())
}
