//! Why patching an object failed: the one error of the `patch` module.
//!
//! Every variant names the patch (`patch`: the profile and `spec.patches[2]`, or the
//! ConfigMap and key it came from) and, once one is involved, the object as
//! `Kind namespace/name`.

use serde_json::Value;

use super::body::BodyError;
use super::elements::MergeError;
use super::json_patch::OpError;
use super::target::TargetError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// A patchesFrom data value is not `{patch: ..., target: {...}}`.
    #[error("{patch}: not a patch entry ({{patch, target}}): {reason}")]
    InvalidEntry { patch: String, reason: String },
    /// A target's regular expression or selector does not compile.
    #[error("{patch}, matched against {object}: {error}")]
    InvalidTarget { patch: String, object: String, error: TargetError },
    /// The patch's text is no patch (invalid YAML or JSON, or neither kind of patch).
    #[error("{patch}, applied to {object}: {error}")]
    InvalidPatch { patch: String, object: String, error: BodyError },
    /// kustomize applies a JSON 6902 patch only to the targets it names.
    #[error("{patch}, applied to {object}: a JSON 6902 patch needs a target")]
    Json6902WithoutTarget { patch: String, object: String },
    /// kustomize refuses a targeted patch of several strategic merge documents.
    #[error("{patch}, applied to {object}: a targeted strategic merge patch must be one document")]
    SeveralDocuments { patch: String, object: String },
    /// An untargeted strategic merge patch is for another object.
    #[error("{patch}, applied to {object}: the untargeted patch is for {wanted}; give it a target")]
    OtherObject { patch: String, object: String, wanted: String },
    /// A JSON 6902 operation failed (including a failed `test`).
    #[error("{patch}, applied to {object}: {error}")]
    Json6902 { patch: String, object: String, error: OpError },
    /// A strategic merge failed.
    #[error("{patch}, applied to {object}: {error}")]
    StrategicMerge { patch: String, object: String, error: MergeError },
    /// kustomize will not load the object (no kind or name, or an empty list item).
    #[error("{patch}: kustomize cannot load {object}: {reason}")]
    InvalidObject { patch: String, object: String, reason: String },
}

/// An object as errors name it: `Deployment prod/web`, `Namespace web`.
pub(super) fn describe(object: &Value) -> String {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let (kind, namespace, name) = (text("/kind"), text("/metadata/namespace"), text("/metadata/name"));
    let kind = if kind.is_empty() { "object" } else { kind };
    if namespace.is_empty() { format!("{kind} {name}") } else { format!("{kind} {namespace}/{name}") }
}
