//! Where a run's input comes from: the Sveltos objects operators write, which of them
//! match which cluster, and the content they point at outside the management side.
//!
//! A [`Source`] (a directory of YAML, or a live management cluster) yields an [`Inventory`]
//! of clusters, profiles and sets, with what it could not read (`broken`), then
//! [`Source::fetch`]es exactly the ConfigMaps, Secrets and template resources that
//! rendering asks for (`inventory` has those types, `model` and `parse` the Sveltos
//! objects, with what a profile's entries say in `model::helm_chart`,
//! `model::helm_options`, `model::kustomization` and `model::patch`, `fields` how far each
//! field is honoured, `max_update` the rollout window, `select` and `selector` which
//! profiles match which cluster). [`remote`] fetches what a `remoteURL` or a Flux
//! OCIRepository serves. Nothing here renders or publishes anything.

pub mod broken;
pub mod classifier;
pub mod dir;
pub mod event_instances;
pub mod event_report;
pub mod event_trigger;
pub mod fields;
pub mod health_check;
mod inventory;
mod key;
pub mod live;
pub mod max_update;
pub mod model;
pub mod parse;
pub mod remote;
pub mod select;
pub mod selector;

use std::collections::BTreeSet;

pub use broken::{Broken, Touches};
pub use inventory::{Inventory, Lookup, Resources, SourceError, typed};
pub use key::{ObjectKey, Reference};

/// Where the Sveltos objects come from.
pub enum Source {
    Dir(dir::DirSource),
    Live(live::LiveSource),
}

impl Source {
    /// Clusters, profiles and sets, read fresh; an error only when nothing could be read.
    pub async fn load(&self) -> Result<Inventory, SourceError> {
        match self {
            Source::Dir(d) => Ok(d.inventory()),
            Source::Live(l) => l.inventory().await,
        }
    }

    /// The referenced objects that exist, and those that could not be read.
    pub async fn fetch(&self, wanted: &BTreeSet<Reference>) -> Result<Resources, SourceError> {
        match self {
            Source::Dir(d) => Ok(d.fetch(wanted)),
            Source::Live(l) => Ok(l.fetch(wanted).await),
        }
    }
}
