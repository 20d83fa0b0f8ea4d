//! The part of a profile's render that sees the cluster ([`Instantiated`]), and the
//! profiles prepared once for every cluster it comes out the same for ([`Instances`]).
//!
//! A profile whose only templates are its helmCharts entries' values and valuesFrom and
//! its patches sees the cluster in those alone: instantiate them, and the rest of its
//! render (the charts' objects, the patches applied, the labels, the YAML, the part) is a
//! function of what they became. Clusters whose templates instantiate alike, such as the
//! clusters of one label group whose values name the group, then share one preparation
//! instead of splitting, patching and writing the same releases again each. The key holds
//! everything the rest reads: the profile's part and references, the cluster's Kubernetes
//! version and API versions, each entry resolved for the cluster with its release request
//! (values merged, chart, capabilities, options), the patches as instantiated, and every
//! warning instantiating gave. A profile with any other template (a policyRef or
//! kustomizationRef), an EventTrigger's instance, a template that read the clock, or a
//! failure while instantiating is prepared for its cluster alone.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};

use airlock_bundle::Digest;

use super::data::Context;
use super::error::{RenderError, lookup};
use super::helm_charts;
use super::patches;
use super::prepared::{Env, Prepared};
use super::resolve::ProfilePlan;
use crate::render::helm::ReleaseRequest;
use crate::render::patch::Patch;
use crate::sources::Resources;
use crate::sources::model::SveltosCluster;

/// What a piece of the instantiation gave: its result and the warnings it pushed, or why it
/// failed, raised where the render reaches it, as if it had been instantiated there.
pub type Piece<T> = Result<(T, Vec<String>), RenderError>;

/// A profile's templates instantiated for one cluster.
pub struct Instantiated<'c> {
    pub ctx: Context<'c>,
    /// What reading the `templateResourceRefs` objects warned of.
    pub warnings: Vec<String>,
    /// Each helmCharts entry's release request, `None` for one that renders nothing.
    pub requests: Vec<Piece<Option<ReleaseRequest>>>,
    pub patches: Piece<Vec<Patch>>,
}

impl<'c> Instantiated<'c> {
    /// Gathers `plan`'s `templateResourceRefs` objects and instantiates its helmCharts
    /// entries and patches for `cluster`. `display` and `part` are the profile's.
    pub fn of(
        plan: &ProfilePlan<'_>,
        cluster: &'c SveltosCluster,
        resources: &Resources,
        env: Env<'c>,
        display: &'c str,
        part: &'c str,
    ) -> Result<Instantiated<'c>, RenderError> {
        let profile = plan.profile;
        if let Some(problem) = &plan.problem {
            return Err(RenderError::Profile { profile: display.to_string(), message: problem.clone() });
        }
        let mut warnings = Vec::new();
        let mut mgmt = BTreeMap::new();
        let mut absent = BTreeSet::new();
        for r in &plan.templates {
            let what = || (format!("spec.templateResourceRefs[{}]", r.spec.index), r.describe());
            match lookup(resources, &r.reference.key, r.spec.optional, display, &what, &mut warnings)? {
                Some(value) => {
                    let mut value = value.clone();
                    if r.spec.ignore_status_changes
                        && let Some(object) = value.as_object_mut()
                    {
                        object.remove("status");
                    }
                    mgmt.insert(r.spec.identifier.clone(), value);
                }
                None => {
                    absent.insert(r.spec.identifier.clone());
                }
            }
        }
        let ctx = Context::new(cluster, display, part, mgmt, absent, env.entropy, env.now).with_event(profile.event.as_ref());
        let requests = plan
            .helm_charts
            .iter()
            .map(|h| {
                let mut warnings = Vec::new();
                helm_charts::request(&ctx, h, resources, &mut warnings).map(|r| (r, warnings))
            })
            .collect();
        let mut patch_warnings = Vec::new();
        let patches = patches::collect(&ctx, plan, resources, &mut patch_warnings).map(|p| (p, patch_warnings));
        Ok(Instantiated { ctx, warnings, requests, patches })
    }

    /// The key of everything the rest of `plan`'s render reads, `None` when the rest sees
    /// the cluster too and so must be prepared for it alone.
    pub fn key(&self, plan: &ProfilePlan<'_>, resources: &Resources) -> Option<Digest> {
        let templated_elsewhere = plan.policies.iter().any(|r| resources.get(&r.reference.key).is_some_and(|v| r.templated(v)))
            || plan.kustomizations.iter().any(|k| k.source.spec.templated());
        if templated_elsewhere || plan.problem.is_some() || plan.profile.event.is_some() || self.ctx.read_clock() {
            return None;
        }
        let requests = self.requests.iter().map(|r| r.as_ref().ok()).collect::<Option<Vec<_>>>()?;
        let patches = self.patches.as_ref().ok()?;
        let references: Vec<_> = plan.references().map(|r| &r.key).collect();
        let cluster = self.ctx.cluster;
        let text = format!(
            "{}\n{}\n{references:?}\n{:?}\n{:?}\n{:?}\n{requests:?}\n{patches:?}\n{:?}",
            self.ctx.part,
            self.ctx.profile,
            cluster.kube_version(),
            cluster.api_versions(),
            plan.helm_charts,
            self.warnings,
        );
        Some(Digest::of(text.as_bytes()))
    }
}

/// Profiles prepared once for all the clusters whose [`Instantiated::key`] is equal, kept
/// while a cluster still holds them: a fleet whose every cluster instantiates differently
/// keeps no more than it would without them.
#[derive(Debug, Default)]
pub struct Instances(Mutex<HashMap<Digest, Weak<Prepared>>>);

impl Instances {
    /// The profile prepared under `key`, prepared by `prepare` unless a cluster holds it.
    /// Two threads may prepare one key at once: both get the same objects, and the first
    /// kept is the one later clusters share.
    pub fn get(&self, key: Digest, prepare: impl FnOnce() -> Result<Prepared, RenderError>) -> Result<Arc<Prepared>, RenderError> {
        if let Some(prepared) = self.0.lock().expect("not poisoned").get(&key).and_then(Weak::upgrade) {
            return Ok(prepared);
        }
        let fresh = Arc::new(prepare()?);
        let mut map = self.0.lock().expect("not poisoned");
        if let Some(kept) = map.get(&key).and_then(Weak::upgrade) {
            return Ok(kept);
        }
        if map.len().is_power_of_two() {
            map.retain(|_, w| w.strong_count() > 0);
        }
        map.insert(key, Arc::downgrade(&fresh));
        Ok(fresh)
    }
}
