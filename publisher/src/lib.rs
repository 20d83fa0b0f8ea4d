//! The publisher as a library: every stage of `airlock-publisher`, so the binary
//! (`main.rs`) only parses the command line and calls in.
//!
//! A run flows sources → render → publish:
//! - [`sources`]: the Sveltos objects (a directory of YAML or a live management cluster),
//!   their model and which profiles match which cluster ([`sources::select`]), and what a
//!   `remoteURL` or a Flux OCIRepository serves ([`sources::remote`]).
//! - [`render`]: one cluster's profiles into one unsigned bundle, with its engines: Go
//!   templates ([`render::template`]), Sveltos's post-render patches ([`render::patch`]),
//!   `helmCharts` through the helm binary ([`render::helm`]), `kustomizationRefs` through
//!   kubectl's kustomize ([`render::kustomize`]), and Lua programs through [`airlock_lua`]
//!   ([`render::data`]).
//! - [`publish`]: compare with the store, sign, one write per run; [`publish::memo`]
//!   remembers what each cluster rendered to between runs.
//!
//! [`cmd`] holds every subcommand: flags, checks and entry points, and the steps that are
//! a command's alone: [`cmd::register`] and [`cmd::deregister`] a pull-mode cluster,
//! [`cmd::ingest`] the pullers' reports carried back across the air gap, [`cmd::export`]
//! bundles carried out, [`cmd::status`], [`cmd::watch`], [`cmd::keygen`] and
//! [`cmd::keyring`].
//!
//! Underneath: [`worker`] runs rendering in a process that holds no key, [`sandbox`]
//! confines the programs it starts, [`process`] starts them with a budget, [`keys`] loads
//! signing keys and keyrings, [`yaml`] reads and writes YAML within limits, [`once`]
//! computes a value once per key across threads, [`duration`] reads Sveltos's durations,
//! [`redact`] writes source URLs without their secrets, [`source_mirrors`] sends fetches to
//! the mirrors `--mirror` names, and [`annotations`] names what the
//! publisher writes on SveltosClusters.
//!
//! It sits on top of the workspace: `airlock-store` for the stores and the mirror,
//! `airlock-bundle` for the contract (building, signing, reading reports), and `airlock-cli`
//! for its edges (cluster and log flags, exit codes, the Lease, progress, object metadata).
#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
// The overview links every module, public or not: the docs are built with private items.
#![allow(rustdoc::private_intra_doc_links)]

mod annotations;
pub mod cmd;
mod duration;
mod keys;
mod once;
mod process;
mod publish;
mod redact;
pub mod render;
pub mod sandbox;
pub mod shard;
mod source_mirrors;
mod sources;
#[cfg(test)]
mod test_archive;
pub mod worker;
mod yaml;

/// Template rendering for the fuzz target `fuzz/fuzz_targets/template.rs`; not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use render::template::{TemplateSource, render as render_template};

/// Selection for the micro-benchmark `benches/selection.rs`; not an API.
#[doc(hidden)]
pub use sources::{
    Inventory,
    select::{candidates, profiles_for},
};

// Progress bars are shared with the puller's `import`.
use airlock_cli::progress;
