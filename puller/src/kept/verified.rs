//! The record of the bundle last verified and applied: what the report and the next run
//! need of its statement (spec section 8, its last paragraph).
//!
//! Nothing in the record is trusted: it is kept in the state Secret, which whoever can
//! write Secrets in the puller's namespace can edit. Every run verifies the envelope it
//! acts on in full, so the claims steps 7-10 judge (expiry, `issuedAt`, cluster, version)
//! and what the run reads of the statement (sync modes, window, notes) always come from
//! signed bytes. What the record saves is reading: for an envelope read through an OCI
//! manifest it keeps the manifest's, envelope's and chain's bytes, and when the store
//! says that manifest is still the newest, those bytes are verified instead of read
//! again, once they prove to be that manifest and what it names (`ReadBytes`). An edited
//! record can therefore at worst cost a read and a verification. This module fetches
//! nothing.

use airlock_bundle::Digest;
use airlock_bundle::report::{BundleSeen, ProfileNotes};
use airlock_bundle::statement::{ActiveWindow, Evaluation};
use airlock_bundle::{SyncMode, VerifiedEnvelope};
use airlock_store::{Fetched, ReadBytes};
use serde::{Deserialize, Serialize};

/// The most bytes of a read the record keeps: an unchanged run of a larger bundle reads its
/// envelope again rather than grow the state Secret, which the API server caps at 1 MiB.
const MAX_KEPT_BYTES: usize = 256 * 1024;

/// What a full verification of one envelope established, kept in the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verified {
    /// SHA-256 of the envelope's exact bytes.
    pub envelope: Digest,
    pub cluster: String,
    /// Version, bundle digest, `issuedAt`, `expires`, and who signed: what the report says.
    #[serde(flatten)]
    pub seen: BundleSeen,
    /// Whether a profile asks for drift detection, whose run fetches the content.
    pub drift_detection: bool,
    /// Whether a profile asks for the reloader, whose run fetches the content too.
    #[serde(default)]
    pub reloader: bool,
    /// When the bundle lets the cluster change; absent when always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_window: Option<ActiveWindow>,
    /// What the publisher noted about its parts, for the report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<ProfileNotes>,
    /// How the envelope was read, when through an OCI manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ReadThrough>,
    /// What the bundle asks its puller to evaluate (spec 5.14): taken from the envelope
    /// this run verified, never kept.
    #[serde(skip)]
    pub evaluations: Vec<Evaluation>,
}

/// The OCI manifest an envelope was read through and, when small enough, the bytes read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadThrough {
    pub manifest: Digest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<ReadBytes>,
}

impl Verified {
    /// The record of `verified`, whose envelope bytes hash to `envelope`.
    pub fn of(envelope: Digest, verified: &VerifiedEnvelope) -> Verified {
        let p = verified.predicate();
        Verified {
            envelope,
            cluster: p.cluster.clone(),
            seen: BundleSeen::of(verified),
            drift_detection: p.profiles.iter().any(|p| p.sync_mode == SyncMode::ContinuousWithDriftDetection),
            reloader: p.profiles.iter().any(|p| p.reloader),
            active_window: p.settings.active_window.clone(),
            profiles: ProfileNotes::of(p),
            read: None,
            evaluations: p.settings.evaluations.clone(),
        }
    }

    /// This record, noting how `fetched` was read: through which manifest, and its bytes
    /// when they fit.
    pub fn read_through(self, fetched: &Fetched) -> Verified {
        let read = fetched
            .manifest()
            .map(|manifest| ReadThrough { manifest, bytes: fetched.read_bytes().filter(|bytes| bytes.len() <= MAX_KEPT_BYTES) });
        Verified { read, ..self }
    }

