//! Airlock's shared library: the bundle contract (`bundles-format.md`), signing and
//! verification, and the stores bundles travel through.
//!
//! - [`bundle`]: content → canonical tar → statement → DSSE envelope, and verification in
//!   the spec's order. No I/O.
//! - [`store`]: one [`store::Store`] trait over OCI registries, OCI layouts and archives,
//!   and Git.
//! - [`yaml`]: a bundle file's manifests (spec 2.5), read a line at a time where they allow.
#![forbid(unsafe_code)]

pub mod bundle;
#[cfg(feature = "cli")]
pub mod cli;
pub mod cluster;
pub mod digest;
pub mod limits;
pub mod mirror;
pub mod store;
pub mod testkit;
pub mod yaml;

pub use cluster::ClusterId;
pub use digest::Digest;
pub use limits::Limits;
