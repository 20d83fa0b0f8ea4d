//! Comparing a cluster's next bundle with what the store holds: reading the store's
//! current envelope, and deciding whether the cluster needs a new version.
//!
//! The statement in the store is read without checking its signatures: it is the
//! publisher's own output, read back only for its version and content (spec 9.6), never to
//! decide what a cluster applies. An envelope the memo remembers (same digest, same
//! keyring chain) is not parsed again, nor read when the store names its blobs by digest:
//! an OCI manifest that names the remembered envelope and chain holds exactly them.

use airlock_bundle::statement::Statement;
use airlock_bundle::{ClusterId, Digest, Limits};
use airlock_store::{EnvelopeDigests, Store, StoreError};
use jiff::{SignedDuration, Timestamp};

use crate::publish::memo::{Outline, Stored};

/// Whether a cluster's new content needs a new version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Unchanged { version: u64 },
    Publish { version: u64, refresh: bool },
}

/// What the store holds for a cluster.
#[derive(Debug)]
pub enum Held {
    Nothing,
    /// The bundle the memo remembers seeing there, and the manifest the store names it by
    /// now, when it tells one.
    Remembered {
        manifest: Option<Digest>,
    },
    Bundle {
        statement: Box<Statement>,
        chain: Option<Vec<u8>>,
        envelope: Digest,
    },
}

/// Reads what the store holds for `cluster`. `remembered` is the bundle the memo saw
/// there last; when it is still there, its statement is not parsed again. The error is the
/// message of the cluster's failure.
pub async fn read_held(store: &dyn Store, cluster: &ClusterId, limits: &Limits, remembered: Option<&Stored>) -> Result<Held, String> {
    if let Some(r) = remembered {
        if let Some(manifest) = r.manifest {
            match store.manifest_digest(cluster, limits).await {
                Ok(Some(named)) if named == manifest => return Ok(Held::Remembered { manifest: Some(named) }),
                Ok(_) => {}
                Err(StoreError::NotFound { .. }) => return Ok(Held::Nothing),
                Err(e) => return Err(e.to_string()),
            }
        }
        match store.envelope_digests(cluster, limits).await {
            // Recognised from its manifest: the memo learns the manifest's digest, so the
            // next run needs the index alone (a bundle published by an earlier build).
            Ok(Some(d)) if d == (EnvelopeDigests { envelope: r.envelope, chain: r.chain }) => {
                let manifest = store.manifest_digest(cluster, limits).await.ok().flatten();
                return Ok(Held::Remembered { manifest });
            }
            // Something else is stored: read it below.
            Ok(_) => {}
            Err(StoreError::NotFound { .. }) => return Ok(Held::Nothing),
            Err(e) => return Err(e.to_string()),
        }
    }
    let fetched = match store.fetch_envelope(cluster, limits).await {
        Ok(f) => f,
        Err(StoreError::NotFound { .. }) => return Ok(Held::Nothing),
        Err(e) => return Err(e.to_string()),
    };
    let envelope = Digest::of(&fetched.envelope);
    let chain = fetched.keyring_chain.as_deref().map(Digest::of);
    if remembered.is_some_and(|r| r.envelope == envelope && r.chain == chain) {
        return Ok(Held::Remembered { manifest: None });
    }
    match fetched.unverified_statement() {
        Some(statement) if statement.predicate.cluster == cluster.to_string() => {
            Ok(Held::Bundle { statement: Box::new(statement), chain: fetched.keyring_chain, envelope })
        }
        _ => Err(format!("{}: the stored envelope is unreadable; cannot tell the current version", store.describe())),
    }
}

/// [`decide`] or [`decide_remembered`], as what the store holds calls for: `remembered`
/// is the bundle the memo saw there, which `Held::Remembered` says is still there.
pub fn decide_held(
    held: &Held,
    next: &Outline,
    remembered: Option<&Stored>,
    keyring_version: u64,
    next_chain: Option<&[u8]>,
    now: Timestamp,
    expires_in: SignedDuration,
) -> Decision {
    match (held, remembered) {
        (Held::Nothing, _) => decide(None, next, keyring_version, next_chain, now, expires_in),
        (Held::Bundle { statement, chain, .. }, _) => {
            decide(Some((statement, chain.as_deref())), next, keyring_version, next_chain, now, expires_in)
        }
        (Held::Remembered { .. }, Some(stored)) => decide_remembered(stored, keyring_version, next_chain.map(Digest::of), now, expires_in),
        (Held::Remembered { .. }, None) => unreachable!("only a remembered bundle is recognised"),
    }
}

