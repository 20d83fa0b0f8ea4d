//! The Sveltos side: the objects operators write, where they come from, and which of them
//! match which cluster.
//!
//! A [`Source`] (a directory of YAML, or a live management cluster) yields an
//! [`Inventory`] of clusters and profiles, then [`Source::fetch`]es exactly the
//! ConfigMaps, Secrets and template resources that rendering asks for (`inventory` has
//! those types, `model` and `parse` the Sveltos objects, `select` and `selector` which
//! profiles match which cluster). Neither source renders or publishes anything.

pub mod dir;
mod inventory;
pub mod live;
pub mod model;
pub mod parse;
pub mod select;
pub mod selector;

use std::collections::BTreeSet;

pub use inventory::{Inventory, ObjectKey, Reference, Resources, SourceError, typed};

/// Where the Sveltos objects come from.
pub enum Source {
    Dir(dir::DirSource),
    Live(live::LiveSource),
}

impl Source {
    /// Clusters and profiles, read fresh.
    pub async fn load(&self) -> Result<Inventory, SourceError> {
        match self {
            Source::Dir(d) => d.inventory(),
            Source::Live(l) => l.inventory().await,
        }
    }

    /// The referenced objects that exist.
    pub async fn fetch(&self, wanted: &BTreeSet<Reference>) -> Result<Resources, SourceError> {
        match self {
            Source::Dir(d) => Ok(d.fetch(wanted)),
            Source::Live(l) => l.fetch(wanted).await,
        }
    }
}
