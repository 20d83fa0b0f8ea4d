//! The puller as a library: every stage of `airlock-puller`, so the binary (`main.rs`) only
//! parses flags and calls in, and the end-to-end tests drive the apply engine directly.
//! It depends on `airlock-store` (stores, the mirror), which depends on `airlock-bundle`
//! (the contract: verification, the report payload), and on `airlock-cli` for its edges
//! (cluster flags, logging, exit codes, the Lease).
//!
//! The layout follows a run. `cmd` holds the commands: `sync` runs fetch and verify
//! (`source`) → policy, plan, apply, prune and drift (`engine`) → what is kept in the
//! cluster (`kept`: state, inventory) → the report (`reports`: the report, the copy kept in
//! the cluster, the signed files and the push to the store), under a Lease; `run` repeats it in a loop; `plan` and `verify` show
//! what it would do; across an air gap, `import` loads a carried archive into the local
//! store and `export_reports` bundles the signed reports to carry back. `config` checks
//! the flags into settings before any of it, `window` says whether the bundle's active
//! window lets a run change the cluster, and `reports::failure` sorts what went wrong into
//! the documented exit codes.
#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
// The overview names private modules; `cargo doc --document-private-items` renders them.
#![allow(rustdoc::private_intra_doc_links)]

pub mod cmd;
pub mod config;
pub mod engine;
mod identities;
mod kept;
pub mod reports;
mod source;
mod trusted;
mod window;
