//! What a run found and did, as its report records it: the bundle it verified
//! ([`BundleSeen`]), the drift it found per part ([`Drift`]), the Helm releases of the
//! bundle it applied ([`ReleaseSeen`]) and what the publisher noted per part
//! ([`ProfileNotes`]). The report itself, its file and its parsing are `report`'s.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::Digest;
use crate::statement::{FieldNote, Predicate, RenderFailure, rfc3339};
use crate::verify::{Claims, VerifiedEnvelope};

/// The bundle a run verified, whether or not it was applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleSeen {
    pub version: u64,
    pub digest: Digest,
    #[serde(with = "rfc3339", default)]
    pub issued_at: Timestamp,
    #[serde(with = "rfc3339", default)]
    pub expires: Timestamp,
    #[serde(default)]
    pub keyring_version: u64,
    #[serde(default)]
    pub signers: Vec<String>,
}

impl BundleSeen {
    pub fn of(envelope: &VerifiedEnvelope) -> BundleSeen {
        let claims = envelope.claims();
        BundleSeen {
            version: claims.version,
            digest: claims.digest,
            issued_at: claims.issued_at,
            expires: claims.expires,
            keyring_version: envelope.keyring().version(),
            signers: envelope.signers().to_vec(),
        }
    }

    /// The claims of the bundle seen for `cluster` (the report names the cluster once, at
    /// its top), as steps 7-10 judge them: a record of a verified envelope can be judged
    /// again against a newer floor and clock without the envelope.
    pub fn claims<'a>(&self, cluster: &'a str) -> Claims<'a> {
        Claims {
            cluster,
            version: self.version,
            digest: self.digest,
            issued_at: self.issued_at,
            expires: self.expires,
            keyring_version: self.keyring_version,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// Objects found changed or deleted under ContinuousWithDriftDetection.
    pub found: u64,
    /// Of those, re-applied.
    pub corrected: u64,
    /// The same counts per part that had drift found, sorted by part name; absent when none
    /// had: a kept report may leave out its per-object list, not these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<PartDrift>,
}

/// The drift found in one part's objects in a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartDrift {
    /// The part name (spec 2.3).
    pub name: String,
    pub found: u64,
    pub corrected: u64,
}

impl Drift {
    /// Counts one drifted object of `part`, re-applied or not.
    pub fn count(&mut self, part: &str, corrected: bool) {
        let add = u64::from(corrected);
        self.found += 1;
        self.corrected += add;
        let i = match self.profiles.binary_search_by(|p| p.name.as_str().cmp(part)) {
            Ok(i) => i,
            Err(i) => {
                self.profiles.insert(i, PartDrift { name: part.to_string(), found: 0, corrected: 0 });
                i
            }
        };
        self.profiles[i].found += 1;
        self.profiles[i].corrected += add;
    }
}

/// What a run did to a Helm release (spec 2.5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseOperation {
    Install,
    Upgrade,
    /// Nothing of the release changed since it was last applied.
    None,
}

/// One Helm release of the bundle a run applied: which chart, from where, and what the
/// run did to it, from its objects' release labels and chart annotations (spec 2.5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseSeen {
    /// The part name (spec 2.3).
    pub profile: String,
    pub name: String,
    pub namespace: String,
    pub chart_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// The chart's repository as the profile names it (`repositoryURL`).
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    pub operation: ReleaseOperation,
}

/// What the publisher told the site about one part of the bundle verified (spec 5.9):
/// the fields it did not honour and a render that failed, as signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileNotes {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<FieldNote>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<RenderFailure>,
}

impl ProfileNotes {
    /// One entry per part of `predicate` that carries notes or a failure.
    pub fn of(predicate: &Predicate) -> Vec<ProfileNotes> {
        predicate
            .profiles
            .iter()
            .filter(|p| !p.notes.is_empty() || p.failure.is_some())
            .map(|p| ProfileNotes { name: p.name.clone(), notes: p.notes.clone(), failure: p.failure.clone() })
            .collect()
    }
}
