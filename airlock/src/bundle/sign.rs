//! The publisher's side of the contract: describe a [`Bundle`] in a statement (spec 5) and
//! sign it into an envelope (spec 6).

use jiff::Timestamp;

use super::content::Bundle;
use super::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use super::keyring::SigningKey;
use super::statement::*;
use crate::cluster::ClusterId;
use crate::digest::Digest;

/// How the puller treats one part's objects; everything of a profile entry but what is
/// computed from the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSettings {
    pub sync_mode: SyncMode,
    pub tier: u32,
    pub depends_on: Vec<String>,
    pub stop_matching_behavior: StopMatchingBehavior,
    pub force_conflicts: bool,
}

impl Default for PartSettings {
    fn default() -> Self {
        PartSettings {
            sync_mode: SyncMode::Continuous,
            tier: DEFAULT_TIER,
            depends_on: Vec::new(),
            stop_matching_behavior: StopMatchingBehavior::WithdrawPolicies,
            force_conflicts: false,
        }
    }
}

/// What a bundle is signed as, besides its files.
#[derive(Debug, Clone)]
pub struct Release {
    pub cluster: ClusterId,
    pub version: u64,
    pub issued_at: Timestamp,
    pub expires: Timestamp,
    pub keyring_version: u64,
    pub watch_namespaces: Option<Vec<String>>,
}

/// A bundle with its signed statement, ready for a store.
#[derive(Debug, Clone)]
pub struct SignedBundle {
    pub bundle: Bundle,
    pub statement: Statement,
    /// The envelope's exact bytes, as stored and as verified.
    pub envelope: Vec<u8>,
    /// A keyring chain (spec 7.3) to store beside the envelope.
    pub keyring_chain: Option<Vec<u8>>,
}

impl SignedBundle {
    pub fn cluster(&self) -> &str {
        &self.statement.predicate.cluster
    }

    pub fn version(&self) -> u64 {
        self.statement.predicate.version
    }

    pub fn digest(&self) -> Digest {
        self.bundle.digest()
    }
}

/// Describes `bundle` as a statement. `settings` gives each part's settings; a part
/// without an entry gets the Sveltos defaults.
pub fn statement(bundle: &Bundle, release: &Release, settings: &dyn Fn(&str) -> PartSettings) -> Statement {
    let profiles = bundle
        .parts()
        .map(|(name, part)| {
            let s = settings(name);
            ProfileEntry {
                name: name.to_string(),
                digest: Digest::of(&part.tar()),
                size: part.tar_size(),
                sync_mode: s.sync_mode,
                tier: s.tier,
                depends_on: s.depends_on,
                stop_matching_behavior: s.stop_matching_behavior,
                force_conflicts: s.force_conflicts,
            }
        })
        .collect();
    let files = bundle
        .files()
        .map(|(path, bytes)| FileEntry { path: path.to_string(), size: bytes.len() as u64, sha256: Digest::of(bytes).hex() })
        .collect();
    Statement {
        statement_type: STATEMENT_TYPE.to_string(),
        subject: vec![Subject {
            name: release.cluster.to_string(),
            digest: SubjectDigest { sha256: bundle.digest().hex() },
        }],
        predicate_type: PREDICATE_TYPE.to_string(),
        predicate: Predicate {
            cluster: release.cluster.to_string(),
            version: release.version,
            issued_at: release.issued_at,
            expires: release.expires,
            keyring_version: release.keyring_version,
            watch_namespaces: release.watch_namespaces.clone(),
            profiles,
            files,
        },
    }
}

/// Signs a bundle with every key (spec 6).
pub fn sign(
    bundle: Bundle,
    release: &Release,
    settings: &dyn Fn(&str) -> PartSettings,
    keys: &[SigningKey],
    keyring_chain: Option<Vec<u8>>,
) -> SignedBundle {
    let statement = statement(&bundle, release, settings);
    let envelope = envelope::sign(IN_TOTO_PAYLOAD_TYPE, &statement.to_json(), keys);
    SignedBundle { bundle, statement, envelope, keyring_chain }
}
