//! Sveltos's post-render patches (`spec.patches`, `spec.patchesFrom`) applied to one
//! rendered object exactly as Sveltos deploys them, in pure Rust.
//!
//! Sveltos (libsveltos `lib/patcher`, `RunUnstructured`) filters a profile's patches per
//! object, then runs an in-memory `kustomize build` with the object as the only resource.
//! This module is that pipeline, in the same steps:
//! 1. Sveltos's pre-filters (`parsed`, `target`, `missing_remove`): the target matches the
//!    object, by unanchored Go regular expressions and label selectors
//!    (`airlock_bundle::selector`); in a JSON 6902 patch, each `remove` of a path the
//!    object lacks is dropped, the rest of the patch kept with its target, and a patch
//!    left with no operation dropped. The dropped operations come back with the object,
//!    for the caller to tell. No patch left: the object as it was.
//! 2. kustomize (`kustomize`): each patch selects again, anchored, and applies as
//!    kustomize reads its text (`body`, which also refuses, as Sveltos does first, a
//!    strategic merge patch with a kind and no metadata.name): JSON 6902 (`json_patch`, evanphx/json-patch v4) or
//!    strategic merge (`strategic`, `assoc`, `elements` over the node graph of `tree`:
//!    kyaml's merge, which keeps the object's quoting (`style`) and merges lists by the
//!    keys of kustomize's built-in schema, `schema` over the generated `merge_keys` and
//!    its node type, `schema_node`).
//!
//! The merge keys are those of the Kubernetes v1.21.2 OpenAPI schema compiled into
//! kustomize (what `kubectl kustomize` and Sveltos use whatever the cluster runs), read
//! out of the kubectl binary by `hack/gen-merge-keys.py`. Custom resources have no schema
//! there: their lists are replaced whole.
//!
//! `fidelity` holds the module to `kubectl kustomize` on a corpus of cases. Known
//! departures from kustomize, none met in practice: scalars are read into values
//! before merging, so their spelling is lost (`0x1F` compares and quotes as `31`, `~` as
//! `null`); a strategic merge keeps a number's JSON type (`1.0` stays a float); a strategic
//! merge patch with YAML anchors is refused; a `List`-kind patch is not split into its
//! items; the schema table cannot tell where a nested object's own apiVersion and kind
//! would be ignored (`schema`); regular expressions are Rust's `regex`, Go's RE2 family,
//! apart in rarities (`\C`, Unicode classes on non-ASCII text).
//!
//! It does not template patches, fetch patchesFrom objects, or order the patch list
//! (all `spec.patches`, then templated patchesFrom values, then the others): the caller
//! does. Entry points: [`ParsedPatch::all`] once per profile, [`apply`] per object (the
//! object patched and the operations dropped for it);
//! [`Patch::from_data_value`] reads a patchesFrom data value.

mod assoc;
mod body;
mod elements;
mod error;
#[cfg(test)]
mod fidelity;
mod json_patch;
mod kustomize;
mod merge_keys;
mod missing_remove;
mod parsed;
pub(crate) mod schema;
mod schema_node;
mod strategic;
mod style;
mod target;
#[cfg(test)]
mod tests;
mod tree;

use std::borrow::Cow;

use serde_json::Value;

pub use body::BodyError;
pub use elements::MergeError;
pub use error::PatchError;
pub use json_patch::OpError;
pub use parsed::{DroppedOperation, ParsedPatch, Patch};
pub use target::TargetError;

use kustomize::Built;

/// One object with a profile's patches applied, and the operations Sveltos dropped for it.
#[derive(Debug)]
pub struct Patched<'o> {
    /// Borrowed when no patch applies to the object, and also when a patch deletes it
    /// (`$patch: delete`): Sveltos then deploys the object as it was.
    pub object: Cow<'o, Value>,
    pub dropped: Vec<DroppedOperation>,
}

/// Applies a profile's patches (in Sveltos's order) to one rendered object.
pub fn apply<'o>(object: &'o Value, patches: &[ParsedPatch]) -> Result<Patched<'o>, PatchError> {
    let mut dropped = Vec::new();
    let mut applicable = Vec::new();
    for patch in patches {
        if let Some(for_object) = patch.for_object(object, &mut dropped)? {
            applicable.push(for_object);
        }
    }
    if applicable.is_empty() {
        return Ok(Patched { object: Cow::Borrowed(object), dropped });
    }
    let object = match kustomize::build(object, &applicable)? {
        Built::Object(value) => Cow::Owned(value),
        Built::Deleted => Cow::Borrowed(object),
    };
    Ok(Patched { object, dropped })
}
