//! Rendering: one cluster's matching profiles in, one unsigned bundle out.
//!
//! `resolve` reads and instantiates each profile's ConfigMaps and Secrets, `manifest`
//! labels each object and places it at its path, `shared` writes each profile's objects
//! once for all clusters it renders the same for, `tier` keeps one copy of every object,
//! and [`Renderer::render`] assembles the parts (one per matching profile, empty ones
//! included) with each part's settings. `credentials` adds the store credentials a cluster
//! registered with `--token` gets relayed, in the part `Airlock.system`. `inputs`
//! fingerprints what a cluster's rendering reads. `object` is the prepared object they all
//! pass along, `error` why a cluster fails. Signing and stores come after, in `publish`.

pub mod credentials;
mod error;
pub mod inputs;
pub mod manifest;
mod object;
pub mod resolve;
pub mod shared;
pub mod tier;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use airlock_bundle::{Bundle, PartSettings};
use airlock_bundle::{ClusterId, Limits};
use jiff::{SignedDuration, Timestamp};

use crate::sveltos::Resources;
use crate::sveltos::model::Profile;
pub use error::RenderError;
use object::Object;
pub use resolve::{ClusterPlan, plan};
use shared::SharedProfiles;
use tier::Candidate;

/// A cluster's bundle before signing.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub cluster: ClusterId,
    pub watch_namespaces: Option<Vec<String>>,
    pub bundle: Bundle,
    /// Settings of every part, by part name.
    pub settings: BTreeMap<String, PartSettings>,
    /// Objects in the bundle.
    pub objects: usize,
    pub warnings: Vec<String>,
}

/// Renders the clusters of one run from the resources fetched for it. One renderer may
/// render many clusters at once, from several threads.
pub struct Renderer<'r> {
    resources: &'r Resources,
    limits: &'r Limits,
    shared: SharedProfiles,
}

impl<'r> Renderer<'r> {
    pub fn new(resources: &'r Resources, limits: &'r Limits) -> Renderer<'r> {
        Renderer { resources, limits, shared: SharedProfiles::default() }
    }

    /// Renders a planned cluster.
    pub fn render(&self, plan: &ClusterPlan<'_>) -> Result<Rendered, RenderError> {
        let mut warnings = Vec::new();
        let mut candidates = Vec::new();
        let mut parts: BTreeMap<String, &Profile> = BTreeMap::new();
        let mut prepared_parts = BTreeMap::new();
        for pp in &plan.profiles {
            let profile = pp.profile;
            let part = profile.part_name();
            let part_name: Arc<str> = part.as_str().into();
            warnings.extend(profile.warnings.iter().map(|w| format!("{}: {w}", profile.display())));
            let prepared = self.shared.get(pp, plan.cluster, self.resources)?;
            warnings.extend(prepared.warnings.iter().cloned());
            candidates.extend(prepared.objects.iter().map(|o| Candidate {
                part: part_name.clone(),
                tier: profile.tier,
                object: o.clone(),
            }));
            parts.insert(part.clone(), profile);
            prepared_parts.insert(part, prepared);
        }
        if let Some(relay) = &plan.credentials {
            let object = credentials::read(relay, self.resources)?.object(relay);
            candidates.push(Candidate { part: credentials::SYSTEM_PART.into(), tier: credentials::SYSTEM_TIER, object });
        }
        let (kept, tier_warnings) = tier::resolve(candidates)?;
        warnings.extend(tier_warnings);
        let objects = kept.len();
        let mut kept_parts: BTreeMap<Arc<str>, Vec<Arc<Object>>> = BTreeMap::new();
        for c in kept {
            kept_parts.entry(c.part).or_default().push(c.object);
        }
        let mut settings = part_settings(&parts, &mut warnings)?;
        if plan.credentials.is_some() {
            settings.insert(credentials::SYSTEM_PART.into(), credentials::part_settings());
        }
        let mut built = Vec::with_capacity(settings.len());
        for name in settings.keys() {
            let kept = kept_parts.remove(name.as_str()).unwrap_or_default();
            let part = match prepared_parts.get(name) {
                // Nothing of the profile lost to another's copy: its part is the one every
                // cluster it is prepared for shares.
                Some(prepared) if prepared.objects.len() == kept.len() => prepared.part(name, self.limits)?,
                _ => shared::part_of(name, kept.iter().map(|o| &**o), self.limits)?,
            };
            built.push((name.clone(), part));
        }
        let bundle = Bundle::from_parts(built, self.limits)?;
        Ok(Rendered {
            cluster: plan.cluster.id.clone(),
            watch_namespaces: plan.cluster.watch_namespaces.clone(),
            bundle,
            settings,
            objects,
            warnings,
        })
    }
}

impl Renderer<'_> {
    /// The expiry of the store credentials `plan`'s bundle relays, judged at `now`: a
    /// warning within `renew_before`, an error once expired. Apart from [`Renderer::render`]
    /// because the answer changes with the clock while the bundle does not.
    pub fn credentials_expiry(
        &self,
        plan: &ClusterPlan<'_>,
        now: Timestamp,
        renew_before: SignedDuration,
    ) -> Result<Option<String>, RenderError> {
        match &plan.credentials {
            Some(relay) => credentials::read(relay, self.resources)?.expiry(now, renew_before),
            None => Ok(None),
        }
    }
}

/// Each part's settings. A dependency that does not match this cluster is dropped with a
/// warning: Sveltos would wait for it forever, and the bundle may only name its own parts.
fn part_settings(parts: &BTreeMap<String, &Profile>, warnings: &mut Vec<String>) -> Result<BTreeMap<String, PartSettings>, RenderError> {
    let mut settings = BTreeMap::new();
    for (part, p) in parts {
        let mut depends_on = BTreeSet::new();
        for name in &p.depends_on {
            let dep = p.dependency_part(name);
            if parts.contains_key(&dep) {
                depends_on.insert(dep);
            } else {
                warnings.push(format!("{}: dependsOn {name}, which does not match this cluster; dependency not recorded", p.display()));
            }
        }
        let s = PartSettings {
            sync_mode: p.sync_mode,
            tier: p.tier,
            depends_on: depends_on.into_iter().collect(),
            stop_matching_behavior: p.stop_matching_behavior,
            force_conflicts: false,
            ..PartSettings::default()
        };
        settings.insert(part.clone(), s);
    }
    check_acyclic(&settings)?;
    Ok(settings)
}

/// Refuses a dependsOn cycle, which every puller would reject (spec 8.6).
fn check_acyclic(settings: &BTreeMap<String, PartSettings>) -> Result<(), RenderError> {
    // Kahn's algorithm: whatever cannot be ordered lies on or behind a cycle.
    let mut waiting: BTreeMap<&str, usize> = settings.iter().map(|(p, s)| (p.as_str(), s.depends_on.len())).collect();
    let mut ready: Vec<&str> = waiting.iter().filter(|(_, n)| **n == 0).map(|(p, _)| *p).collect();
    while let Some(done) = ready.pop() {
        waiting.remove(done);
        for (part, s) in settings {
            if s.depends_on.iter().any(|d| d == done)
                && let Some(n) = waiting.get_mut(part.as_str())
            {
                *n -= 1;
                if *n == 0 {
                    ready.push(part);
                }
            }
        }
    }
    match waiting.keys().next() {
        Some(part) => Err(RenderError::DependencyCycle { part: part.to_string() }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
