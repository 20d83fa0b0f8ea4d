//! Sveltos `kustomizationRefs` built on the management side with kubectl's built-in
//! kustomize: the source tree from a ConfigMap or Secret tarball or a Git repository
//! (a Flux GitRepository resolved to its URL and ref), `kubectl kustomize` with Sveltos's
//! load restrictor, then Sveltos's substitution values and `targetNamespace` per cluster.
//! Output: the objects, as JSON values.
//!
//! Entry points: [`KustomizeSource`] reads a referenced object, [`resolve_revisions`] looks
//! up the commits of a run's GitRepositories, [`Kustomizer::locate`] finds kubectl,
//! [`Kustomizer::build`] builds a [`KustomizeRequest`]. The render's `kustomization_refs`
//! stage turns one profile's `kustomizationRefs` entry into one cluster's objects with
//! these (templating `path`, `components` and `values` with the cluster's data, reading
//! `valuesFrom` objects).
//!
//! Not here: reading the references from a profile (`sources::model::kustomization`), fetching
//! the referenced objects (the sources do) and OCIRepository artifacts and `remoteURL`s
//! (`sources::remote`, which hands over a tarball), Bucket sources, and Git credentials.
//!
//! Layout: `source` (what a reference names), `revision` (a ref's commit), `tree` (the
//! unpacked source tree, capped), `git` (a commit's tree), `confine` (references stay in
//! the tree), `build` (kubectl), `substitute` (values and namespace).

mod build;
mod confine;
mod error;
mod git;
mod revision;
mod source;
mod substitute;
mod tree;

pub use build::{KustomizeRequest, Kustomizer, LazyKustomizer};
pub use error::KustomizeError;
pub use revision::{commit_of, resolve_into as resolve_revisions};
pub use source::{GitRef, KustomizeSource, SECRET_TYPE, TARBALL_KEY};
pub use tree::{MAX_ENTRIES, MAX_FILE_BYTES, MAX_TREE_BYTES};
