//! Where bundles live between publisher and puller (spec section 9). It sits on
//! `airlock-bundle`, which it never bypasses, and under the publisher and the puller (whose
//! shared edges are `airlock-cli`'s).
//!
//! One [`Store`] trait over OCI registries, OCI image layouts, OCI archives and Git, each
//! kind a module of its own, opened from a [`StoreRef`] by [`open()`]; what a store hands over
//! is a [`Fetched`] and [`PartCopy`]s, and why it failed a [`StoreError`]. Registries,
//! layouts and Git also keep the pullers' signed [`reports`] beside the bundles. The [`mirror`]
//! carries bundles across an air gap. A store moves bytes and finds them; it does not decide
//! whether they are trustworthy: [`fetch_verified`] joins a store to `airlock_bundle::verify`
//! in the order of spec section 8, envelope first, content only when needed. Feature
//! `testing` adds `vectors`, the format's test vectors computed.
#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

mod credentials;
mod error;
mod fetch;
mod fetched;
mod git;
mod meta;
pub mod mirror;
pub mod oci;
pub(crate) mod oci_archive;
mod oci_layout;
mod oci_registry;
mod open;
mod read_bytes;
mod reference;
pub mod reports;
mod store;
mod userinfo;
#[cfg(feature = "testing")]
pub mod vectors;

pub use credentials::RegistryCredentials;
pub use error::StoreError;
pub use fetch::{Fetch, FetchError, fetch_envelope, fetch_envelope_unless, fetch_verified, verify_fetched};
pub use fetched::{EnvelopeDigests, Fetched, PartCopy};
pub use git::{GitClusters, GitCredentials, GitCredentialsError, GitStore};
pub use meta::PublishMeta;
pub use oci::{OciDescriptor, OciManifest};
pub use oci_archive::write_tar;
pub use open::{open, open_oci};
pub use read_bytes::ReadBytes;
pub use reference::StoreRef;
pub use reports::{Latest, LatestReports, ReportPush, ReportStore};
pub use store::{Batch, OciStore, Store};
