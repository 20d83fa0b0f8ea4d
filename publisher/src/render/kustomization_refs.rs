//! One `kustomizationRefs` entry's objects for one cluster, as Sveltos deploys them: the
//! source read from its ConfigMap, Secret, GitRepository (at the commit looked up for
//! this run), OCIRepository or `remoteURL` (the tarball fetched for this run), `path`,
//! `components` and `targetNamespace` templated with the cluster's data, the substitution
//! values, then the build (`crate::render::kustomize`).
//!
//! The values are merged as Sveltos's `getKustomizedResources` merges them: `values` and
//! the data of the `valuesFrom` objects carrying `projectsveltos.io/template` are templated
//! with the cluster's data, later keys winning; the data of the other `valuesFrom` objects
//! is taken as written and wins over all of them. The source is required whatever
//! `optional` says, and the objects built go on through extra metadata, tiers and
//! implicit namespaces but not through the profile's patches: Sveltos's kustomize handler
//! reads neither `optional` nor `patches`.

use std::collections::BTreeMap;

use airlock_bundle::vocabulary::FORCE_RECREATE_ANNOTATION;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::render::content::{Rendered, data_texts};
use crate::render::data::Context;
use crate::render::error::RenderError;
use crate::render::error::lookup;
use crate::render::kustomize::{GitRef, KustomizeRequest, KustomizeSource, LazyKustomizer};
use crate::render::manifest::{Manifest, add_metadata};
use crate::render::resolve::{KustomizePlan, is_template};
use crate::sources::model::kustomization::KustomizeKind;
use crate::sources::{Lookup, ObjectKey, Resources};

/// The objects `plan` builds for the cluster of `ctx`.
pub fn manifests(
    ctx: &Context<'_>,
    plan: &KustomizePlan<'_>,
    resources: &Resources,
    kustomizer: &LazyKustomizer,
    warnings: &mut Vec<String>,
) -> Result<Vec<Rendered>, RenderError> {
    let spec = plan.source.spec;
    let field = format!("spec.kustomizationRefs[{}]", spec.index);
    let described = plan.source.describe();
    let what = || (field.clone(), described.clone());
    let Some(value) = lookup(resources, &plan.source.reference.key, false, ctx.profile, &what, warnings)? else {
        unreachable!("lookup fails a missing reference that is not optional")
    };
    let origin = format!("{}: {field}: {described}", ctx.profile);
    let source = match spec.kind {
        KustomizeKind::ConfigMap => KustomizeSource::from_config_map(value, &origin)?,
        KustomizeKind::Secret => KustomizeSource::from_secret(value, &origin)?,
        KustomizeKind::GitRepository | KustomizeKind::OCIRepository => flux_source(plan, resources, &origin)?,
        KustomizeKind::Remote => fetched_tarball(value, &origin)?,
    };
    let instantiate = |key: &str, text: &str| -> Result<String, RenderError> {
        if text.contains("{{") { ctx.template(&described, &format!("{field}.{key}"), text) } else { Ok(text.to_string()) }
    };
    let path = instantiate("path", &spec.path)?;
    let components =
        spec.components.iter().enumerate().map(|(i, c)| instantiate(&format!("components[{i}]"), c)).collect::<Result<Vec<_>, _>>()?;
    let target_namespace = instantiate("targetNamespace", &spec.target_namespace)?;
    let mut values = BTreeMap::new();
    for (key, text) in &spec.values {
        values.insert(key.clone(), instantiate(&format!("values.{key}"), text)?);
    }
    // Sveltos templates `values` with the data of the valuesFrom objects that carry the
    // template annotation, then sets the data of the others over them as written: those win.
    let mut plain = BTreeMap::new();
    for (from, reference) in &plan.values_from {
        let object = reference.key.to_string();
        let what = || (from.field.clone(), object.clone());
        let Some(value) = lookup(resources, &reference.key, from.optional, ctx.profile, &what, warnings)? else { continue };
        let templated = is_template(value);
        for (key, text) in data_texts(value, from.kind, &object, warnings)? {
            if !templated {
                plain.insert(key, text);
            } else if text.contains("{{") {
                values.insert(key.clone(), ctx.template(&object, &key, &text)?);
            } else {
                values.insert(key, text);
            }
        }
    }
    values.extend(plain);
    let request = KustomizeRequest {
        origin: &origin,
        source: &source,
        path: path.trim_start_matches("./"),
        components: &components,
        target_namespace: Some(target_namespace.as_str()).filter(|ns| !ns.is_empty()),
        values: &values,
    };
    let objects = kustomizer.get()?.build(&request)?;
    let force = spec.force.then(|| BTreeMap::from([(FORCE_RECREATE_ANNOTATION.to_string(), "true".to_string())]));
    objects
        .into_iter()
        .map(|mut value| {
            let key = ObjectKey::of(&value).filter(|k| !k.name.is_empty() && value["metadata"].is_object()).ok_or_else(|| {
                RenderError::Manifest {
                    origin: origin.clone(),
                    message: "kustomize built something that is not a Kubernetes object".into(),
                }
            })?;
            if let Some(force) = &force {
                add_metadata(&mut value, "annotations", force);
            }
            let origin = format!("{origin}: {key}");
            let create_namespace = !spec.skip_namespace_creation;
            Ok(Rendered {
                manifest: Manifest { key, value, origin },
                tier: spec.tier,
                create_namespace,
                patched: false,
                confidential: false,
            })
        })
        .collect()
}

/// The repository at the commit its ref named when this run looked it up, or the
/// artifact's tarball as this run fetched it.
fn flux_source(plan: &KustomizePlan<'_>, resources: &Resources, origin: &str) -> Result<KustomizeSource, RenderError> {
    let revision = plan.revision.as_ref().expect("a Flux source's plan has a revision reference");
    let unreadable = |message: String| RenderError::Unreadable { object: origin.to_string(), message };
    let found = match resources.lookup(&revision.key) {
        Lookup::Found(found) => found,
        Lookup::Missing => return Err(unreadable("its revision was not looked up".into())),
        Lookup::Failed(why) => return Err(unreadable(why.to_string())),
    };
    match (found["url"].as_str(), found["commit"].as_str()) {
        (Some(url), Some(commit)) => Ok(KustomizeSource::Git { url: url.into(), reference: GitRef::Commit(commit.into()) }),
        _ => fetched_tarball(found, origin),
    }
}

/// A tarball the publisher fetched this run (an OCIRepository's artifact, a `remoteURL`).
fn fetched_tarball(found: &serde_json::Value, origin: &str) -> Result<KustomizeSource, RenderError> {
    let unreadable = |message: String| RenderError::Unreadable { object: origin.to_string(), message };
    let tarball = found["tarball"].as_str().ok_or_else(|| unreadable("what was fetched has neither a commit nor a tarball".into()))?;
    STANDARD.decode(tarball).map(KustomizeSource::Tarball).map_err(|e| unreadable(format!("the fetched tarball is not base64: {e}")))
}
