//! The manifests of one referenced ConfigMap or Secret, as Sveltos reads them
//! (addon-controller's `collectContent`): each data key on its own, in key order, as a
//! template when the object carries `projectsveltos.io/template`, else as a Lua program
//! when it carries `projectsveltos.io/lua` (the template wins when both are there), else
//! as it is; then split into documents and parsed like any manifest. A `remoteURL`'s
//! files arrive as the data keys of such a ConfigMap (`remote`), templated when its
//! `template` is set. A reference with `force` marks each of its objects
//! `airlock.dev/force-recreate: "true"`, so the puller may delete and create one again
//! (bundles-format.md 2.5.2). An object carrying `airlock.dev/confidential: "true"` has
//! every object it holds sealed for a cluster that decrypts. Entry points:
//! [`manifests`], and [`data_texts`] for patchesFrom objects, which are read the same way.

use std::collections::BTreeMap;

use airlock_bundle::vocabulary::{CONFIDENTIAL_ANNOTATION, FORCE_RECREATE_ANNOTATION};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::Value;

use super::data::Context;
use super::error::RenderError;
use super::manifest::{Manifest, add_metadata, documents};
use super::resolve::{Resolution, has_annotation};
use crate::sources::model::{INSTANTIATE_ANNOTATION, LUA_ANNOTATION, MANIFEST_SECRET_TYPE, PolicyKind, PolicyRef};
use crate::sources::typed;

/// One object a reference rendered, with what decides between copies and whether its
/// namespace must exist.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub manifest: Manifest,
    /// The reference's tier (`spec.policyRefs[].tier`).
    pub tier: u32,
    pub create_namespace: bool,
    /// Whether the profile's patches apply to it: not to a chart's `crds/` CRDs, which
    /// Helm's post-renderer never sees, nor to hooks with `postRenderStrategy: nohooks`.
    pub patched: bool,
    /// It came from a source marked `airlock.dev/confidential` (see [`confidential`]).
    pub confidential: bool,
}

/// The manifests `value`, the object `plan` resolved to, holds for this render.
pub fn manifests(
    ctx: &Context<'_>,
    plan: &Resolution<'_, PolicyRef>,
    value: &Value,
    warnings: &mut Vec<String>,
) -> Result<Vec<Rendered>, RenderError> {
    let object = if plan.spec.remote.is_some() { plan.describe() } else { plan.reference.key.to_string() };
    let templated = plan.templated(value) || (ctx.instance() && has_annotation(value, INSTANTIATE_ANNOTATION));
    let lua = !templated && has_annotation(value, LUA_ANNOTATION);
    let confidential = confidential(value, &object)?;
    let force = plan.spec.force.then(|| BTreeMap::from([(FORCE_RECREATE_ANNOTATION.to_string(), "true".to_string())]));
    let mut out = Vec::new();
    for (key, text) in data_texts(value, plan.spec.kind, &object, warnings)? {
        let text = if templated {
            ctx.template(&object, &key, &text)?
        } else if lua {
            ctx.lua(&object, &key, &text)?
        } else {
            text
        };
        let origin = format!("{}: {object} key {key}", ctx.profile);
        out.extend(documents(&text, &origin)?.into_iter().map(|mut manifest| {
            if let Some(force) = &force {
                add_metadata(&mut manifest.value, "annotations", force);
            }
            Rendered { manifest, tier: plan.spec.tier, create_namespace: !plan.spec.skip_namespace_creation, patched: true, confidential }
        }));
    }
    Ok(out)
}

/// Whether `value` (named `object` in messages) is marked confidential. Only `"true"`
/// marks it: any other value is refused rather than read as "no", since a typo there would
/// send what its author meant to keep sealed in clear.
pub fn confidential(value: &Value, object: &str) -> Result<bool, RenderError> {
    match value["metadata"]["annotations"].get(CONFIDENTIAL_ANNOTATION) {
        None => Ok(false),
        Some(Value::String(s)) if s == "true" => Ok(true),
        Some(other) => Err(RenderError::Annotation {
            object: object.to_string(),
            annotation: CONFIDENTIAL_ANNOTATION.to_string(),
            message: format!(
                "found {other}, but the only value is the string \"true\"; remove the annotation to send the objects in clear"
            ),
        }),
    }
}

/// The data keys of a ConfigMap or manifest Secret, in key order, as text.
pub fn data_texts(value: &Value, kind: PolicyKind, object: &str, warnings: &mut Vec<String>) -> Result<Vec<(String, String)>, RenderError> {
    let unreadable = |message: String| RenderError::Unreadable { object: object.to_string(), message };
    let texts = match kind {
        PolicyKind::ConfigMap => {
            let cm = typed::<ConfigMap>(value).map_err(unreadable)?;
            if cm.binary_data.as_ref().is_some_and(|b| !b.is_empty()) {
                warnings.push(format!("{object}: binaryData holds no manifests; ignored"));
            }
            cm.data.unwrap_or_default()
        }
        PolicyKind::Secret => {
            let secret = typed::<Secret>(value).map_err(unreadable)?;
            let type_ = secret.type_.clone().unwrap_or_default();
            if type_ != MANIFEST_SECRET_TYPE {
                return Err(RenderError::NotManifests { object: object.to_string(), actual: type_ });
            }
            let mut texts = BTreeMap::new();
            for (k, bytes) in secret.data.unwrap_or_default() {
                let text = String::from_utf8(bytes.0).map_err(|_| unreadable(format!("data key {k} is not UTF-8 text")))?;
                texts.insert(k, text);
            }
            // As the API server does when it stores a Secret: stringData wins over data.
            texts.extend(secret.string_data.unwrap_or_default());
            texts
        }
    };
    Ok(texts.into_iter().collect())
}