    /// The manifest last read through, and what stands in for reading it again while the
    /// store's newest manifest is still that one: the kept bytes, when they prove to be
    /// that manifest and what it names. `None` when there is nothing to stand in.
    pub fn kept_read(&self, store: &str) -> Option<(Digest, Fetched)> {
        let read = self.read.as_ref()?;
        let kept = Fetched::from_read_bytes(store, read.bytes.as_ref()?, &read.manifest)?;
        Some((read.manifest, kept))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::testkit::Fixture;
    use airlock_bundle::verify::verify_envelope;
    use airlock_bundle::{Floor, Limits};

    /// Version 1 of the fixture bundle: its envelope bytes, the record of verifying them
    /// and the floor once it is applied.
    fn recorded() -> (Fixture, Vec<u8>, Verified, Floor) {
        let fixture = Fixture::new(1);
        let signed = fixture.signed(1, Fixture::files());
        let verified = verify_envelope(&signed.envelope, None, &fixture.expect(&Floor::default()), &Limits::SPEC).unwrap();
        let record = Verified::of(Digest::of(&signed.envelope), &verified);
        let floor = Floor { applied: Some((1, record.seen.digest)), highest_issued_at: Some(record.seen.issued_at), keyring_version: None };
        (fixture, signed.envelope, record, floor)
    }

    #[test]
    fn the_record_keeps_the_window_and_the_notes_a_run_reads_from_it() {
        use airlock_bundle::statement::{FieldNote, Support};
        use airlock_bundle::{PartSettings, Release, sign};
        let fixture = Fixture::new(1);
        let window = ActiveWindow { from: "0 20 * * 5".into(), to: "0 7 * * 1".into() };
        let release = Release {
            settings: airlock_bundle::ClusterSettings { active_window: Some(window.clone()), ..Default::default() },
            ..fixture.release(1)
        };
        let note = FieldNote { field: "spec.reloader".into(), support: Support::NotSupported, detail: "not done".into() };
        let settings = |_: &str| PartSettings { notes: vec![note.clone()], ..PartSettings::default() };
        let signed = sign::sign(Fixture::bundle(Fixture::files()), &release, &settings, &fixture.keys, None);
        let verified = verify_envelope(&signed.envelope, None, &fixture.expect(&Floor::default()), &Limits::SPEC).unwrap();
        let record = Verified::of(Digest::of(&signed.envelope), &verified);
        assert_eq!(record.active_window, Some(window));
        assert_eq!(record.profiles, ProfileNotes::of(verified.predicate()));
        assert_eq!(record.profiles.len(), 2);
        let back: Verified = serde_json::from_value(serde_json::to_value(&record).unwrap()).unwrap();
        assert_eq!(back, record);
        let (_, _, plain, _) = recorded();
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json.get("activeWindow").is_none() && json.get("profiles").is_none(), "left out when empty: {json}");
    }

    #[test]
    fn a_state_without_the_record_is_read() {
        use crate::kept::gz_secret::{decode, encode};
        use crate::kept::state::{State, tests::state};
        let json = serde_json::to_value(state()).unwrap();
        assert!(json.get("verified").is_none());
        let (_, _, record, _) = recorded();
        let with_record = State { verified: Some(Box::new(record.clone())), ..state() };
        let back: State = decode(&encode(&with_record)).unwrap();
        assert_eq!(back.verified.as_deref(), Some(&record));
        assert!(encode(&back).len() < 2048, "the state stays small");
    }

    #[test]
    fn a_record_of_an_earlier_release_is_read_and_keeps_no_bytes() {
        let (_, _, record, _) = recorded();
        let mut json = serde_json::to_value(&record).unwrap();
        json["keyring"] = serde_json::json!(Digest::of(b"fingerprint"));
        json["read"] = serde_json::json!({"manifest": Digest::of(b"manifest"), "trusted": Digest::of(b"keyring")});
        let back: Verified = serde_json::from_value(json).unwrap();
        assert_eq!(back.read, Some(ReadThrough { manifest: Digest::of(b"manifest"), bytes: None }));
        assert!(back.kept_read("store").is_none(), "nothing to stand in for a read");
    }
}
