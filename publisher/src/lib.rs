//! The publisher as a library: every stage of `airlock-publisher`, so the binary
//! (`main.rs`) only parses the command line and calls in.
//!
//! The data path is `sveltos` (sources, model, selection) → `render` (resolve, templates,
//! manifests, tiers) → `publish` (compare with the store, sign, one write); `remote`
//! fetches the `remoteURL` content a run's profiles name, beside the source's objects. Across an air
//! gap, `export` carries bundles out and `ingest` brings the pullers' reports back. `cmd`
//! holds the subcommands' flags and entry points.
//!
//! It sits on top of the workspace: `airlock-store` for the stores and the mirror,
//! `airlock-bundle` for the contract (building, signing, reading reports), and `airlock-cli`
//! for its edges (cluster and log flags, exit codes, the Lease, progress, object metadata).
#![forbid(unsafe_code)]

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
