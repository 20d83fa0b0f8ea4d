//! Fetching this cluster's bundle and verifying it (spec section 8) with what the state
//! remembers: the floor, and the keyring `trusted` derived from the file and the kept chain.
//!
//! An unchanged bundle is not fetched again, except when a profile asks for drift
//! detection: then the content is fetched and verified once more in full. That costs a
//! store round trip per run for those clusters only, but the alternative, keeping the last
//! bundle's manifests in the state Secret, cannot hold a bundle over the API server's
//! 1 MiB object limit, and content re-fetched is content re-verified. The envelope of the
//! bundle applied is not verified again while its bytes and keyring stay the same: the
//! state's record of that verification stands in for it (`verified`), and when the store
//! says the manifest it came through is still the newest (a registry's `304`), the envelope
//! is not even read: an unchanged run costs a registry one request. This module decides
//! nothing about applying.
//!
//! Store credentials (registry logins in `$DOCKER_CONFIG`, Git logins in the
//! `--git-credentials` file) are read when the store is opened, once per run and never kept
//! across runs, so credentials the publisher renewed (spec 2.6) are used from the first
//! run that sees them.

use std::path::{Path, PathBuf};

use airlock_bundle::age::Identity;
use airlock_bundle::{ClusterId, Digest};
use airlock_bundle::{Expectation, Floor, VerifiedBundle};
use airlock_store::{
    self as store, Fetch, FetchError, GitCredentials, GitCredentialsError, GitStore, RegistryCredentials, Store, StoreError, StoreRef,
};
use jiff::{SignedDuration, Timestamp};

use crate::config::{Source, read_capped};
use crate::kept::verified::Verified;
use crate::trusted::Trusted;

/// Renewed credentials carry their expiry in this file beside `config.json` (spec 2.6).
const EXPIRES_AT_FILE: &str = "expires-at";
/// An RFC 3339 time is at most 35 bytes; anything much larger is the wrong file.
const EXPIRES_AT_BYTES: u64 = 256;
/// A git-credential-store file holds a line or a few; anything much larger is the wrong file.
const GIT_CREDENTIALS_BYTES: u64 = 64 * 1024;
/// The publisher's default `--renew-before`: renewed credentials this close to expiring
/// mean renewal has stopped reaching this cluster.
const RENEWAL_WINDOW: SignedDuration = SignedDuration::from_hours(7 * 24);

/// Why no verified bundle came out of the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The store cannot be opened or listed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store failed to hand over the bundle, or verification refused it (boxed: a
    /// verification error is large, and every stage returns this one).
    #[error(transparent)]
    Fetch(Box<FetchError>),
    /// The `--git-credentials` file cannot be read.
    #[error("--git-credentials: {message}")]
    GitCredentialsFile { message: String },
    #[error("--git-credentials {path}: {source}")]
    GitCredentials { path: PathBuf, source: GitCredentialsError },
    /// The bundle was replaced between two reads of one run.
    #[error("{store}: the bundle for {cluster} changed while it was being read; the next run retries")]
    Changed { store: String, cluster: ClusterId },
}

impl From<FetchError> for SourceError {
    fn from(e: FetchError) -> SourceError {
        SourceError::Fetch(Box::new(e))
    }
}

impl SourceError {
    /// Whether verification refused the bundle: the same bundle is refused again.
    pub fn is_rejection(&self) -> bool {
        matches!(self, SourceError::Fetch(e) if matches!(**e, FetchError::Rejected { .. }))
    }
}

/// Opens the store. Registry credentials come from Docker's `config.json`
/// (`$DOCKER_CONFIG`), Git ones from the `--git-credentials` file; a pod gets either by
/// mounting a Secret.
pub async fn open(source: &Source) -> Result<Box<dyn Store>, SourceError> {
    match (&source.store, &source.git_credentials) {
        (StoreRef::Git { url, branch }, Some(path)) => {
            warn_of_expiry(&path.with_file_name(EXPIRES_AT_FILE), Timestamp::now());
            let credentials = read_git_credentials(path, url)?;
            Ok(Box::new(GitStore::open(url, branch).and_then(|s| s.with_credentials(credentials))?))
        }
        (reference, _) => {
            if let (StoreRef::OciRegistry { .. }, Some(dir)) = (reference, std::env::var_os("DOCKER_CONFIG")) {
                warn_of_expiry(&Path::new(&dir).join(EXPIRES_AT_FILE), Timestamp::now());
            }
            Ok(store::open(reference, &RegistryCredentials::default()).await?)
        }
    }
}

