//! The puller's side of a verification: which cluster it is, the keyring it trusts, and
//! what it remembers between runs. Verification reads these; it never changes them.

use jiff::Timestamp;

use crate::cluster::ClusterId;
use crate::digest::Digest;
use crate::keyring::Keyring;

/// What the puller remembers between runs that verification depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Floor {
    /// The last applied version and its bundle digest.
    pub applied: Option<(u64, Digest)>,
    /// The highest `issuedAt` ever accepted (spec 8.10).
    pub highest_issued_at: Option<Timestamp>,
    /// The version of the keyring that verified the applied bundle; `None` when not
    /// known, and the floor then holds whatever keyring verifies.
    pub keyring_version: Option<u64>,
}

impl Floor {
    /// Whether a bundle verified by keyring `version` starts from an empty floor (spec
    /// 7.4): the root rotated the keyring since the floor was set.
    pub fn renewed_by(&self, version: u64) -> bool {
        self.keyring_version.is_some_and(|v| version > v)
    }
}

/// The puller's side of a verification: who it is and what it remembers.
#[derive(Debug, Clone)]
pub struct Expectation<'a> {
    pub cluster: &'a ClusterId,
    pub keyring: &'a Keyring,
    pub floor: &'a Floor,
    pub now: Timestamp,
}
