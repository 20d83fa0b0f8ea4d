//! One `helmCharts` entry's objects for one cluster, as Sveltos renders a release for a
//! pull-mode cluster: `values` templated with the cluster's data, then the data values of
//! the `valuesFrom` objects merged over them (maps key by key, anything else replaced):
//! first those of the objects without the template annotation, in list order, then those
//! of the objects with it, templated, in list order, so a templated object wins; then the
//! chart at the version this run resolved, rendered by helm against the cluster's
//! reported Kubernetes version.
//!
//! The CRDs of the charts' `crds/` directories are create-only, as helm v3 treats them
//! (created when missing, never updated or deleted), unless `upgradeCRDs`; the profile's
//! patches skip them, as Helm's post-renderer never sees them. The release's objects carry
//! what the site does for `wait`, `atomic`, `cleanupOnFail`, `force` and
//! `deletionPropagation`. Hooks carry the annotations that make
//! the site fire them (spec 2.5.3) on the events the options leave on: install and
//! upgrade, test with `runTests`, and pre- and post-delete, which idle at the site until
//! the release is uninstalled; a hook of none of them is left out. The CRDs, the
//! release's objects and its hooks go on through the profile's pipeline like a policyRef's
//! objects, each in the release namespace unless the chart names another or the kind is
//! cluster-scoped (a built-in one, or one of the release's CRDs; for any other kind the
//! puller drops it). An `Uninstall` entry renders the chart for its pre-delete and
//! post-delete hooks alone, so the puller fires them around the prune of what the release
//! deployed; with hooks off (`disableHooks`, `uninstallOptions.disableHooks`) it renders
//! nothing and needs no chart.

use std::collections::BTreeMap;

use airlock_bundle::Digest;
use airlock_bundle::vocabulary::{
    CLEANUP_ON_FAIL_ANNOTATION, CREATE_ONLY_ANNOTATION, DELETION_PROPAGATION_ANNOTATION, FORCE_RECREATE_ANNOTATION, VALUES_ANNOTATION,
    WAIT_ANNOTATION, WAIT_TIMEOUT_ANNOTATION,
};
use serde_json::{Map, Value};

use crate::render::content::{Rendered, data_texts};
use crate::render::data::Context;
use crate::render::error::RenderError;
use crate::render::error::lookup;
use crate::render::helm::charts::{chart_ref, secret_data};
use crate::render::helm::{Capabilities, HookEvent, LazyRenderer, ReleaseRequest};
use crate::render::manifest::{Manifest, add_metadata};
use crate::render::resolve::{HelmPlan, is_template};
use crate::sources::model::PolicyKind;
use crate::sources::model::helm_chart::HelmAction;
use crate::sources::{Lookup, ObjectKey, Resources};

/// The hooks an `Uninstall` ships.
const DELETE_EVENTS: [HookEvent; 2] = [HookEvent::PreDelete, HookEvent::PostDelete];

