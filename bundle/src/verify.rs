//! Verification of a received bundle, in the order of spec section 8.
//!
//! [`verify_envelope`] runs steps 1-10 on the envelope alone, so a puller learns whether it
//! needs any content before it fetches a byte of it. [`VerifiedEnvelope::verify_part`] runs
//! steps 11-13 on each part, and [`VerifiedEnvelope::finish`] is the only way to obtain a
//! [`VerifiedBundle`], which is what the puller applies. Steps 11-13 themselves are in
//! `bundle::part`.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use jiff::{SignedDuration, Timestamp};

use super::content::{Bundle, ContentError, bundle_digest};
use super::envelope::{self, EnvelopeError, IN_TOTO_PAYLOAD_TYPE};
use super::gzip::GzipError;
use super::keyring::{Keyring, TrustError};
use super::part;
use super::path::{PathError, check_part_name, check_path};
use super::statement::*;
use super::tar::{TarError, tar_size};
use crate::cluster::ClusterId;
use crate::digest::Digest;
use crate::limits::Limits;

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
    #[error("bundle is for cluster {actual}, this is {expected}")]
    WrongCluster { expected: String, actual: String },
    #[error("rollback: version {version} is older than the applied version {floor}")]
    Rollback { version: u64, floor: u64 },
    #[error("version {version} was already applied with digest {applied}, this bundle has {actual}")]
    VersionReused { version: u64, applied: Digest, actual: Digest },
    #[error("issuedAt {issued_at} is in the future (now {now}, allowed skew {skew_secs}s)")]
    FromTheFuture { issued_at: String, now: String, skew_secs: i64 },
    #[error("bundle expired at {expires} (reference time {reference})")]
    Expired { expires: String, reference: String },
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
}

/// What the puller remembers between runs that verification depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Floor {
    /// The last applied version and its bundle digest.
    pub applied: Option<(u64, Digest)>,
    /// The highest `issuedAt` ever accepted (spec 8.10).
    pub highest_issued_at: Option<Timestamp>,
}

/// The puller's side of a verification: who it is and what it remembers.
#[derive(Debug, Clone)]
pub struct Expectation<'a> {
    pub cluster: &'a ClusterId,
    pub keyring: &'a Keyring,
    pub floor: &'a Floor,
    pub now: Timestamp,
}

/// A compressed or plain canonical tar as a store hands it over.
#[derive(Debug, Clone, Copy)]
pub enum Transport<'a> {
    Gzip(&'a [u8]),
    Tar(&'a [u8]),
}

/// An envelope that passed steps 1-10.
#[derive(Debug, Clone)]
pub struct VerifiedEnvelope {
    statement: Statement,
    keyring: Keyring,
    signers: Vec<String>,
    digest: Digest,
    already_applied: bool,
}

/// A bundle that passed every step of spec section 8.
#[derive(Debug, Clone)]
pub struct VerifiedBundle {
    envelope: VerifiedEnvelope,
    bundle: Bundle,
}

/// Steps 1-10 of spec section 8.
pub fn verify_envelope(
    envelope_bytes: &[u8],
    keyring_chain: Option<&[u8]>,
    expect: &Expectation<'_>,
    limits: &Limits,
) -> Result<VerifiedEnvelope, VerifyError> {
    // spec 8.1, 8.2
    let env = envelope::decode(envelope_bytes, IN_TOTO_PAYLOAD_TYPE, limits)?;
    // spec 8.3
    let keyring = follow_chain(expect.keyring, keyring_chain, limits)?;
    // spec 8.4
    let signers = keyring.check(&env).map_err(VerifyError::Signatures)?;
    // spec 8.5
    let statement: Statement = serde_json::from_slice(&env.payload).map_err(|e| VerifyError::Payload(e.to_string()))?;
    if statement.statement_type != STATEMENT_TYPE || statement.predicate_type != PREDICATE_TYPE {
        return Err(VerifyError::Payload(format!("_type {:?} / predicateType {:?}", statement.statement_type, statement.predicate_type)));
    }
    // spec 8.6
    let digest = check_consistency(&statement, limits)?;
    let p = &statement.predicate;
    if p.keyring_version != keyring.version() {
        return Err(VerifyError::KeyringVersion { signed: p.keyring_version, actual: keyring.version() });
    }
    // spec 8.7: the subject's half; the predicate's is in `check_claims`, with the same error.
    let own = expect.cluster.to_string();
    if statement.subject[0].name != own {
        return Err(VerifyError::WrongCluster { expected: own, actual: p.cluster.clone() });
    }
    let claims = Claims { cluster: &p.cluster, version: p.version, digest, issued_at: p.issued_at, expires: p.expires };
    let already_applied = check_claims(&claims, expect, limits)?;
    Ok(VerifiedEnvelope { statement, keyring, signers, digest, already_applied })
}

/// Step 3: the keyring to check signatures with, `keyring` advanced by the store's chain.
pub fn follow_chain(keyring: &Keyring, chain: Option<&[u8]>, limits: &Limits) -> Result<Keyring, VerifyError> {
    match chain {
        Some(chain) => keyring.follow_chain(chain, limits).map_err(VerifyError::KeyringChain),
        None => Ok(keyring.clone()),
    }
}

/// What steps 7-10 judge of a statement that passed steps 1-6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claims<'a> {
    pub cluster: &'a str,
    pub version: u64,
    /// The bundle digest step 6 computed.
    pub digest: Digest,
    pub issued_at: Timestamp,
    pub expires: Timestamp,
}

