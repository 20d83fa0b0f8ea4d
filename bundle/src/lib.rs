//! The bundle contract of `bundles-format.md`, and nothing else: content and canonical
//! tar, digests, the statement, the DSSE envelope, keys and keyrings, signing, verification
//! in the spec's order, signed reports, and the limits every reader enforces. Synchronous:
//! no async runtime, no network, no Git, no Kubernetes, so it can be fuzzed, audited and
//! embedded on its own. It is the bottom of the workspace: `airlock-store` builds on it,
//! and the publisher and the puller on both.
//!
//! The publisher goes [`Bundle::new`] → [`sign::sign`]; the puller goes
//! [`verify::verify_envelope`] → [`verify::VerifiedEnvelope::verify_part`] →
//! [`verify::VerifiedEnvelope::finish`]. [`yaml`] reads a bundle file's manifests (spec
//! 2.5), [`selector`] the label selectors of drift exclusion targets (spec 5.8), and
//! [`vocabulary`] names the labels, annotations and hook words both binaries read and
//! write. Feature
//! `testing` adds `testkit`: seeded keys and fixed bundles for tests.
#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod age;
pub mod b64;
pub mod cluster;
pub mod content;
pub mod cron;
pub mod digest;
pub mod envelope;
pub mod gzip;
pub mod key;
pub mod keyring;
pub mod limits;
pub mod mac;
pub mod path;
pub mod report;
pub mod seal;
pub mod selector;
pub mod sign;
pub mod signer;
pub mod statement;
pub mod tar;
#[cfg(feature = "testing")]
pub mod testkit;
pub mod verify;
pub mod vocabulary;
pub mod yaml;

pub use cluster::ClusterId;
pub use content::{Bundle, Part};
pub use digest::Digest;
pub use key::{PublicKey, SigningKey};
pub use keyring::Keyring;
pub use limits::Limits;
pub use sign::{PartSettings, Release, SignedBundle};
pub use signer::{SignError, Signer};
pub use statement::{ClusterSettings, Statement, StopMatchingBehavior, SyncMode};
pub use verify::{Expectation, Floor, Transport, VerifiedBundle, VerifiedEnvelope, VerifyError};
