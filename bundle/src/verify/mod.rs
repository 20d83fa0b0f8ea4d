//! Verification of a received bundle, in the order of spec section 8.
//!
//! [`verify_envelope`] runs steps 1-10 on the envelope alone, so a puller learns whether it
//! needs any content before it fetches a byte of it. [`VerifiedEnvelope::verify_part`] runs
//! steps 11-13 on each part, and [`VerifiedEnvelope::finish`] is the only way to obtain a
//! [`VerifiedBundle`], which is what the puller applies. Step 6 is in `consistency` (its optional settings in `settings`, the definitions to evaluate in `evaluations`), steps
//! 7-10 in `claims`, steps 11-13 in `part`; this module runs them in order.

mod claims;
mod consistency;
mod error;
mod evaluations;
mod expectation;
mod part;
mod sealing;
mod settings;

use std::collections::BTreeMap;

use bytes::Bytes;

pub use claims::{Claims, check_claims};
pub use error::VerifyError;
pub use evaluations::{MAX_EVALUATIONS, MAX_SELECTORS};
pub use expectation::{Expectation, Floor};
pub use part::Transport;
pub use settings::{MAX_DRIFT_PATHS, is_json_pointer, runnable};

use crate::age::Identity;
use crate::content::Bundle;
use crate::digest::Digest;
use crate::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use crate::keyring::Keyring;
use crate::limits::Limits;
use crate::statement::{FileEntry, PREDICATE_TYPE, Predicate, STATEMENT_TYPE, Statement};

/// An envelope that passed steps 1-10.
#[derive(Debug, Clone)]
pub struct VerifiedEnvelope {
    statement: Statement,
    keyring: Keyring,
    signers: Vec<String>,
    digest: Digest,
    already_applied: bool,
    adopted: Vec<Vec<u8>>,
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
    let (keyring, adopted) = follow_chain_adopting(expect.keyring, keyring_chain, limits)?;
    // spec 8.4
    let signers = keyring.check(&env).map_err(VerifyError::Signatures)?;
    // spec 8.5
    let statement: Statement = serde_json::from_slice(&env.payload).map_err(|e| VerifyError::Payload(e.to_string()))?;
    if statement.statement_type != STATEMENT_TYPE || statement.predicate_type != PREDICATE_TYPE {
        return Err(VerifyError::Payload(format!("_type {:?} / predicateType {:?}", statement.statement_type, statement.predicate_type)));
    }
    // spec 8.6
    let digest = consistency::check_consistency(&statement, limits)?;
    let p = &statement.predicate;
    if p.keyring_version != keyring.version() {
        return Err(VerifyError::KeyringVersion { signed: p.keyring_version, actual: keyring.version() });
    }
    // spec 8.7: the subject's half; the predicate's is in `check_claims`, with the same error.
    let own = expect.cluster.to_string();
    if statement.subject[0].name != own {
        return Err(VerifyError::WrongCluster { field: "subject[0].name", expected: own, actual: statement.subject[0].name.clone() });
    }
    let mut verified = VerifiedEnvelope { statement, keyring, signers, digest, already_applied: false, adopted };
    verified.already_applied = check_claims(&verified.claims(), expect, limits)?;
    Ok(verified)
}

/// Step 3: the keyring to check signatures with, `keyring` advanced by the store's chain.
pub fn follow_chain(keyring: &Keyring, chain: Option<&[u8]>, limits: &Limits) -> Result<Keyring, VerifyError> {
    follow_chain_adopting(keyring, chain, limits).map(|(keyring, _)| keyring)
}

/// [`follow_chain`], with the updates it adopted.
fn follow_chain_adopting(keyring: &Keyring, chain: Option<&[u8]>, limits: &Limits) -> Result<(Keyring, Vec<Vec<u8>>), VerifyError> {
    match chain {
        Some(chain) => keyring.follow_chain_adopting(chain, limits).map_err(VerifyError::KeyringChain),
        None => Ok((keyring.clone(), Vec::new())),
    }
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

    /// The keyring chain's updates that advanced the expected keyring to [`Self::keyring`],
    /// in order, as signed: what a puller keeps to derive that keyring again.
    pub fn adopted_updates(&self) -> &[Vec<u8>] {
        &self.adopted
    }

    /// Key ids of the distinct keys whose signatures counted.
    pub fn signers(&self) -> &[String] {
        &self.signers
    }

    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// What steps 7-10 judged: the statement's cluster, version, `issuedAt` and `expires`
    /// with the bundle digest step 6 computed.
    pub fn claims(&self) -> Claims<'_> {
        let p = &self.statement.predicate;
        Claims {
            cluster: &p.cluster,
            version: p.version,
            digest: self.digest,
            issued_at: p.issued_at,
            expires: p.expires,
            keyring_version: p.keyring_version,
        }
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

impl VerifiedPart {
    /// Its files, path and bytes, in path order.
    pub fn files(&self) -> impl Iterator<Item = (&str, &Bytes)> {
        self.files.iter().map(|(path, bytes)| (path.as_str(), bytes))
    }
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

    /// Step 14 (spec 2.7): the same bundle with every encrypted file replaced by its
    /// plaintext, decrypted with `identities` and checked against its signed digest. A
    /// bundle without encrypted files is returned as it is, whatever the identities.
    pub fn decrypt(self, identities: &[Identity], limits: &Limits) -> Result<VerifiedBundle, VerifyError> {
        if self.predicate().settings.recipients.is_none() {
            return Ok(self);
        }
        let files = sealing::decrypt(self.predicate(), self.bundle.shared_files(), identities, limits)?;
        let names = self.predicate().profiles.iter().map(|p| p.name.clone());
        let bundle = Bundle::verified(names, files, self.envelope.digest, limits)?;
        Ok(VerifiedBundle { envelope: self.envelope, bundle })
    }
}
