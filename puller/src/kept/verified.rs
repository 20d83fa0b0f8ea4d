//! The record of the envelope last verified and applied, which lets an unchanged run skip
//! verifying it again (spec section 8, its last paragraph).
//!
//! Steps 2, 4, 5 and 6 of spec section 8 are a pure function of the envelope's bytes and
//! the keyring that checks its signatures (the one step 3 leaves, after the store's
//! keyring chain); for a large bundle they are most of an unchanged run's CPU. The state keeps
//! the SHA-256 of those bytes, a fingerprint of that keyring and what steps 7-10, the
//! active window (spec 5.6) and the report need of the statement. A run whose envelope hashes the same under a keyring of
//! the same fingerprint takes that record instead of verifying again, then runs steps 7-10
//! on it against today's floor and clock, so rollback, expiry and clock checks mean what
//! they meant. Any other run verifies in full, and a run that fetches content (an apply, a
//! drift check) always does, since it needs the statement's file list.
//!
//! The record is no security boundary against whoever can write the state Secret: they
//! could set the floor, or the claims recorded here (which can hide an expiry), though not
//! a keyring (`trusted`). What the record guarantees is narrower: bytes
//! whose hash differs from the recorded one are verified in full, so a record cannot lend
//! its verdict to an envelope signed differently. This module fetches nothing.

use airlock_bundle::report::{BundleSeen, ProfileNotes};
use airlock_bundle::statement::ActiveWindow;
use airlock_bundle::verify::check_claims;
use airlock_bundle::{Digest, Limits};
use airlock_bundle::{Expectation, Keyring, SyncMode, VerifiedEnvelope, VerifyError};
use serde::{Deserialize, Serialize};

/// What a full verification of one envelope established, kept in the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verified {
    /// SHA-256 of the envelope's exact bytes.
    pub envelope: Digest,
    /// [`fingerprint`] of the keyring that checked its signatures.
    pub keyring: Digest,
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
    /// How the envelope was read, when through an OCI manifest: with it, a run whose store
    /// says that manifest is still the newest skips reading the envelope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ReadThrough>,
}

/// The OCI manifest an envelope was read through, and the keyring it was verified under
/// before the store's keyring chain (step 3): the same manifest names the same envelope
/// and chain, which the same keyring follows to the same result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadThrough {
    pub manifest: Digest,
    /// [`fingerprint`] of the keyring given to step 3.
    pub trusted: Digest,
}

/// What a record holds besides the claims, in the fingerprint: a record made before it
/// held the window, the notes and the reloader flag must not stand in for a verification that reads them.
const RECORD_HOLDS: &str = "activeWindow profiles reloader";

/// What makes a signature check come out the same: the keyring's version (step 6 compares
/// it with `keyringVersion`), threshold and keys, all in its canonical JSON. The release
/// and what a record holds are in it too, so one whose verification or record changed
/// checks again what an older one passed.
pub fn fingerprint(keyring: &Keyring) -> Digest {
    let release = concat!("airlock-puller ", env!("CARGO_PKG_VERSION"), "\n");
    Digest::of(&[release.as_bytes(), RECORD_HOLDS.as_bytes(), b"\n", &keyring.to_json()].concat())
}

impl Verified {
    /// The record of `verified`, whose envelope bytes hash to `envelope`.
    pub fn of(envelope: Digest, verified: &VerifiedEnvelope) -> Verified {
        let p = verified.predicate();
        Verified {
            envelope,
            keyring: fingerprint(verified.keyring()),
            cluster: p.cluster.clone(),
            seen: BundleSeen::of(verified),
            drift_detection: p.profiles.iter().any(|p| p.sync_mode == SyncMode::ContinuousWithDriftDetection),
            reloader: p.profiles.iter().any(|p| p.reloader),
            active_window: p.active_window.clone(),
            profiles: ProfileNotes::of(p),
            read: None,
        }
    }

    /// This record, noting that the envelope was read through the OCI manifest `manifest`
    /// (none for Git) and verified starting from the keyring `trusted`.
    pub fn read_through(self, manifest: Option<Digest>, trusted: &Keyring) -> Verified {
        Verified { read: manifest.map(|manifest| ReadThrough { manifest, trusted: fingerprint(trusted) }), ..self }
    }

    /// The manifest to ask the store about: the one this record's envelope was read
    /// through, when verification would start from the same keyring `trusted` again.
    pub fn unchanged_manifest(&self, trusted: &Keyring) -> Option<Digest> {
        self.read.as_ref().filter(|r| r.trusted == fingerprint(trusted)).map(|r| r.manifest)
    }

    /// Steps 7-10 on this record, standing in for a full verification of an envelope
    /// hashing to `envelope` under `keyring` (the keyring after step 3). `None` when the
    /// record does not stand in: other bytes, another keyring, or a bundle that is not the
    /// one applied (verifying in full then finds it new, or refuses it).
    pub fn recheck(
        &self,
        envelope: Digest,
        keyring: &Keyring,
        expect: &Expectation<'_>,
        limits: &Limits,
    ) -> Option<Result<Verified, VerifyError>> {
        if envelope != self.envelope || fingerprint(keyring) != self.keyring {
            return None;
        }
        self.recheck_claims(expect, limits)
    }

