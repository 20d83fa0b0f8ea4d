//! A profile's objects ready to place in a bundle, and the cache that renders a profile
//! once for every cluster it renders the same for.
//!
//! [`prepare`] reads a profile's manifests for one cluster (through `resolve`), sets the
//! profile's extraLabels and extraAnnotations, and writes each object as YAML. A profile
//! whose ConfigMaps and Secrets hold no templates comes out the same for every cluster
//! whose references resolve to the same objects, so [`SharedProfiles`] prepares it once
//! per run and hands every such cluster the same objects: in a fleet of thousands of
//! clusters, parsing and writing YAML again for each would dominate a publish. Templated
//! profiles are prepared per cluster. Which copy of an object wins is `tier`'s business.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use airlock_bundle::Limits;
use airlock_bundle::Part;

use super::error::RenderError;
use super::manifest::{add_metadata, checked_path};
use super::object::Object;
use super::resolve::{ProfilePlan, SharedKey, profile_manifests};
use crate::sveltos::Resources;
use crate::sveltos::model::SveltosCluster;
use crate::yaml;

/// A profile's objects for a cluster, and the warnings reading them gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub objects: Vec<Arc<Object>>,
    pub warnings: Vec<String>,
    /// The part all the objects make, built for the first cluster that keeps them all.
    part: OnceLock<Result<Part, RenderError>>,
}

impl Prepared {
    /// The part `name` these objects make when a cluster keeps every one of them. Built
    /// once and then shared: its bytes and digests serve every cluster the profile is
    /// prepared for, instead of being joined and hashed again for each.
    pub fn part(&self, name: &str, limits: &Limits) -> Result<Part, RenderError> {
        self.part
            .get_or_init(|| {
                let mut objects: Vec<&Object> = self.objects.iter().map(|o| &**o).collect();
                objects.sort_by(|a, b| a.key.cmp(&b.key));
                part_of(name, objects, limits)
            })
            .clone()
    }
}

/// The part `name` made of `objects`, given in object order: each at its path, objects
/// that share a path one YAML stream.
pub fn part_of<'o>(name: &str, objects: impl IntoIterator<Item = &'o Object>, limits: &Limits) -> Result<Part, RenderError> {
    let mut files: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for o in objects {
        files.entry(checked_path(name, &o.key)?).or_default().push(&o.yaml);
    }
    let files = files.into_iter().map(|(path, docs)| (path, docs.join(yaml::SEPARATOR)));
    Ok(Part::new(name, files, limits)?)
}

/// Reads, labels and writes one profile's objects for `cluster`.
pub fn prepare(plan: &ProfilePlan<'_>, cluster: &SveltosCluster, resources: &Resources) -> Result<Prepared, RenderError> {
    let mut warnings = Vec::new();
    let profile = plan.profile;
    let objects = profile_manifests(plan, cluster, resources, &mut warnings)?
        .into_iter()
        .map(|mut m| {
            add_metadata(&mut m.value, "labels", &profile.extra_labels);
            add_metadata(&mut m.value, "annotations", &profile.extra_annotations);
            Arc::new(Object { key: m.key, origin: m.origin, yaml: yaml::emit(std::slice::from_ref(&m.value)).into() })
        })
        .collect();
    Ok(Prepared { objects, warnings, part: OnceLock::new() })
}

type Slot = Arc<OnceLock<Result<Arc<Prepared>, RenderError>>>;

/// Profiles prepared once per run, by what they render from. Safe to share between the
/// threads rendering clusters.
#[derive(Debug, Default)]
pub struct SharedProfiles(Mutex<HashMap<SharedKey, Slot>>);

impl SharedProfiles {
    /// `plan`'s objects for `cluster`: prepared once for all clusters when the profile has
    /// no templates, else for this cluster alone.
    pub fn get(&self, plan: &ProfilePlan<'_>, cluster: &SveltosCluster, resources: &Resources) -> Result<Arc<Prepared>, RenderError> {
        let Some(key) = plan.shared_key(resources) else {
            return prepare(plan, cluster, resources).map(Arc::new);
        };
        let slot = self.0.lock().expect("not poisoned").entry(key).or_default().clone();
        // Outside the map's lock, so other profiles prepare meanwhile; a second cluster
        // asking for this one waits for the first instead of preparing it again.
        slot.get_or_init(|| prepare(plan, cluster, resources).map(Arc::new)).clone()
    }
}