/// The release `plan` asks helm for on the cluster of `ctx`, `None` when it renders
/// nothing: everything of a helmCharts entry that sees the cluster (its values and
/// valuesFrom templated, its capabilities). [`manifests`] makes the objects from it alone,
/// so clusters with equal requests get equal objects.
pub fn request(
    ctx: &Context<'_>,
    plan: &HelmPlan<'_>,
    resources: &Resources,
    warnings: &mut Vec<String>,
) -> Result<Option<ReleaseRequest>, RenderError> {
    let spec = &*plan.chart;
    if !spec.renders() {
        return Ok(None);
    }
    let field = spec.field();
    let failed = |message: String| RenderError::Helm { profile: ctx.profile.to_string(), field: field.clone(), message };
    if let Some(verification) = &spec.verification {
        return Err(failed(format!("{verification} is set, and Airlock does not verify charts; the chart is not rendered")));
    }
    let revision = match resources.lookup(&plan.revision.key) {
        Lookup::Found(found) => found,
        Lookup::Missing => return Err(failed("the chart's version was not looked up".into())),
        Lookup::Failed(why) => return Err(failed(why.to_string())),
    };
    let version = revision["version"].as_str().ok_or_else(|| failed("the chart's looked-up version is not a string".into()))?;
    let chart = chart_ref(spec, resources, version).map_err(failed)?;
    let mut values = if spec.values.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        let text = if spec.values.contains("{{") { ctx.template(&field, "values", &spec.values)? } else { spec.values.clone() };
        values_document(&text).map_err(|m| failed(format!("values: {m}")))?
    };
    let mut sources = Vec::new();
    for (from, reference) in &plan.values_from {
        let object = reference.key.to_string();
        let what = || (from.field.clone(), object.clone());
        let Some(value) = lookup(resources, &reference.key, from.optional, ctx.profile, &what, warnings)? else { continue };
        let texts = match from.kind {
            PolicyKind::ConfigMap => data_texts(value, from.kind, &object, warnings)?,
            PolicyKind::Secret => secret_data(value)
                .map_err(|m| RenderError::Unreadable { object: object.clone(), message: m })?
                .into_iter()
                .map(|(k, bytes)| String::from_utf8(bytes).map(|t| (k.clone(), t)).map_err(|_| format!("data key {k} is not UTF-8 text")))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| RenderError::Unreadable { object: object.clone(), message: m })?,
        };
        sources.push(ValuesSource { templated: is_template(value), object, texts });
    }
    merge_values_from(&mut values, sources, |object, key, text| ctx.template(object, key, text))?;
    let kube_version = ctx.cluster.kube_version().map(str::to_string);
    if kube_version.is_none() {
        warnings.push(format!(
            "{}: {field}: the cluster has reported no Kubernetes version yet; rendered with helm's default (docs/helm.md)",
            ctx.profile
        ));
    }
    Ok(Some(ReleaseRequest {
        chart,
        release: spec.release_name.clone(),
        namespace: spec.release_namespace.clone(),
        values,
        capabilities: Capabilities { kube_version, api_versions: ctx.cluster.api_versions() },
        options: spec.options.template,
    }))
}

/// The objects of `request`, the release [`request`] made of `plan` for a cluster of
/// `profile`'s.
pub fn manifests(
    profile: &str,
    plan: &HelmPlan<'_>,
    request: &ReleaseRequest,
    renderer: &LazyRenderer,
    warnings: &mut Vec<String>,
) -> Result<Vec<Rendered>, RenderError> {
    let spec = &*plan.chart;
    let field = spec.field();
    let failed = |message: String| RenderError::Helm { profile: profile.to_string(), field: field.clone(), message };
    let values_digest = Digest::of(&serde_json::to_vec(&request.values).expect("values serialise")).to_string();
    let rendered = renderer.get().and_then(|r| r.render(request)).map_err(|e| failed(e.to_string()))?;
    if rendered.nondeterministic {
        warnings.push(format!(
            "{profile}: {field}: the chart renders differently every time (random values); the first rendering is kept while its inputs stay the same"
        ));
    }
    let release = &rendered.release;
    let options = &spec.options;
    let uninstall = spec.action == HelmAction::Uninstall;
    let fired = shipped_events(options, uninstall);
    let hooks = release
        .hooks
        .iter()
        .filter_map(|h| Some((&h.manifest, h.spec.site_annotations(&fired, options.timeout_seconds)?, options.patch_hooks)));
    let create_namespace = spec.options.create_namespace && !uninstall;
    let cluster_scoped_crds: Vec<(&str, &str)> = release
        .crds
        .iter()
        .chain(&release.objects)
        .filter(|m| m.object["kind"] == "CustomResourceDefinition" && m.object["spec"]["scope"] == "Cluster")
        .filter_map(|m| Some((m.object["spec"]["group"].as_str()?, m.object["spec"]["names"]["kind"].as_str()?)))
        .collect();
    let cluster_scoped = |object: &Value| {
        let (api_version, kind) = (object["apiVersion"].as_str().unwrap_or(""), object["kind"].as_str().unwrap_or(""));
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        crate::render::patch::schema::is_cluster_scoped(api_version, kind) || cluster_scoped_crds.contains(&(group, kind))
    };
    let crd_annotations =
        if options.upgrade_crds { BTreeMap::new() } else { BTreeMap::from([(CREATE_ONLY_ANNOTATION.to_string(), "true".to_string())]) };
    let object_annotations = release_object_annotations(options);
    // An uninstall ships the delete hooks alone: the puller prunes the rest between them.
    let (crds, objects) = if uninstall { (&[][..], &[][..]) } else { (&release.crds[..], &release.objects[..]) };
    let crds = crds.iter().map(|m| (m, crd_annotations.clone(), false));
    crds.chain(objects.iter().map(|m| (m, object_annotations.clone(), true)))
        .chain(hooks)
        .map(|(m, mut annotations, patched)| {
            let mut value = m.object.clone();
            annotations.insert(VALUES_ANNOTATION.into(), values_digest.clone());
            add_metadata(&mut value, "annotations", &annotations);
            let metadata = value["metadata"].as_object_mut().expect("the split kept only objects with metadata");
            if metadata.get("namespace").and_then(Value::as_str).is_none_or(str::is_empty) && !cluster_scoped(&m.object) {
                metadata.insert("namespace".into(), Value::String(release.namespace.clone()));
            }
            let key = ObjectKey::of(&value).expect("the split kept only objects with apiVersion, kind and name");
            let origin = format!("{profile}: {field}: release {}/{}: {}: {key}", release.namespace, release.name, m.source);
            let tier = airlock_bundle::statement::DEFAULT_TIER;
            Ok(Rendered { manifest: Manifest { key, value, origin }, tier, create_namespace, patched, confidential: false })
        })
        .collect()
}

