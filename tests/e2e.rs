//! The end-to-end tests: one test binary, a module per area, each with its submodules in
//! the directory of its name. They run against the real services `hack/services.sh`
//! starts (`source ~/.cache/airlock/run/services.env` first); the helpers they share are
//! the package's library (`src/`). Tests of all areas run in parallel in this one process,
//! so each makes names of its own (see `airlock_e2e::locks` for what a few must have to
//! themselves).
//!
//! Run one area with `cargo test -p airlock-e2e --test e2e <area>::`. A new area is one
//! file, `<area>.rs` beside this one, and one line below.
#![forbid(unsafe_code)]

mod airgap;
mod chart;
mod classifier;
mod confidential;
mod containment;
mod credentials;
mod deregister;
mod engine;
mod events;
mod faults;
mod git;
mod git_layout;
mod health_check;
mod helm;
mod helm_hooks;
mod helm_publish;
mod helm_sources;
mod hostile;
mod interop;
mod kube_smoke;
mod kustomize;
mod mirrors;
mod node;
mod ownership;
mod pkcs11;
mod publisher;
mod publisher_live;
mod publisher_remote;
mod publisher_rollout;
mod publisher_sveltos;
mod pull_loop;
mod puller;
mod puller_airgap;
mod rbac;
mod register;
mod registry;
mod render_worker;
mod secrets;
mod shards;
mod soak;
mod store_reports;
mod sveltos_coexist;
mod sveltos_docs;
mod sveltos_status;
mod tenants;
