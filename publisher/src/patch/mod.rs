//! Sveltos's post-render patches (`spec.patches`, `spec.patchesFrom`) applied to one
//! rendered object exactly as Sveltos deploys them, in pure Rust.
//!
//! Sveltos (libsveltos `lib/patcher`, `RunUnstructured`) filters a profile's patches per
//! object, then runs an in-memory `kustomize build` with the object as the only resource.
//! This module is that pipeline, in the same steps:
//! 1. Sveltos's pre-filters (`parsed`, `target`, `missing_remove`): the target matches the
//!    object, by unanchored Go regular expressions and label selectors
//!    (`airlock_bundle::selector`); a `remove` of a path the object lacks is dropped. No
//!    patch left: the object as it was.
//! 2. kustomize (`kustomize`): each patch selects again, anchored, and applies as
//!    kustomize reads its text (`body`): JSON 6902 (`json_patch`, evanphx/json-patch v4) or
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
//! does. Entry points: [`ParsedPatch::all`] once per profile, [`apply`] per object;
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
pub use parsed::{ParsedPatch, Patch};
pub use target::{Target, TargetError};

use kustomize::Built;

/// Applies a profile's patches (in Sveltos's order) to one rendered object. The object
/// comes back borrowed when no patch applies to it, and also when a patch deletes it
/// (`$patch: delete`): Sveltos then deploys the object as it was.
pub fn apply<'o>(object: &'o Value, patches: &[ParsedPatch]) -> Result<Cow<'o, Value>, PatchError> {
    let mut applicable = Vec::new();
    for patch in patches {
        if patch.applies_to(object)? {
            applicable.push(patch);
        }
    }
    if applicable.is_empty() {
        return Ok(Cow::Borrowed(object));
    }
    Ok(match kustomize::build(object, &applicable)? {
        Built::Object(value) => Cow::Owned(value),
        Built::Deleted => Cow::Borrowed(object),
    })
}
