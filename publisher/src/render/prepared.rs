//! What preparing a profile for a cluster gives ([`Prepared`]), and what it draws on
//! besides the profile ([`Env`]): the types `shared` and `instantiated` both speak, kept
//! apart from either so neither imports the other's.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use airlock_bundle::statement::{FieldNote, Rendering};
use airlock_bundle::{Limits, Part};
use jiff::Timestamp;

use super::data::Entropy;
use super::error::RenderError;
use super::hold::releases::Claim;
use super::manifest::checked_path;
use super::object::Object;
use crate::render::helm::LazyRenderer;
use crate::render::kustomize::LazyKustomizer;
use crate::yaml;

/// A profile's objects for a cluster, and the warnings reading them gave.
#[derive(Debug)]
pub struct Prepared {
    pub objects: Vec<Arc<Object>>,
    pub warnings: Vec<String>,
    /// What the part's notes add for this render: the patch operations Sveltos dropped.
    pub notes: Vec<FieldNote>,
    /// When a template read the clock: what the render read, and the time it was given.
    pub clock: Option<Rendering>,
    /// The Helm releases among the objects: another profile may own one whole.
    pub releases: Vec<Claim>,
    /// The part all the objects make, built for the first cluster that keeps them all.
    part: OnceLock<Result<Part, RenderError>>,
}

impl Prepared {
    pub fn new(
        objects: Vec<Arc<Object>>,
        warnings: Vec<String>,
        notes: Vec<FieldNote>,
        clock: Option<Rendering>,
        releases: Vec<Claim>,
    ) -> Prepared {
        Prepared { objects, warnings, notes, clock, releases, part: OnceLock::new() }
    }

    /// Objects that read no clock, with the releases among them.
    #[cfg(test)]
    pub fn of_objects(objects: Vec<Arc<Object>>, releases: Vec<Claim>) -> Prepared {
        Prepared::new(objects, Vec::new(), Vec::new(), None, releases)
    }

    /// `objects` and `warnings` in place of `from`'s, with its notes, clock and releases.
    pub fn of(objects: Vec<Arc<Object>>, warnings: Vec<String>, from: &Prepared) -> Prepared {
        Prepared {
            objects,
            warnings,
            notes: from.notes.clone(),
            clock: from.clock.clone(),
            releases: from.releases.clone(),
            part: OnceLock::new(),
        }
    }

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

/// What a render draws on besides the profile and the resources.
#[derive(Debug, Clone, Copy)]
pub struct Env<'e> {
    pub entropy: Option<&'e Entropy>,
    /// Builds `kustomizationRefs`.
    pub kustomizer: &'e LazyKustomizer,
    /// Renders `helmCharts`.
    pub helm: &'e LazyRenderer,
    /// What `now` returns.
    pub now: Timestamp,
}