/// Compares what would be signed (`next`, with the signer's keyring version and chain)
/// with the store's statement and keyring chain.
pub fn decide(
    current: Option<(&Statement, Option<&[u8]>)>,
    next: &Outline,
    keyring_version: u64,
    next_chain: Option<&[u8]>,
    now: Timestamp,
    expires_in: SignedDuration,
) -> Decision {
    let Some((cur, cur_chain)) = current else {
        return Decision::Publish { version: 1, refresh: false };
    };
    let a = &cur.predicate;
    let same = matches!(cur.subject.as_slice(), [s] if s.name == next.cluster && s.digest.sha256 == next.bundle.hex())
        && a.cluster == next.cluster
        && a.profiles == next.profiles
        && a.settings == next.settings
        && a.keyring_version == keyring_version
        && cur_chain == next_chain;
    keep_or_refresh(same, a.version, a.expires, now, expires_in)
}

/// [`decide`] for a bundle the memo remembers: its content is the outline's, so only the
/// keyring and the expiry are left to compare.
pub fn decide_remembered(
    stored: &Stored,
    keyring_version: u64,
    next_chain: Option<Digest>,
    now: Timestamp,
    expires_in: SignedDuration,
) -> Decision {
    let same = stored.keyring_version == keyring_version && stored.chain == next_chain;
    keep_or_refresh(same, stored.version, stored.expires, now, expires_in)
}

