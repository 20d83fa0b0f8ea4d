//! Why a bundle was rejected: one error for every step of spec section 8, so a caller
//! tells a rejection (never retried) from a store that could not answer.

use crate::age::AgeError;
use crate::content::ContentError;
use crate::digest::Digest;
use crate::envelope::EnvelopeError;
use crate::gzip::GzipError;
use crate::keyring::TrustError;
use crate::tar::TarError;

/// Why a bundle was rejected. Every variant is a rejection: the same input will be
/// rejected again, so callers do not retry it (exit code 3 in the tools).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    #[error("envelope: {0}")]
    Envelope(#[from] EnvelopeError),
    #[error("keyring chain: {0}")]
    KeyringChain(TrustError),
    #[error("signatures: {0}")]
    Signatures(TrustError),
    #[error("payload is not a valid Airlock statement: {0}")]
    Payload(String),
    #[error("payload: {0}")]
    Content(#[from] ContentError),
    #[error("payload: file {path:?} is out of order or repeated")]
    FileOrder { path: String },
    #[error("payload: profile {name:?} is out of order or repeated")]
    ProfileOrder { name: String },
    #[error("payload: file {path:?} belongs to part {part:?}, which has no profile entry")]
    PartNotListed { path: String, part: String },
    #[error("payload: part {part:?} is signed as {signed} bytes but its files make {computed}")]
    PartSize { part: String, signed: u64, computed: u64 },
    #[error("payload: part {part:?} depends on {dependency:?}, which is not in the bundle")]
    UnknownDependency { part: String, dependency: String },
    #[error("payload: dependsOn has a cycle through part {part:?}")]
    DependencyCycle { part: String },
    #[error("payload: subject digest {signed} does not match the file list ({computed})")]
    SubjectDigest { signed: String, computed: Digest },
    #[error("payload: {field} is {value}, above 2^53-1 or zero")]
    OutOfRange { field: &'static str, value: u64 },
    #[error("payload: expires {expires} is not after issuedAt {issued_at}")]
    ExpiresBeforeIssued { issued_at: String, expires: String },
    #[error("payload: {0}")]
    BadField(String),
    #[error("bundle is signed for keyring version {signed}, verified with version {actual}")]
    KeyringVersion { signed: u64, actual: u64 },
    /// `field` is the claim that names another cluster: `subject[0].name` or
    /// `predicate.cluster`.
    #[error("bundle is for cluster {actual}, this is {expected} ({field})")]
    WrongCluster { field: &'static str, expected: String, actual: String },
    #[error("rollback: version {version} is older than the applied version {floor}")]
    Rollback { version: u64, floor: u64 },
    #[error("version {version} was already applied with digest {applied}, this bundle has {actual}")]
    VersionReused { version: u64, applied: Digest, actual: Digest },
    #[error("issuedAt {issued_at} is in the future (now {now}, allowed skew {skew_secs}s)")]
    FromTheFuture { issued_at: String, now: String, skew_secs: i64 },
    #[error("bundle expired at {expires} (reference time {reference})")]
    Expired { expires: String, reference: String },
    #[error("version {version} is more than {step} above the applied version {floor}")]
    VersionLeap { version: u64, floor: u64, step: u64 },
    #[error("valid from {issued_at} to {expires}: longer than the {max_days} days a bundle may be valid")]
    ValidityTooLong { issued_at: String, expires: String, max_days: i64 },
    #[error(
        "issuedAt {issued_at} is more than {max_days} days after the newest issuedAt accepted, {highest}, while the clock \
         ({now}) is behind it"
    )]
    BeyondKnownTime { issued_at: String, highest: String, now: String, max_days: i64 },
    #[error("part {part:?}: the store does not hold it")]
    MissingPart { part: String },
    #[error("part {part:?}: {source}")]
    Transport { part: String, source: GzipError },
    #[error("part {part:?}: {size} bytes, signed as {signed}")]
    PartLength { part: String, size: u64, signed: u64 },
    #[error("part {part:?}: digest {actual} does not match the signed {expected}")]
    PartDigest { part: String, expected: Digest, actual: Digest },
    #[error("part {part:?}: {source}")]
    Tar { part: String, source: TarError },
    #[error("part {part:?}: entry {path:?} is not in the signed file list")]
    UnexpectedEntry { part: String, path: String },
    #[error("part {part:?}: signed file {path:?} is missing")]
    MissingEntry { part: String, path: String },
    #[error("part {part:?}: entry {path:?} does not match its signed size and sha256")]
    EntryMismatch { part: String, path: String },
    #[error("bundle has files encrypted to {listed:?}, and this puller has no age identity to decrypt them")]
    NoIdentity { listed: Vec<String> },
    #[error("bundle is encrypted to {listed:?}, none of them this puller's ({own:?})")]
    NotARecipient { listed: Vec<String>, own: Vec<String> },
    #[error("file {path:?}: cannot decrypt: {source}")]
    Decrypt { path: String, source: AgeError },
    #[error("file {path:?}: decrypts to bytes other than the signed plaintext size and sha256")]
    PlaintextMismatch { path: String },
}
