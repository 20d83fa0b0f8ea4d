//! A profile's objects ready to place in a bundle ([`prepare`]), and the caches that
//! render a profile once for every cluster it renders the same for ([`SharedProfiles`]).
//!
//! Preparing one profile for one cluster: gather its `templateResourceRefs` objects, read
//! each policyRef's manifests (`content`), build each kustomizationRef (`kustomize`),
//! render each helmCharts entry (`helm`), apply the profile's patches to every object
//! (`patches`), set extraLabels and extraAnnotations, keep one copy of each object (the
//! lower reference tier wins; a tie fails the profile), add the implicit Namespaces
//! (`namespaces`) and write each object as YAML.
//!
//! A profile nothing of which is a template comes out the same for every cluster whose
//! references resolve to the same objects, so it is prepared once per run and every such
//! cluster gets the same objects: in a fleet of thousands of clusters, parsing and
//! writing YAML again for each would dominate a publish. Patches that are no templates
//! are parsed once per run too. A profile templated only in its charts' values and its
//! patches is prepared once for all clusters that instantiate them alike (`instantiated`);
//! other templated profiles are prepared per cluster.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use airlock_bundle::Digest;
use airlock_bundle::seal::is_secret;
use airlock_bundle::statement::Rendering;

use super::content::{self, Rendered};
use super::data::Context;
use super::error::{RenderError, lookup};
use super::hold::releases::Claim;
use super::instantiated::{Instances, Instantiated};
use super::manifest::add_metadata;
use super::namespaces;
use super::object::Object;
use super::patches;
use super::prepared::{Env, Prepared};
use super::resolve::{ProfilePlan, SharedKey};
use super::{helm_charts, kustomization_refs};
use crate::render::patch::{ParsedPatch, Patch};
use crate::sources::model::SveltosCluster;
use crate::sources::{Lookup, ObjectKey, Resources};
use crate::yaml;

/// Reads, patches, labels and writes one profile's objects for `cluster`.
pub fn prepare(
    plan: &ProfilePlan<'_>,
    cluster: &SveltosCluster,
    resources: &Resources,
    env: Env<'_>,
    cache: &PatchCache,
) -> Result<Prepared, RenderError> {
    let (display, part) = (plan.profile.display_with_origin(), plan.profile.part_name());
    let instantiated = Instantiated::of(plan, cluster, resources, env, &display, &part)?;
    finish(plan, instantiated, resources, env, cache)
}

/// The rest of [`prepare`], once the templates that see the cluster are instantiated.
fn finish(
    plan: &ProfilePlan<'_>,
    instantiated: Instantiated<'_>,
    resources: &Resources,
    env: Env<'_>,
    cache: &PatchCache,
) -> Result<Prepared, RenderError> {
    let Instantiated { ctx, mut warnings, requests, patches } = instantiated;
    let profile = plan.profile;
    let display = ctx.profile;
    let mut rendered = Vec::new();
    for r in &plan.policies {
        let what = || (format!("spec.policyRefs[{}]", r.spec.index), r.describe());
        if let (Some(_), Lookup::Failed(why)) = (&r.spec.remote, resources.lookup(&r.reference.key)) {
            return Err(RenderError::Remote { profile: display.to_string(), field: what().0, message: why.to_string() });
        }
        if let Some(value) = lookup(resources, &r.reference.key, r.spec.optional, display, &what, &mut warnings)? {
            rendered.extend(content::manifests(&ctx, r, value, &mut warnings)?);
        }
    }
    for k in &plan.kustomizations {
        rendered.extend(kustomization_refs::manifests(&ctx, k, resources, env.kustomizer, &mut warnings)?);
    }
    // Each release's objects, as positions in `rendered`: which release an object belongs to
    // survives the patches, which may rename it.
    let mut releases = Vec::with_capacity(plan.helm_charts.len());
    for (h, request) in plan.helm_charts.iter().zip(requests) {
        let from = rendered.len();
        let (request, request_warnings) = request?;
        warnings.extend(request_warnings);
        if let Some(request) = request {
            rendered.extend(helm_charts::manifests(display, h, &request, env.helm, &mut warnings)?);
        }
        let claim = Claim {
            namespace: h.chart.release_namespace.clone(),
            name: h.chart.release_name.clone(),
            field: h.chart.field(),
            objects: BTreeSet::new(),
        };
        releases.push((claim, from..rendered.len()));
    }
    let (patches, patch_warnings) = patches?;
    warnings.extend(patch_warnings);
    let patches = cache.parsed(patches);
    let mut kept: BTreeMap<ObjectKey, (Option<usize>, Rendered)> = BTreeMap::new();
    let mut notes = BTreeSet::new();
    for (at, mut r) in rendered.into_iter().enumerate() {
        let release = releases.iter().position(|(_, span)| span.contains(&at));
        let value = std::mem::take(&mut r.manifest.value);
        let value = if r.patched {
            let (value, dropped) = patches::apply(value, &patches, display)?;
            notes.extend(dropped);
            value
        } else {
            value
        };
        r.manifest.key = ObjectKey::of(&value).filter(|k| !k.name.is_empty()).ok_or_else(|| RenderError::Manifest {
            origin: r.manifest.origin.clone(),
            message: "after the patches, no longer a Kubernetes object with apiVersion, kind and metadata.name".into(),
        })?;
        r.manifest.value = value;
        add_metadata(&mut r.manifest.value, "labels", &profile.extra_labels);
        add_metadata(&mut r.manifest.value, "annotations", &profile.extra_annotations);
        // Keyed as deployed: a ConfigMap written without a namespace is the one in default.
        let deployed = r.manifest.key.deployed();
        match kept.get(&deployed).map(|(_, other)| other) {
            Some(other) if other.tier == r.tier => {
                return Err(RenderError::Conflict {
                    object: r.manifest.key.to_string(),
                    tier: r.tier,
                    origins: vec![other.manifest.origin.clone(), r.manifest.origin.clone()],
                });
            }
            Some(other) if other.tier < r.tier => {}
            _ => {
                kept.insert(deployed, (release, r));
            }
        }
    }
    for (release, r) in kept.values() {
        if let Some(i) = release {
            releases[*i].0.objects.insert(r.manifest.key.clone());
        }
    }
    let releases = releases.into_iter().map(|(claim, _)| claim).collect();
    let rendered: Vec<Rendered> = kept.into_values().map(|(_, r)| r).collect();
    let mut objects = namespaces::implicit(display, &rendered);
    objects.extend(rendered.into_iter().map(|r| {
        let yaml = yaml::emit(std::slice::from_ref(&r.manifest.value)).into();
        let confidential = r.confidential || is_secret(&r.manifest.value);
        Arc::new(Object { key: r.manifest.key, origin: r.manifest.origin, yaml, implicit: false, confidential })
    }));
    let clock = ctx.read_clock().then(|| Rendering { inputs: clock_inputs(plan, &ctx, resources), at: ctx.now() });
    warnings.extend(notes.iter().map(|n| format!("{display}: {}: {}", n.field, n.detail)));
    Ok(Prepared::new(objects, warnings, notes.into_iter().collect(), clock, releases))
}

