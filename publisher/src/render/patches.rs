//! A profile's post-render patches for one cluster, in Sveltos's order (addon-controller's
//! `initiatePatches`): every `spec.patches` entry, its text templated; then the data
//! values of the `patchesFrom` objects that carry `projectsveltos.io/template`, each
//! templated whole (target included) before it is read; then those of the other
//! patchesFrom objects. Each data value is one `{patch, target}` entry, and the values of
//! one object come in key order. Applying them is the `patch` module's; each JSON 6902
//! operation Sveltos drops for an object (a remove of a path it lacks) becomes a note of
//! the part (`skipped`, spec 5.9).

use airlock_bundle::statement::{FieldNote, Support};
use serde_json::Value;

use super::content::data_texts;
use super::data::Context;
use super::error::RenderError;
use super::resolve::{ProfilePlan, is_template};
use crate::render::patch::{DroppedOperation, ParsedPatch, Patch, PatchError};
use crate::sources::{Lookup, Resources};

/// The patches of `plan`'s profile, templated for this render.
pub fn collect(
    ctx: &Context<'_>,
    plan: &ProfilePlan<'_>,
    resources: &Resources,
    warnings: &mut Vec<String>,
) -> Result<Vec<Patch>, RenderError> {
    let mut out = Vec::new();
    for (i, p) in plan.profile.patches.iter().enumerate() {
        let field = format!("spec.patches[{i}]");
        let text = if p.patch.contains("{{") { ctx.template(&field, "patch", &p.patch)? } else { p.patch.clone() };
        out.push(Patch { source: format!("{} {field}", ctx.profile), text, target: p.target.clone() });
    }
    let mut plain = Vec::new();
    for r in &plan.patches_from {
        let field = format!("spec.patchesFrom[{}]", r.spec.index);
        let value = match resources.lookup(&r.reference.key) {
            Lookup::Found(value) => value,
            Lookup::Missing if r.spec.optional => {
                warnings.push(format!("{}: {field}: optional {} not found; skipped", ctx.profile, r.describe()));
                continue;
            }
            Lookup::Missing => return Err(RenderError::Missing { profile: ctx.profile.to_string(), field, object: r.describe() }),
            Lookup::Failed(why) => return Err(RenderError::Unreadable { object: r.describe(), message: why.to_string() }),
        };
        let object = r.reference.key.to_string();
        let templated = is_template(value);
        for (key, text) in data_texts(value, r.spec.kind, &object, warnings)? {
            let source = format!("{} {field} {object} key {key}", ctx.profile);
            let text = if templated { ctx.template(&object, &key, &text)? } else { text };
            let patch = Patch::from_data_value(source, &text).map_err(|e| RenderError::Patch(e.to_string()))?;
            if templated { out.push(patch) } else { plain.push(patch) }
        }
    }
    out.extend(plain);
    Ok(out)
}

/// `value` with `patches` applied, as Sveltos deploys it, and a note for each operation
/// Sveltos dropped for it.
pub fn apply(value: Value, patches: &[ParsedPatch], profile: &str) -> Result<(Value, Vec<FieldNote>), RenderError> {
    if patches.is_empty() {
        return Ok((value, Vec::new()));
    }
    let patched = crate::render::patch::apply(&value, patches).map_err(|e: PatchError| RenderError::Patch(e.to_string()))?;
    let notes = patched.dropped.iter().map(|d| note(profile, d)).collect();
    let changed = match patched.object {
        std::borrow::Cow::Owned(changed) => Some(changed),
        std::borrow::Cow::Borrowed(_) => None,
    };
    Ok((changed.unwrap_or(value), notes))
}

/// The note of a dropped operation: the field is the patch's (`spec.patches[0]`,
/// `spec.patchesFrom[1]`), read back from the source `collect` wrote.
fn note(profile: &str, dropped: &DroppedOperation) -> FieldNote {
    let source = dropped.patch.strip_prefix(profile).map_or(dropped.patch.as_str(), str::trim_start);
    let (field, from) = source.split_once(' ').unwrap_or((source, ""));
    let from = if from.is_empty() { String::new() } else { format!("{from}: ") };
    FieldNote {
        field: field.to_string(),
        support: Support::Skipped,
        detail: format!(
            "{from}operation {} (remove {}) dropped for {}, which has no such path, as Sveltos drops it; the patch's other operations applied",
            dropped.index, dropped.path, dropped.object
        ),
    }
}
