//! The publisher's side of the contract: describe a [`Bundle`] in a statement (spec 5) and
//! sign it into an envelope (spec 6).

use std::collections::HashMap;
use std::sync::Mutex;

use jiff::Timestamp;

use super::content::{Bundle, Part, bundle_digest};
use super::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use super::key::SigningKey;
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
    pub continue_on_error: bool,
    pub max_consecutive_failures: Option<u32>,
    pub drift_exclusions: Vec<DriftExclusion>,
    pub reloader: bool,
    pub checks: Checks,
    pub notes: Vec<FieldNote>,
    pub failure: Option<RenderFailure>,
    pub rendered: Option<Rendering>,
    /// The ServiceAccount every write of the part impersonates (spec 5.3).
    pub service_account: Option<ServiceAccountRef>,
}

impl Default for PartSettings {
    fn default() -> Self {
        PartSettings {
            sync_mode: SyncMode::Continuous,
            tier: DEFAULT_TIER,
            depends_on: Vec::new(),
            stop_matching_behavior: StopMatchingBehavior::WithdrawPolicies,
            force_conflicts: false,
            continue_on_error: false,
            max_consecutive_failures: None,
            drift_exclusions: Vec::new(),
            reloader: false,
            checks: Checks::default(),
            notes: Vec::new(),
            failure: None,
            rendered: None,
            service_account: None,
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
    /// The cluster's settings, as the statement carries them.
    pub settings: ClusterSettings,
    /// Makes the bundle the cluster's final one (spec 2.5.5).
    pub decommission: bool,
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
/// without an entry gets the Sveltos defaults. `parts` remembers the digests of parts
/// described before, so a part in many bundles has its tar written and hashed once.
pub fn statement(bundle: &Bundle, release: &Release, settings: &dyn Fn(&str) -> PartSettings, parts: &PartDigests) -> Statement {
    let mut profiles = Vec::new();
    let mut files = Vec::with_capacity(bundle.file_count());
    // Each file's path and digest, part by part, then in path order (`Bundle::files`).
    let mut listing = Vec::with_capacity(bundle.file_count());
    for (name, part) in bundle.parts() {
        let first = listing.len();
        for ((path, bytes), &digest) in part.files().zip(part.file_digests()) {
            listing.push((path, digest));
            let plaintext = part.plaintext(path).cloned();
            files.push(FileEntry { path: path.to_string(), size: bytes.len() as u64, sha256: digest.hex(), plaintext });
        }
        profiles.push(profile_entry(name, parts.digest(part, &listing[first..]), part.tar_size(), settings(name)));
    }
    listing.sort_by(|a, b| a.0.cmp(b.0));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Statement {
        statement_type: STATEMENT_TYPE.to_string(),
        subject: vec![Subject {
            name: release.cluster.to_string(),
            digest: SubjectDigest { sha256: bundle_digest(listing.iter().copied()).hex() },
        }],
        predicate_type: PREDICATE_TYPE.to_string(),
        predicate: Predicate {
            cluster: release.cluster.to_string(),
            version: release.version,
            issued_at: release.issued_at,
            expires: release.expires,
            keyring_version: release.keyring_version,
            settings: release.settings.clone(),
            decommission: release.decommission,
            profiles,
            files,
        },
    }
}

/// The entry of the part `name` with identity `digest` and tar size `size` (spec 5.3).
pub fn profile_entry(name: &str, digest: Digest, size: u64, s: PartSettings) -> ProfileEntry {
    ProfileEntry {
        name: name.to_string(),
        digest,
        size,
        sync_mode: s.sync_mode,
        tier: s.tier,
        depends_on: s.depends_on,
        stop_matching_behavior: s.stop_matching_behavior,
        force_conflicts: s.force_conflicts,
        continue_on_error: s.continue_on_error,
        max_consecutive_failures: s.max_consecutive_failures,
        drift_exclusions: s.drift_exclusions,
        reloader: s.reloader,
        checks: s.checks,
        notes: s.notes,
        failure: s.failure,
        rendered: s.rendered,
        service_account: s.service_account,
    }
}

/// Most parts [`PartDigests`] remembers; it forgets them all when full. A part takes about
/// 100 bytes, and a fleet's shared parts come back after one miss each.
const REMEMBERED_PARTS: usize = 1 << 16;

/// Canonical tar digests (spec 3.4) of parts already described, by the SHA-256 of their
/// file listing (spec 4's format): the same listing is the same files, hence the same tar
/// (spec 3.3). A part handed to many bundles remembers its own digest; this catches equal
/// parts built apart, such as a template that renders alike for thousands of clusters,
/// whose tar every bundle's statement would otherwise write and hash again. One may be
/// shared by threads describing bundles at once.
#[derive(Debug, Default)]
pub struct PartDigests(Mutex<HashMap<Digest, Digest>>);

impl PartDigests {
    /// The digest of `part`, whose files' paths and digests are `listing`.
    fn digest(&self, part: &Part, listing: &[(&str, Digest)]) -> Digest {
        part.tar_digest(|| self.by_listing(part, listing))
    }

    fn by_listing(&self, part: &Part, listing: &[(&str, Digest)]) -> Digest {
        let key = bundle_digest(listing.iter().copied());
        if let Some(known) = self.0.lock().expect("not poisoned").get(&key) {
            return *known;
        }
        // Outside the lock: another thread hashing the same new part meanwhile only
        // duplicates work, never changes the answer.
        let digest = Digest::of(&part.tar());
        let mut known = self.0.lock().expect("not poisoned");
        if known.len() >= REMEMBERED_PARTS {
            known.clear();
        }
        known.insert(key, digest);
        digest
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
    let statement = statement(&bundle, release, settings, &PartDigests::default());
    let envelope = envelope::sign(IN_TOTO_PAYLOAD_TYPE, &statement.to_json(), keys);
    SignedBundle { bundle, statement, envelope, keyring_chain }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Fixture;

    fn bundle(files: &[(&str, &str)]) -> Bundle {
        Fixture::bundle(files.iter().map(|(p, b)| (p.to_string(), b.as_bytes().to_vec())).collect())
    }

    fn describe(bundle: &Bundle, parts: &PartDigests) -> Statement {
        statement(bundle, &Fixture::new(1).release(1), &|_| PartSettings::default(), parts)
    }

    /// Every profile's digest is its tar's, and the subject is the bundle digest.
    fn assert_describes(statement: &Statement, bundle: &Bundle) {
        let digests: Vec<_> = bundle.parts().map(|(_, part)| Digest::of(&part.tar())).collect();
        assert_eq!(statement.predicate.profiles.iter().map(|p| p.digest).collect::<Vec<_>>(), digests);
        assert_eq!(statement.subject[0].digest.sha256, bundle.digest().hex());
    }

    #[test]
    fn a_shared_part_is_described_alike_from_memory() {
        let shared = ("ClusterProfile.base/ConfigMap.fleet.base.yaml", "kind: ConfigMap\n");
        let a = bundle(&[shared, ("ClusterProfile.own/ConfigMap.fleet.a.yaml", "a: 1\n")]);
        let b = bundle(&[shared, ("ClusterProfile.own/ConfigMap.fleet.a.yaml", "a: 2\n")]);
        let parts = PartDigests::default();
        for bundle in [&a, &b, &a] {
            let remembered = describe(bundle, &parts);
            assert_describes(&remembered, bundle);
            assert_eq!(remembered.to_json(), describe(bundle, &PartDigests::default()).to_json());
        }
        assert_eq!(parts.0.lock().unwrap().len(), 3, "base once, each `own` once");
    }

    #[test]
    fn the_same_files_in_another_part_are_another_part() {
        let parts = PartDigests::default();
        let a = bundle(&[("ClusterProfile.a/ConfigMap.fleet.x.yaml", "x: 1\n")]);
        let b = bundle(&[("ClusterProfile.b/ConfigMap.fleet.x.yaml", "x: 1\n")]);
        let (sa, sb) = (describe(&a, &parts), describe(&b, &parts));
        assert_describes(&sa, &a);
        assert_describes(&sb, &b);
        assert_ne!(sa.predicate.profiles[0].digest, sb.predicate.profiles[0].digest);
    }

    #[test]
    fn forgets_every_part_when_full_and_goes_on_describing() {
        let parts = PartDigests::default();
        parts.0.lock().unwrap().extend((0..REMEMBERED_PARTS as u32).map(|i| (Digest::of(&i.to_le_bytes()), Digest([0; 32]))));
        let a = bundle(&[("ClusterProfile.a/ConfigMap.fleet.x.yaml", "x: 1\n")]);
        assert_describes(&describe(&a, &parts), &a);
        assert_eq!(parts.0.lock().unwrap().len(), 1);
    }
}