/// The credentials `path` holds for the Git server of `url`.
fn read_git_credentials(path: &Path, url: &str) -> Result<GitCredentials, SourceError> {
    let text = read_capped(path, GIT_CREDENTIALS_BYTES).map_err(|e| SourceError::GitCredentialsFile { message: format!("{e:#}") })?;
    GitCredentials::from_store_text(&text, url).map_err(|source| SourceError::GitCredentials { path: path.to_path_buf(), source })
}

/// Logs a warning when renewed credentials say they expire soon or have expired. Long-lived
/// credentials have no such file, and say nothing.
fn warn_of_expiry(path: &Path, now: Timestamp) {
    if !path.exists() {
        return;
    }
    let notice = match read_capped(path, EXPIRES_AT_BYTES) {
        Ok(text) => expiry_notice(&text, now),
        Err(e) => Some(format!("{e:#}")),
    };
    if let Some(notice) = notice {
        tracing::warn!(path = %path.display(), "{notice}");
    }
}

/// What to say about credentials expiring at the time in `text`, if anything.
fn expiry_notice(text: &[u8], now: Timestamp) -> Option<String> {
    let parsed = std::str::from_utf8(text).ok().and_then(|t| t.trim().parse::<Timestamp>().ok());
    let Some(expires) = parsed else {
        return Some("not an RFC 3339 time: cannot tell when the store credentials expire".into());
    };
    let left = expires.duration_since(now);
    if left <= SignedDuration::ZERO {
        Some(format!("the store credentials expired at {expires}; renewed ones have not reached this cluster"))
    } else if left < RENEWAL_WINDOW {
        let hours = left.as_secs() / 3_600;
        Some(format!("the store credentials expire at {expires}, in {hours}h; renewed ones should have reached this cluster by now"))
    } else {
        None
    }
}

/// What a fetch found.
#[derive(Debug)]
pub enum Found {
    /// The bundle applied last; no content was fetched.
    Applied(Verified),
    /// A new bundle verified in full, and the record to keep once it is applied.
    New(Box<VerifiedBundle>, Verified),
}

/// Fetches and verifies the newest bundle for `cluster`, always in full. When the store
/// says the manifest `recorded` (the state's record of the one applied) was read through is
/// still its newest, the bytes the record kept of it are verified instead of read again.
/// A new bundle's encrypted files are decrypted with `open`'s identities (step 14); with
/// `None` they are left encrypted.
pub async fn fetch(
    store: &dyn Store,
    cluster: &ClusterId,
    trusted: &Trusted,
    floor: &Floor,
    recorded: Option<&Verified>,
    open: Option<&[Identity]>,
) -> Result<Found, SourceError> {
    let limits = &trusted.limits;
    let expect = Expectation { cluster, keyring: &trusted.keyring, floor, now: Timestamp::now() };
    let rejected = |source| FetchError::Rejected { store: store.describe(), cluster: cluster.to_string(), source };
    // spec 8, its last paragraph: the store says the manifest read last is the newest still.
    let fetched = match recorded.and_then(|r| r.kept_read(&store.describe())) {
        Some((manifest, kept)) => match store::fetch_envelope_unless(store, cluster, &manifest, limits).await? {
            Some(fetched) => fetched,
            None => {
                tracing::debug!(%manifest, "the store's manifest is the one read last: verifying the bytes kept of it");
                kept
            }
        },
        None => store::fetch_envelope(store, cluster, limits).await?,
    };
    let envelope = Digest::of(&fetched.envelope);
    let record = |verified| Verified::of(envelope, verified).read_through(&fetched);
    Ok(match store::verify_fetched(store, &fetched, &expect, limits).await? {
        Fetch::AlreadyApplied(verified) => Found::Applied(record(&verified)),
        Fetch::New(bundle) => {
            let record = record(bundle.envelope());
            let bundle = match open {
                Some(identities) => bundle.decrypt(identities, limits).map_err(rejected)?,
                None => bundle,
            };
            Found::New(Box::new(bundle), record)
        }
    })
}

/// The content of the bundle `applied`, fetched and verified again in full. The floor's
/// applied version is left out so verification does not stop at "already applied"; the
/// result must then be that very bundle, or the store changed in between.
pub async fn fetch_again(
    store: &dyn Store,
    cluster: &ClusterId,
    trusted: &Trusted,
    floor: &Floor,
    applied: &Verified,
    open: Option<&[Identity]>,
) -> Result<(VerifiedBundle, Verified), SourceError> {
    let open_floor = Floor { applied: None, ..floor.clone() };
    match fetch(store, cluster, trusted, &open_floor, None, open).await? {
        Found::New(bundle, record) if (record.seen.version, record.seen.digest) == (applied.seen.version, applied.seen.digest) => {
            Ok((*bundle, record))
        }
        _ => Err(SourceError::Changed { store: store.describe(), cluster: cluster.clone() }),
    }
}