/// Steps 7-10, against the puller's cluster, floor and clock. Returns whether this
/// version and digest were applied already (8.8).
pub fn check_claims(claims: &Claims<'_>, expect: &Expectation<'_>, limits: &Limits) -> Result<bool, VerifyError> {
    // spec 8.7
    let own = expect.cluster.to_string();
    if claims.cluster != own {
        return Err(VerifyError::WrongCluster { expected: own, actual: claims.cluster.to_string() });
    }
    // spec 8.8
    let mut already_applied = false;
    if let Some((floor, applied)) = expect.floor.applied {
        if claims.version < floor {
            return Err(VerifyError::Rollback { version: claims.version, floor });
        }
        if claims.version == floor {
            if applied != claims.digest {
                return Err(VerifyError::VersionReused { version: claims.version, applied, actual: claims.digest });
            }
            already_applied = true;
        }
    }
    // spec 8.9: a clock behind the newest issuedAt already accepted is known to be wrong
    // (reset, dead battery), so it cannot judge "future"; expiry below still holds.
    let skew = SignedDuration::from_secs(limits.clock_skew_secs);
    let clock_is_sane = expect.floor.highest_issued_at.is_none_or(|h| expect.now >= h);
    if clock_is_sane && claims.issued_at > expect.now + skew {
        return Err(VerifyError::FromTheFuture {
            issued_at: rfc3339::format(&claims.issued_at),
            now: rfc3339::format(&expect.now),
            skew_secs: limits.clock_skew_secs,
        });
    }
    // spec 8.10
    let reference = expect.floor.highest_issued_at.map_or(expect.now, |t| t.max(expect.now));
    if claims.expires <= reference {
        return Err(VerifyError::Expired { expires: rfc3339::format(&claims.expires), reference: rfc3339::format(&reference) });
    }
    Ok(already_applied)
}

/// Step 6: everything the statement says must agree with itself. Returns the bundle digest.
fn check_consistency(statement: &Statement, limits: &Limits) -> Result<Digest, VerifyError> {
    let p = &statement.predicate;
    if statement.subject.len() != 1 {
        return Err(VerifyError::Payload(format!("{} subjects, expected 1", statement.subject.len())));
    }
    p.cluster.parse::<ClusterId>().map_err(|e| VerifyError::BadField(e.to_string()))?;
    for (field, value) in [("version", p.version), ("keyringVersion", p.keyring_version)] {
        if value == 0 || value > MAX_JSON_INT {
            return Err(VerifyError::OutOfRange { field, value });
        }
    }
    if p.expires <= p.issued_at {
        return Err(VerifyError::ExpiresBeforeIssued { issued_at: rfc3339::format(&p.issued_at), expires: rfc3339::format(&p.expires) });
    }
    if let Some(ns) = &p.watch_namespaces
        && let Some(bad) = ns.iter().find(|n| !crate::cluster::is_dns_label(n))
    {
        return Err(VerifyError::BadField(format!("watchNamespaces entry {bad:?} is not a namespace name")));
    }
    if p.profiles.len() > limits.parts {
        return Err(ContentError::TooManyParts { count: p.profiles.len(), limit: limits.parts }.into());
    }
    if p.files.len() > limits.files {
        return Err(ContentError::TooManyFiles { count: p.files.len(), limit: limits.files }.into());
    }
    let mut parts: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for w in p.profiles.windows(2) {
        if w[0].name >= w[1].name {
            return Err(VerifyError::ProfileOrder { name: w[1].name.clone() });
        }
    }
    for profile in &p.profiles {
        check_part_name(&profile.name).map_err(ContentError::Path)?;
        parts.insert(&profile.name, Vec::new());
    }
    let mut total = 0u64;
    let mut previous: Option<&str> = None;
    let mut digests = Vec::with_capacity(p.files.len());
    for f in &p.files {
        let part = check_path(&f.path).map_err(|e: PathError| ContentError::Path(e))?;
        if previous.is_some_and(|prev| prev >= f.path.as_str()) {
            return Err(VerifyError::FileOrder { path: f.path.clone() });
        }
        previous = Some(&f.path);
        if f.size > limits.file_bytes {
            return Err(ContentError::FileTooLarge { path: f.path.clone(), size: f.size, limit: limits.file_bytes }.into());
        }
        total += f.size;
        if total > limits.total_bytes {
            return Err(ContentError::TooLarge { size: total, limit: limits.total_bytes }.into());
        }
        let Some(sizes) = parts.get_mut(part) else {
            return Err(VerifyError::PartNotListed { path: f.path.clone(), part: part.to_string() });
        };
        sizes.push(f.size);
        let d = Digest::from_hex(&f.sha256).map_err(|e| VerifyError::BadField(format!("file {:?}: {e}", f.path)))?;
        digests.push((f.path.as_str(), d));
    }
    for profile in &p.profiles {
        let computed = tar_size(parts[profile.name.as_str()].iter().copied());
        if computed != profile.size {
            return Err(VerifyError::PartSize { part: profile.name.clone(), signed: profile.size, computed });
        }
        if profile.tier > i32::MAX as u32 {
            return Err(VerifyError::BadField(format!("profile {:?}: tier {} is above 2^31-1", profile.name, profile.tier)));
        }
        for dep in &profile.depends_on {
            if !parts.contains_key(dep.as_str()) {
                return Err(VerifyError::UnknownDependency { part: profile.name.clone(), dependency: dep.clone() });
            }
        }
    }
    check_acyclic(&p.profiles)?;
    let computed = bundle_digest(digests);
    if statement.subject[0].digest.sha256 != computed.hex() {
        return Err(VerifyError::SubjectDigest { signed: statement.subject[0].digest.sha256.clone(), computed });
    }
    Ok(computed)
}