/// A bundle of the same content keeps its version until it passed half its validity.
fn keep_or_refresh(same: bool, version: u64, expires: Timestamp, now: Timestamp, expires_in: SignedDuration) -> Decision {
    if !same {
        return Decision::Publish { version: version + 1, refresh: false };
    }
    let half_life = SignedDuration::from_secs(expires_in.as_secs() / 2);
    if expires.duration_since(now) > half_life {
        Decision::Unchanged { version }
    } else {
        Decision::Publish { version: version + 1, refresh: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::ClusterSettings;
    use airlock_bundle::SignedBundle;
    use airlock_bundle::sign::PartDigests;
    use airlock_bundle::testkit::Fixture;
    use airlock_bundle::{Bundle, PartSettings, Release, sign};
    use airlock_store::{PublishMeta, StoreRef, open};

    fn statement(files: &[(&str, &str)], version: u64, issued: i64, expires_in: SignedDuration) -> Statement {
        let bundle = Bundle::new(
            ["ClusterProfile.web".to_string()],
            files.iter().map(|(p, b)| (p.to_string(), b.as_bytes().to_vec())),
            &Limits::SPEC,
        )
        .unwrap();
        let issued_at = Timestamp::from_second(issued).unwrap();
        let release = Release {
            cluster: "fleet/a".parse().unwrap(),
            version,
            issued_at,
            expires: issued_at.checked_add(expires_in).unwrap(),
            keyring_version: 1,
            settings: ClusterSettings::default(),
            decommission: false,
        };
        sign::statement(&bundle, &release, &|_| PartSettings::default(), &PartDigests::default())
    }

    fn outline(s: &Statement) -> Outline {
        Outline::of(s, 1, Vec::new(), Vec::new())
    }

    #[test]
    fn versions_follow_the_store_and_unchanged_content_keeps_its_version() {
        let day = SignedDuration::from_hours(24);
        let files = [("ClusterProfile.web/ConfigMap.a.b.yaml", "x: 1\n")];
        let next = statement(&files, 0, 1_000_000, 30 * day);
        let now = next.predicate.issued_at;
        assert_eq!(decide(None, &outline(&next), 1, None, now, 30 * day), Decision::Publish { version: 1, refresh: false });
        let cur = statement(&files, 7, 1_000_000 - 86_400, 30 * day);
        let unchanged = |next: &Statement, keyring: u64, chain: Option<&[u8]>| {
            decide(Some((&cur, None)), &outline(next), keyring, chain, now, 30 * day)
        };
        assert_eq!(unchanged(&next, 1, None), Decision::Unchanged { version: 7 });
        let bumped = Decision::Publish { version: 8, refresh: false };
        assert_eq!(unchanged(&statement(&[("ClusterProfile.web/ConfigMap.a.b.yaml", "x: 2\n")], 0, 1_000_000, 30 * day), 1, None), bumped);
        // A new keyring chain must reach the pullers even when the files did not change.
        assert_eq!(unchanged(&next, 1, Some(b"[]")), bumped);
        assert_eq!(unchanged(&next, 2, None), bumped, "new keyring version");
        let mut settings_changed = next.clone();
        settings_changed.predicate.profiles[0].tier = 5;
        assert_eq!(unchanged(&settings_changed, 1, None), bumped);
        let mut watch_changed = next.clone();
        watch_changed.predicate.settings.watch_namespaces = Some(vec!["apps".into()]);
        assert_eq!(unchanged(&watch_changed, 1, None), bumped);
        let mut recipients_changed = next.clone();
        recipients_changed.predicate.settings.recipients = Some(vec!["age1example".into()]);
        assert_eq!(unchanged(&recipients_changed, 1, None), bumped);
        let mut plaintext_allowed = next.clone();
        plaintext_allowed.predicate.settings.allow_plaintext_secrets = true;
        assert_eq!(unchanged(&plaintext_allowed, 1, None), bumped, "the puller must learn it may take Secrets in clear");
        let mut mass_prune_confirmed = next.clone();
        mass_prune_confirmed.predicate.settings.allow_mass_prune = true;
        assert_eq!(unchanged(&mass_prune_confirmed, 1, None), bumped, "the puller must learn the mass prune is confirmed");
        let mut widened = next.clone();
        widened.predicate.settings.cluster_scoped = vec!["Namespace/extra".parse().unwrap()];
        assert_eq!(unchanged(&widened, 1, None), bumped, "the puller must learn its new allow-list");
    }

    /// An empty layout, and a fixture's bundle at version 3 to write into it.
    async fn layout_holding_version_3() -> (tempfile::TempDir, std::path::PathBuf, Box<dyn Store>, Fixture, SignedBundle) {
        let tmp = tempfile::tempdir().unwrap();
        let layout = tmp.path().join("layout");
        let store = open(&format!("oci-layout:{}", layout.display()).parse::<StoreRef>().unwrap(), &Default::default()).await.unwrap();
        let fx = Fixture::new(1);
        let signed = fx.signed(3, Fixture::files());
        (tmp, layout, store, fx, signed)
    }

    /// A remembered bundle is recognised from the manifest alone; anything else is read.
    #[tokio::test]
    async fn a_layout_naming_the_remembered_envelope_is_not_read_further() {
        let (_tmp, layout, store, fx, signed) = layout_holding_version_3().await;
        store.publish(std::slice::from_ref(&signed), &PublishMeta::default()).await.unwrap();
        let p = &signed.statement.predicate;
        let stored = Stored {
            envelope: Digest::of(&signed.envelope),
            chain: None,
            version: 3,
            expires: p.expires,
            keyring_version: 1,
            manifest: None,
        };
        let (store, cluster) = (&store, &fx.cluster);
        let held = |remembered: Option<Stored>| async move { read_held(store.as_ref(), cluster, &Limits::SPEC, remembered.as_ref()).await };
        let other = Stored { envelope: Digest::of(b"another envelope"), ..stored.clone() };
        assert!(matches!(held(Some(other.clone())).await, Ok(Held::Bundle { statement, .. }) if statement.predicate.version == 3));
        assert!(matches!(held(None).await, Ok(Held::Bundle { .. })));
        // With the envelope's blob garbled, only the manifest can have told.
        let blob = layout.join("blobs/sha256").join(stored.envelope.hex());
        std::fs::write(&blob, vec![b'x'; signed.envelope.len()]).unwrap();
        let manifest = store.manifest_digest(cluster, &Limits::SPEC).await.unwrap();
        assert!(manifest.is_some());
        assert!(matches!(held(Some(stored.clone())).await, Ok(Held::Remembered { manifest: m }) if m == manifest));
        let read = held(Some(other.clone())).await.expect_err("a bundle not remembered is read, and this one is garbled");
        assert!(read.contains("content does not match its digest"), "{read}");
        // Gone altogether, it is still damage, never an empty store to start again at 1.
        std::fs::remove_file(&blob).unwrap();
        let read = held(Some(other)).await.expect_err("a missing envelope is an error");
        assert!(read.contains("not in the store"), "{read}");
        let absent = read_held(store.as_ref(), &"fleet/absent".parse().unwrap(), &Limits::SPEC, Some(&stored)).await;
        assert!(matches!(absent, Ok(Held::Nothing)));
    }

    #[tokio::test]
    async fn a_layout_naming_the_remembered_manifest_is_not_read_at_all() {
        let (_tmp, layout, store, fx, signed) = layout_holding_version_3().await;
        let mut batch = store.batch(&PublishMeta::default());
        let named = batch.add(vec![signed.clone()]).await.unwrap();
        batch.commit().await.unwrap();
        let manifest = named[0].expect("a layout names its manifests");
        assert_eq!(store.manifest_digest(&fx.cluster, &Limits::SPEC).await.unwrap(), Some(manifest));
        let p = &signed.statement.predicate;
        let envelope = Digest::of(b"not the stored envelope");
        let stored = Stored { envelope, chain: None, version: 3, expires: p.expires, keyring_version: 1, manifest: Some(manifest) };
        let (store, cluster) = (&store, &fx.cluster);
        let held = |remembered: Stored| async move { read_held(store.as_ref(), cluster, &Limits::SPEC, Some(&remembered)).await };
        // The manifest garbled at its size: the index alone told.
        let blob = layout.join("blobs/sha256").join(manifest.hex());
        let size = std::fs::metadata(&blob).unwrap().len() as usize;
        std::fs::write(&blob, vec![b'x'; size]).unwrap();
        assert!(matches!(held(stored.clone()).await, Ok(Held::Remembered { manifest: Some(m) }) if m == manifest));
        // Another manifest remembered, or this one cut short: read, and the damage found.
        let other = Stored { manifest: Some(Digest::of(b"another manifest")), ..stored.clone() };
        assert!(held(other).await.is_err());
        std::fs::write(&blob, b"short").unwrap();
        assert!(held(stored).await.is_err());
    }

    #[test]
    fn refreshes_a_bundle_past_half_its_validity() {
        let day = SignedDuration::from_hours(24);
        let files = [("ClusterProfile.web/ConfigMap.a.b.yaml", "x: 1\n")];
        let cur = statement(&files, 3, 0, 30 * day);
        let next = statement(&files, 0, 16 * 86_400, 30 * day);
        let now = next.predicate.issued_at;
        assert_eq!(decide(Some((&cur, None)), &outline(&next), 1, None, now, 30 * day), Decision::Publish { version: 4, refresh: true });
        let stored = Stored {
            envelope: Digest::of(b"e"),
            chain: None,
            version: 3,
            expires: cur.predicate.expires,
            keyring_version: 1,
            manifest: None,
        };
        assert_eq!(decide_remembered(&stored, 1, None, now, 30 * day), Decision::Publish { version: 4, refresh: true });
        let early = cur.predicate.issued_at.checked_add(day).unwrap();
        assert_eq!(decide_remembered(&stored, 1, None, early, 30 * day), Decision::Unchanged { version: 3 });
        assert_eq!(decide_remembered(&stored, 2, None, early, 30 * day), Decision::Publish { version: 4, refresh: false });
        assert_eq!(
            decide_remembered(&stored, 1, Some(Digest::of(b"[]")), early, 30 * day),
            Decision::Publish { version: 4, refresh: false }
        );
    }
}