/// The newest bundle's content, verified in full, and whether it is new (not the one
/// `floor` says is applied): for runs that look at the content whatever the state says.
pub async fn fetch_content(
    store: &dyn Store,
    cluster: &ClusterId,
    trusted: &Trusted,
    floor: &Floor,
    open: Option<&[Identity]>,
) -> Result<(VerifiedBundle, bool), SourceError> {
    Ok(match fetch(store, cluster, trusted, floor, None, open).await? {
        Found::New(bundle, _) => (*bundle, true),
        Found::Applied(applied) => (fetch_again(store, cluster, trusted, floor, &applied, open).await?.0, false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::testkit::Fixture;
    use airlock_bundle::{Keyring, Limits};

    fn trusting(keyring: &Keyring) -> Trusted {
        Trusted::derive(keyring, None, std::time::Duration::from_secs(90 * 86_400)).expect("no state, nothing to fall below")
    }

    fn keyring(version: u64, seed: u8) -> Keyring {
        Keyring::new(version, 1, vec![airlock_bundle::SigningKey::from_seed([seed; 32]).public()], &Limits::SPEC).unwrap()
    }

    #[test]
    fn warns_of_credentials_expiring_within_the_renewal_window() {
        let now: Timestamp = "2031-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(expiry_notice(b"2031-02-01T00:00:00Z\n", now), None);
        let soon = expiry_notice(b"2031-01-03T00:00:00Z", now).expect("a warning");
        assert!(soon.contains("expire at 2031-01-03T00:00:00Z, in 48h"), "{soon}");
        let expired = expiry_notice(b"2030-12-31T00:00:00Z", now).expect("a warning");
        assert!(expired.contains("expired at 2030-12-31T00:00:00Z"), "{expired}");
        for bad in [&b"tomorrow"[..], b"\xff"] {
            assert!(expiry_notice(bad, now).expect("a warning").contains("not an RFC 3339 time"));
        }
    }

    #[test]
    fn reads_git_credentials_for_the_store_host_naming_the_file_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("git-credentials");
        std::fs::write(&path, "http://edge-1:s3cret@127.0.0.1:8418\n").unwrap();
        let found = read_git_credentials(&path, "http://127.0.0.1:8418/fleet.git").unwrap();
        assert_eq!(found, GitCredentials::new("edge-1", "s3cret").unwrap());
        let err = read_git_credentials(&path, "http://127.0.0.1:9999/fleet.git").unwrap_err();
        let want = format!("--git-credentials {}: no line for http://127.0.0.1:9999", path.display());
        assert_eq!(err.to_string(), want);
        let missing = read_git_credentials(&dir.path().join("none"), "http://h/r.git").unwrap_err();
        let missing = missing.to_string();
        assert!(missing.starts_with("--git-credentials: cannot open") && missing.contains("none"), "{missing:?}");
    }

    /// Bundles signed now by `fixture`'s keys: fixture bundles are issued in the past and
    /// would be expired now.
    fn signer(fixture: &Fixture) -> impl Fn(u64, Vec<(String, Vec<u8>)>) -> airlock_bundle::SignedBundle + '_ {
        let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
        move |version, files| {
            let release =
                airlock_bundle::Release { issued_at: now, expires: now + SignedDuration::from_hours(1), ..fixture.release(version) };
            let settings = |_: &str| airlock_bundle::PartSettings::default();
            airlock_bundle::sign::sign(Fixture::bundle(files), &release, &settings, &fixture.keys, None)
        }
    }

    async fn layout_store(dir: &tempfile::TempDir) -> Box<dyn Store> {
        open(&Source { store: StoreRef::OciLayout(dir.path().to_path_buf()), git_credentials: None }).await.unwrap()
    }

    /// Version 1 published into a layout in `dir` and fetched once: the record of it.
    async fn first_fetch(dir: &tempfile::TempDir) -> (Fixture, Box<dyn Store>, Verified) {
        let fixture = Fixture::new(1);
        let store = layout_store(dir).await;
        store.publish(&[signer(&fixture)(1, Fixture::files())], &Default::default()).await.unwrap();
        let Found::New(_, record) =
            fetch(&*store, &fixture.cluster, &trusting(&fixture.keyring), &Floor::default(), None, None).await.unwrap()
        else {
            panic!("a first fetch is new")
        };
        (fixture, store, record)
    }

    #[tokio::test]
    async fn fetches_an_applied_bundle_again_only_if_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let fixture = Fixture::new(1);
        let store = layout_store(&dir).await;
        let signed = signer(&fixture);
        store.publish(&[signed(1, Fixture::files())], &Default::default()).await.unwrap();
        let Found::New(first, record) =
            fetch(&*store, &fixture.cluster, &trusting(&fixture.keyring), &Floor::default(), None, None).await.unwrap()
        else {
            panic!("a first fetch is new")
        };
        assert_eq!((record.seen.version, record.seen.digest), (1, first.envelope().digest()));
        let floor = Floor { applied: Some((1, record.seen.digest)), highest_issued_at: Some(record.seen.issued_at), keyring_version: None };
        let Found::Applied(applied) = fetch(&*store, &fixture.cluster, &trusting(&fixture.keyring), &floor, None, None).await.unwrap()
        else {
            panic!("same version and digest is already applied")
        };
        assert_eq!(applied, record, "verified in full, it makes the same record");
        let (again, _) = fetch_again(&*store, &fixture.cluster, &trusting(&fixture.keyring), &floor, &applied, None).await.unwrap();
        assert_eq!(again.bundle().digest(), first.bundle().digest());
        let mut files = Fixture::files();
        files[0].1.extend_from_slice(b"  extra: \"1\"\n");
        store.publish(&[signed(2, files)], &Default::default()).await.unwrap();
        let err = fetch_again(&*store, &fixture.cluster, &trusting(&fixture.keyring), &floor, &applied, None).await.unwrap_err();
        assert!(matches!(err, SourceError::Changed { .. }) && err.to_string().contains("changed while it was being read"), "{err:?}");
    }

    /// Nothing the record says is taken: an edited record (another signer, an expiry a
    /// year away) changes nothing of what a run finds, which comes from the signed bytes.
    #[tokio::test]
    async fn a_record_is_never_taken_for_a_verification() {
        let dir = tempfile::tempdir().unwrap();
        let (fixture, store, record) = first_fetch(&dir).await;
        let floor = Floor { applied: Some((1, record.seen.digest)), highest_issued_at: Some(record.seen.issued_at), keyring_version: None };
        let mut edited = record.clone();
        edited.seen.signers = vec!["from-the-record".into()];
        edited.seen.expires = Timestamp::now() + SignedDuration::from_hours(24 * 365);
        edited.drift_detection = !record.drift_detection;
        let Found::Applied(applied) =
            fetch(&*store, &fixture.cluster, &trusting(&fixture.keyring), &floor, Some(&edited), None).await.unwrap()
        else {
            panic!("unchanged")
        };
        assert_eq!(applied, record, "what the signed bytes say");
        // Expired by the clock, the bundle is refused however late the record says it expires.
        let late = Floor { highest_issued_at: Some(record.seen.expires + SignedDuration::from_secs(1)), ..floor.clone() };
        let err = fetch(&*store, &fixture.cluster, &trusting(&fixture.keyring), &late, Some(&edited), None).await.unwrap_err();
        assert!(err.is_rejection() && err.to_string().contains("expired"), "{err:?}");
    }

    /// A store that says the manifest is unchanged is not read further: the bytes the
    /// record kept of it are verified instead, under today's keyring, floor and clock. Kept
    /// bytes that are not that manifest's are not used.
    #[tokio::test]
    async fn an_unchanged_manifest_is_verified_from_the_bytes_kept_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let (fixture, store, record) = first_fetch(&dir).await;
        let kept = record.read.as_ref().and_then(|r| r.bytes.clone()).expect("read through the layout's manifest, and kept");
        let floor = Floor { applied: Some((1, record.seen.digest)), highest_issued_at: Some(record.seen.issued_at), keyring_version: None };
        // The envelope's blob is named by its digest; gone, only the kept bytes can answer.
        std::fs::remove_file(dir.path().join(format!("blobs/sha256/{}", record.envelope.hex()))).unwrap();
        let Found::Applied(applied) =
            fetch(&*store, &fixture.cluster, &trusting(&fixture.keyring), &floor, Some(&record), None).await.unwrap()
        else {
            panic!("unchanged")
        };
        assert_eq!(applied, record);
        // Another trusted keyring verifies the kept bytes and refuses them.
        let err = fetch(&*store, &fixture.cluster, &trusting(&keyring(2, 2)), &floor, Some(&record), None).await.unwrap_err();
        assert!(err.is_rejection() && err.to_string().contains("signatures"), "{err:?}");
        // Kept bytes edited: not that manifest's, so the store is read, and lacks the blob.
        let mut edited = record.clone();
        let mut bytes = kept;
        bytes.envelope.push(b' ');
        edited.read.as_mut().unwrap().bytes = Some(bytes);
        let err = fetch(&*store, &fixture.cluster, &trusting(&fixture.keyring), &floor, Some(&edited), None).await.unwrap_err();
        assert!(matches!(&err, SourceError::Fetch(e) if matches!(**e, FetchError::Store(StoreError::Malformed { .. }))), "{err:?}");
    }
}