    /// Steps 7-10 on this record alone, for a store that says the manifest the envelope
    /// was read through is unchanged ([`Verified::unchanged_manifest`]); `None` when the
    /// bundle is not the one applied.
    pub fn recheck_claims(&self, expect: &Expectation<'_>, limits: &Limits) -> Option<Result<Verified, VerifyError>> {
        let claims = self.seen.claims(&self.cluster);
        match check_claims(&claims, expect, limits) {
            Ok(true) => Some(Ok(self.clone())),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::Floor;
    use airlock_bundle::testkit::Fixture;
    use airlock_bundle::verify::verify_envelope;
    use jiff::{SignedDuration, Timestamp};

    /// Version 1 of the fixture bundle: its envelope bytes, the record of verifying them
    /// and the floor once it is applied.
    fn recorded() -> (Fixture, Vec<u8>, Verified, Floor) {
        let fixture = Fixture::new(1);
        let signed = fixture.signed(1, Fixture::files());
        let verified = verify_envelope(&signed.envelope, None, &fixture.expect(&Floor::default()), &Limits::SPEC).unwrap();
        let record = Verified::of(Digest::of(&signed.envelope), &verified);
        let floor = Floor { applied: Some((1, record.seen.digest)), highest_issued_at: Some(record.seen.issued_at) };
        (fixture, signed.envelope, record, floor)
    }

    #[test]
    fn the_same_bytes_and_keyring_take_the_record_and_steps_7_to_10_still_run() {
        let (fixture, bytes, record, floor) = recorded();
        let expect = fixture.expect(&floor);
        let recheck = |expect: &Expectation<'_>| record.recheck(Digest::of(&bytes), &fixture.keyring, expect, &Limits::SPEC);
        assert_eq!(recheck(&expect), Some(Ok(record.clone())));
        let full = |expect: &Expectation<'_>| verify_envelope(&bytes, None, expect, &Limits::SPEC).map(|_| ()).unwrap_err();

        // Expired by the clock: refused exactly as a full verification refuses it.
        let late = Expectation { now: record.seen.expires + SignedDuration::from_secs(1), ..expect.clone() };
        let err = recheck(&late).unwrap().unwrap_err();
        assert!(matches!(err, VerifyError::Expired { .. }), "{err}");
        assert_eq!(err, full(&late));
        // Expired by the highest issuedAt accepted, with the clock reset to 1970.
        let reset_floor = Floor { highest_issued_at: Some(record.seen.expires), ..floor.clone() };
        let reset = Expectation { now: Timestamp::UNIX_EPOCH, floor: &reset_floor, ..expect.clone() };
        assert_eq!(recheck(&reset).unwrap().unwrap_err(), full(&reset));
        // A rollback below a newer floor, and a reused version with another digest.
        for floor in [
            Floor { applied: Some((2, record.seen.digest)), ..floor.clone() },
            Floor { applied: Some((1, Digest::of(b"other"))), ..floor.clone() },
        ] {
            let expect = fixture.expect(&floor);
            let err = recheck(&expect).unwrap().unwrap_err();
            assert!(matches!(err, VerifyError::Rollback { .. } | VerifyError::VersionReused { .. }), "{err}");
            assert_eq!(err, full(&expect));
        }
        // Issued in the future of a sane clock.
        let sane_floor = Floor { highest_issued_at: None, ..floor.clone() };
        let early = Expectation { now: record.seen.issued_at - SignedDuration::from_hours(1), ..fixture.expect(&sane_floor) };
        assert!(matches!(recheck(&early).unwrap().unwrap_err(), VerifyError::FromTheFuture { .. }));
        assert_eq!(recheck(&early).unwrap().unwrap_err(), full(&early));
    }

    #[test]
    fn other_bytes_another_keyring_or_a_bundle_not_applied_verify_in_full() {
        let (fixture, bytes, record, floor) = recorded();
        let expect = fixture.expect(&floor);
        let digest = Digest::of(&bytes);
        assert_eq!(record.recheck(Digest::of(b"other bytes"), &fixture.keyring, &expect, &Limits::SPEC), None);
        // Another key, or the same key at another version or threshold, is another check.
        let keys = fixture.keyring.keys().to_vec();
        let others =
            [Fixture::new(2).keyring, Keyring::new(2, 1, keys.clone(), &Limits::SPEC).unwrap(), Fixture::with_keys(&[1, 2], 1).keyring];
        for keyring in others {
            assert_ne!(fingerprint(&keyring), record.keyring);
            assert_eq!(record.recheck(digest, &keyring, &expect, &Limits::SPEC), None);
        }
        assert_eq!(fingerprint(&Keyring::new(1, 1, keys, &Limits::SPEC).unwrap()), record.keyring, "an equal keyring");
        // A floor below the recorded version: the bundle is new to this state.
        let below = Floor { applied: None, ..floor };
        assert_eq!(record.recheck(digest, &fixture.keyring, &fixture.expect(&below), &Limits::SPEC), None);
    }

    #[test]
    fn the_record_keeps_the_window_and_the_notes_a_run_reads_from_it() {
        use airlock_bundle::statement::{FieldNote, Support};
        use airlock_bundle::{PartSettings, Release, sign};
        let fixture = Fixture::new(1);
        let window = ActiveWindow { from: "0 20 * * 5".into(), to: "0 7 * * 1".into() };
        let release = Release { active_window: Some(window.clone()), ..fixture.release(1) };
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
}