/// A digest of everything a clock-reading render read: while it stays, the publisher
/// renders with the same time again (bundles-format.md 5.9).
fn clock_inputs(plan: &ProfilePlan<'_>, ctx: &Context<'_>, resources: &Resources) -> Digest {
    let mut text = format!("{}\n{}\n{:?}\n", ctx.part, ctx.data_digest(), plan.profile);
    for r in plan.references() {
        let value = resources.get(&r.key).map(|v| Digest::of(&serde_json::to_vec(v).expect("a JSON value serialises")));
        text.push_str(&format!("{} {:?}\n", r.key, value));
    }
    Digest::of(text.as_bytes())
}

/// Patches parsed once per run, by their text: a profile's patches that hold no template
/// are the same for every cluster, and parsing compiles their regular expressions.
#[derive(Debug, Default)]
pub struct PatchCache(Mutex<HashMap<Digest, Arc<Vec<ParsedPatch>>>>);

impl PatchCache {
    fn parsed(&self, patches: Vec<Patch>) -> Arc<Vec<ParsedPatch>> {
        if patches.is_empty() {
            return Arc::new(Vec::new());
        }
        let key = Digest::of(format!("{patches:?}").as_bytes());
        if let Some(parsed) = self.0.lock().expect("not poisoned").get(&key) {
            return parsed.clone();
        }
        let parsed = Arc::new(ParsedPatch::all(&patches));
        self.0.lock().expect("not poisoned").insert(key, parsed.clone());
        parsed
    }
}

type Slot = Arc<OnceLock<Result<Arc<Prepared>, RenderError>>>;

/// Profiles prepared once per run, by what they render from or by what their templates
/// instantiate to, and the patches parsed.
/// Safe to share between the threads rendering clusters.
#[derive(Debug, Default)]
pub struct SharedProfiles {
    profiles: Mutex<HashMap<SharedKey, Slot>>,
    instances: Instances,
    patches: PatchCache,
}

impl SharedProfiles {
    /// `plan`'s objects for `cluster`: prepared once for all clusters when nothing of the
    /// profile is a template, else once for all clusters that instantiate its templates
    /// alike where only its charts' values and its patches are templates
    /// ([`Instances`]), else for this cluster alone.
    pub fn get(
        &self,
        plan: &ProfilePlan<'_>,
        cluster: &SveltosCluster,
        resources: &Resources,
        env: Env<'_>,
    ) -> Result<Arc<Prepared>, RenderError> {
        let Some(key) = plan.shared_key(resources, cluster) else {
            let (display, part) = (plan.profile.display_with_origin(), plan.profile.part_name());
            let instantiated = Instantiated::of(plan, cluster, resources, env, &display, &part)?;
            return match instantiated.key(plan, resources) {
                Some(key) => self.instances.get(key, || finish(plan, instantiated, resources, env, &self.patches)),
                None => finish(plan, instantiated, resources, env, &self.patches).map(Arc::new),
            };
        };
        let slot = self.profiles.lock().expect("not poisoned").entry(key).or_default().clone();
        // Outside the map's lock, so other profiles prepare meanwhile; a second cluster
        // asking for this one waits for the first instead of preparing it again.
        slot.get_or_init(|| prepare(plan, cluster, resources, env, &self.patches).map(Arc::new)).clone()
    }
}
