//! The puller as a library: every stage of `airlock-puller`, so the binary (`main.rs`) only
//! parses flags and calls in, and the end-to-end tests drive the apply engine directly.
//!
//! The data path is fetch and verify (`source`) → policy, plan and apply (`engine`) →
//! state (`state`) → report (`report`, `publish`), run once by `sync` under a Lease or in a
//! loop by `run_cmd`. Across an air gap, `import_cmd` loads a carried archive into the
//! local store and `export_reports` bundles the signed reports to carry back.
#![forbid(unsafe_code)]

pub mod config;
pub mod engine;
pub mod export_reports;
pub mod failure;
mod gz_secret;
pub mod import_cmd;
mod inventory;
mod kept_report;
mod metrics;
mod own_objects;
pub mod plan;
pub mod publish;
pub mod report;
pub mod run_cmd;
mod serve;
mod source;
mod state;
pub mod sync;
mod verified;
pub mod verify_cmd;