fn check_acyclic(profiles: &[ProfileEntry]) -> Result<(), VerifyError> {
    let deps: BTreeMap<&str, &[String]> = profiles.iter().map(|p| (p.name.as_str(), p.depends_on.as_slice())).collect();
    let mut done = BTreeSet::new();
    for start in deps.keys() {
        // Depth-first with an explicit path: a name met again on the path is a cycle.
        let mut path: Vec<(&str, usize)> = vec![(start, 0)];
        while let Some((node, i)) = path.pop() {
            if done.contains(node) {
                continue;
            }
            match deps[node].get(i) {
                Some(next) => {
                    path.push((node, i + 1));
                    if path.iter().any(|(n, _)| *n == next.as_str()) {
                        return Err(VerifyError::DependencyCycle { part: next.clone() });
                    }
                    path.push((next, 0));
                }
                None => {
                    done.insert(node);
                }
            }
        }
    }
    Ok(())
}

impl VerifiedEnvelope {
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    pub fn predicate(&self) -> &Predicate {
        &self.statement.predicate
    }

    /// The keyring that verified the envelope: newer than the puller's when the store
    /// carried a keyring chain. Persist it only after the bundle was applied.
    pub fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    /// Key ids of the distinct keys whose signatures counted.
    pub fn signers(&self) -> &[String] {
        &self.signers
    }

    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// Whether this exact version and content was applied already (spec 8.8): its
    /// content need not be fetched.
    pub fn already_applied(&self) -> bool {
        self.already_applied
    }

    /// Steps 11-13 for one part. Returns its files.
    pub fn verify_part(&self, name: &str, transport: Transport<'_>, limits: &Limits) -> Result<VerifiedPart, VerifyError> {
        let profile = self
            .statement
            .predicate
            .profiles
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| VerifyError::MissingPart { part: name.to_string() })?;
        let files = part::verify(name, profile, self.signed_files(name), transport, limits)?;
        Ok(VerifiedPart { name: name.to_string(), files })
    }

    /// The signed files of part `name`: one run of the sorted list, as paths sharing a
    /// prefix are adjacent in bytewise order.
    fn signed_files(&self, name: &str) -> &[FileEntry] {
        let files = &self.statement.predicate.files;
        let prefix = format!("{name}/");
        let start = files.partition_point(|f| f.path < prefix);
        let len = files[start..].iter().take_while(|f| f.path.starts_with(&prefix)).count();
        &files[start..start + len]
    }

    /// Assembles the verified parts into the bundle; every signed part must be present.
    pub fn finish(self, parts: Vec<VerifiedPart>, limits: &Limits) -> Result<VerifiedBundle, VerifyError> {
        let mut by_name: BTreeMap<String, Vec<(String, Bytes)>> = parts.into_iter().map(|p| (p.name, p.files)).collect();
        let mut files = Vec::new();
        for profile in &self.statement.predicate.profiles {
            let part = by_name.remove(&profile.name).ok_or_else(|| VerifyError::MissingPart { part: profile.name.clone() })?;
            files.extend(part);
        }
        let names = self.statement.predicate.profiles.iter().map(|p| p.name.clone());
        // Every signed file is here with its signed hash, and step 6 computed the digest
        // of that list: it is the bundle digest of these files.
        let bundle = Bundle::verified(names, files, self.digest, limits)?;
        Ok(VerifiedBundle { envelope: self, bundle })
    }
}

/// The files of one part, checked against the signed list.
#[derive(Debug, Clone)]
pub struct VerifiedPart {
    name: String,
    files: Vec<(String, Bytes)>,
}

impl VerifiedBundle {
    pub fn envelope(&self) -> &VerifiedEnvelope {
        &self.envelope
    }

    pub fn predicate(&self) -> &Predicate {
        self.envelope.predicate()
    }

    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }
}