/// The events whose hooks a release ships. An installed release carries its delete hooks
/// too, idle at the site until it is uninstalled: a profile that stops matching, or is
/// deleted, has no spec left to render them from, so the publisher carries them over from
/// the stored bundle (`publish::withdraw`).
fn shipped_events(options: &crate::sources::model::helm_options::ChartOptions, uninstall: bool) -> Vec<HookEvent> {
    let delete = if options.delete_hooks { &DELETE_EVENTS[..] } else { &[] };
    if uninstall { delete.to_vec() } else { options.fired_events.iter().chain(delete).copied().collect() }
}

/// The annotations that make the site act on a release's objects as the options ask
/// (spec 2.5.3): wait until they are ready, delete what a failed operation created,
/// re-create what an update cannot change.
fn release_object_annotations(options: &crate::sources::model::helm_options::ChartOptions) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(jobs) = options.wait {
        out.insert(WAIT_ANNOTATION.into(), if jobs { "ready-and-jobs" } else { "ready" }.into());
        if let Some(seconds) = options.timeout_seconds {
            out.insert(WAIT_TIMEOUT_ANNOTATION.into(), seconds.to_string());
        }
    }
    if !options.cleanup_on_fail.is_empty() {
        out.insert(CLEANUP_ON_FAIL_ANNOTATION.into(), options.cleanup_on_fail.join(","));
    }
    if options.force {
        out.insert(FORCE_RECREATE_ANNOTATION.into(), "true".into());
    }
    if let Some(propagation) = options.deletion_propagation {
        out.insert(DELETION_PROPAGATION_ANNOTATION.into(), propagation.into());
    }
    out
}

/// A YAML document of values: a map, or nothing.
fn values_document(text: &str) -> Result<Value, String> {
    let mut documents = crate::yaml::parse_documents(text)?.into_iter().filter(|d| !d.is_null());
    match (documents.next(), documents.next()) {
        (None, _) => Ok(Value::Object(Map::new())),
        (Some(map @ Value::Object(_)), None) => Ok(map),
        (Some(_), None) => Err("is not a map of values".into()),
        (Some(_), Some(_)) => Err("holds more than one YAML document".into()),
    }
}

/// Merges `over` into `base`: maps key by key, any other value replaced.
/// One valuesFrom object's data values, in key order, and whether Sveltos templates them
/// (the object carries the template annotation).
struct ValuesSource {
    object: String,
    templated: bool,
    texts: Vec<(String, String)>,
}

