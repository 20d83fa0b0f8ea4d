//! The bundle contract of `bundles-format.md`: content, canonical tar, statement, DSSE
//! envelope, keyring and verification. Synchronous, no network, no Kubernetes.
//!
//! The publisher goes [`Bundle::new`] → [`sign::sign`]; the puller goes
//! [`verify::verify_envelope`] → [`verify::VerifiedEnvelope::verify_part`] →
//! [`verify::VerifiedEnvelope::finish`].

pub mod content;
pub mod envelope;
pub mod gzip;
pub mod keyring;
mod part;
pub mod path;
pub mod report;
pub mod sign;
pub mod statement;
pub mod tar;
pub mod verify;

pub use content::{Bundle, Part};
pub use keyring::{Keyring, PublicKey, SigningKey};
pub use sign::{PartSettings, Release, SignedBundle};
pub use statement::{Statement, StopMatchingBehavior, SyncMode};
pub use verify::{Expectation, Floor, Transport, VerifiedBundle, VerifiedEnvelope, VerifyError};