/// Merges the valuesFrom data values, each a YAML map, over the values as Sveltos does:
/// the objects that are no templates first, then the templated ones, each group in list
/// order, so a templated object wins wherever it is listed.
fn merge_values_from(
    values: &mut Value,
    sources: Vec<ValuesSource>,
    mut template: impl FnMut(&str, &str, &str) -> Result<String, RenderError>,
) -> Result<(), RenderError> {
    let (templated, plain): (Vec<_>, Vec<_>) = sources.into_iter().partition(|s| s.templated);
    for source in plain.into_iter().chain(templated) {
        for (key, text) in source.texts {
            let text = if source.templated { template(&source.object, &key, &text)? } else { text };
            let document = values_document(&text)
                .map_err(|m| RenderError::Unreadable { object: source.object.clone(), message: format!("key {key}: {m}") })?;
            merge(values, document);
        }
    }
    Ok(())
}

fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) if existing.is_object() && value.is_object() => merge(existing, value),
                    _ => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn release_objects_carry_what_the_options_ask_of_the_site() {
        let read = |options: Value| crate::sources::model::helm_options::read(Some(&options), "f").expect("reads");
        assert!(release_object_annotations(&read(json!({}))).is_empty());
        let atomic = release_object_annotations(&read(json!({"atomic": true, "timeout": "2m", "upgradeOptions": {"force": true}})));
        let expected = [
            (CLEANUP_ON_FAIL_ANNOTATION, "install,upgrade"),
            (FORCE_RECREATE_ANNOTATION, "true"),
            (WAIT_ANNOTATION, "ready"),
            (WAIT_TIMEOUT_ANNOTATION, "120"),
        ];
        assert_eq!(atomic, expected.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let jobs = release_object_annotations(&read(json!({"wait": true, "waitForJobs": true})));
        assert_eq!(jobs[WAIT_ANNOTATION], "ready-and-jobs");
        let orphan = release_object_annotations(&read(json!({"uninstallOptions": {"deletionPropagation": "orphan"}})));
        assert_eq!(orphan[DELETION_PROPAGATION_ANNOTATION], "orphan");
    }

    #[test]
    fn merges_maps_deeply_and_replaces_the_rest() {
        let mut base = json!({"a": {"b": 1, "c": [1, 2]}, "d": "x"});
        merge(&mut base, json!({"a": {"c": [3], "e": true}, "d": {"f": 1}}));
        assert_eq!(base, json!({"a": {"b": 1, "c": [3], "e": true}, "d": {"f": 1}}));
    }

    #[test]
    fn templated_values_from_objects_win_wherever_they_are_listed() {
        let source = |object: &str, templated, text: &str| ValuesSource {
            object: object.into(),
            templated,
            texts: vec![("values.yaml".into(), text.into())],
        };
        let sources = vec![
            source("ConfigMap fleet/templated", true, "replicaCount: '{{ 3 }}'\nimage: {tag: t}"),
            source("ConfigMap fleet/first", false, "replicaCount: 1\nimage: {tag: first, pullPolicy: Always}"),
            source("ConfigMap fleet/second", false, "replicaCount: 2"),
        ];
        let mut values = json!({"replicaCount": 0, "image": {"repository": "r"}});
        let mut templated = Vec::new();
        merge_values_from(&mut values, sources, |object, _, text| {
            templated.push(object.to_string());
            Ok(text.replace("'{{ 3 }}'", "3"))
        })
        .unwrap();
        assert_eq!(values, json!({"replicaCount": 3, "image": {"repository": "r", "tag": "t", "pullPolicy": "Always"}}));
        assert_eq!(templated, ["ConfigMap fleet/templated"], "only annotated objects are templated");
    }

    #[test]
    fn reads_values_documents() {
        assert_eq!(values_document("").unwrap(), json!({}));
        assert_eq!(values_document("a: 1\n").unwrap(), json!({"a": 1}));
        assert!(values_document("- 1\n").is_err());
        assert!(values_document("a: 1\n---\nb: 2\n").is_err());
    }

    #[test]
    fn decodes_secret_data_with_string_data_winning() {
        let s = json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "z"}});
        let data = secret_data(&s).unwrap();
        assert_eq!(data["a"], b"x");
        assert_eq!(data["b"], b"z");
        assert!(secret_data(&json!({"data": {"a": "!"}})).is_err());
    }
}
