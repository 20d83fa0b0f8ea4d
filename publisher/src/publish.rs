//! The publish pipeline: profiles → selection → render → compare with the store → sign →
//! one write.
//!
//! The store is the source of truth for versions (spec 9.6): each cluster's current
//! statement is read back before publishing, and only clusters whose signed content
//! would change get `version + 1`; the rest keep their version and nothing is written for
//! them. A bundle whose content is unchanged but which passed half its validity is signed
//! again (a refresh), so pullers of a quiet cluster never see it expire. One cluster's
//! failure leaves the others' bundles to be published.

use std::collections::BTreeSet;

use airlock::bundle::statement::Statement;
use airlock::bundle::{PartSettings, Release, SignedBundle, SigningKey, sign};
use airlock::store::{PublishMeta, Store, StoreError};
use airlock::{ClusterId, Digest, Limits};
use jiff::{SignedDuration, Timestamp};

use crate::render::{self, Rendered};
use crate::sveltos::{Source, select};

/// Who signs, and what every bundle declares about the keyring.
pub struct Signer {
    pub keys: Vec<SigningKey>,
    pub keyring_version: u64,
    /// Keyring updates (spec 7.3) carried beside every bundle.
    pub chain: Option<Vec<u8>>,
    pub expires_in: SignedDuration,
}

/// Everything a publish run needs besides the source.
pub struct Publisher {
    pub signer: Signer,
    pub store: Box<dyn Store>,
    pub meta: PublishMeta,
    pub only: Vec<ClusterId>,
    pub dry_run: bool,
    pub limits: Limits,
}

/// What happened to one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Published,
    /// Same content, signed again before it expires.
    Refreshed,
    Unchanged,
    /// `--dry-run`: would have been published.
    WouldPublish,
    Failed(String),
}

/// One line of the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub cluster: ClusterId,
    pub version: Option<u64>,
    pub digest: Option<Digest>,
    pub objects: Option<usize>,
    pub status: Status,
    pub warnings: Vec<String>,
}

/// Whether a cluster's new content needs a new version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Unchanged { version: u64 },
    Publish { version: u64, refresh: bool },
}

/// Compares what would be signed with what the store holds. `next` is the statement the
/// new bundle would carry (its version and times are not compared).
pub fn decide(current: Option<(&Statement, Option<&[u8]>)>, next: &Statement, next_chain: Option<&[u8]>, now: Timestamp, expires_in: SignedDuration) -> Decision {
    let Some((cur, cur_chain)) = current else {
        return Decision::Publish { version: 1, refresh: false };
    };
    let (a, b) = (&cur.predicate, &next.predicate);
    let same = cur.subject == next.subject
        && a.cluster == b.cluster
        && a.profiles == b.profiles
        && a.watch_namespaces == b.watch_namespaces
        && a.keyring_version == b.keyring_version
        && cur_chain == next_chain;
    let version = a.version;
    if !same {
        return Decision::Publish { version: version + 1, refresh: false };
    }
    let half_life = SignedDuration::from_secs(expires_in.as_secs() / 2);
    if a.expires.duration_since(now) > half_life {
        Decision::Unchanged { version }
    } else {
        Decision::Publish { version: version + 1, refresh: true }
    }
}

/// Runs one publish over every selected cluster and returns the summary rows, in cluster
/// order. An error is returned only when nothing could be attempted (source unreadable,
/// bad `--cluster`) or the store write failed.
pub async fn run(source: &Source, publisher: &Publisher) -> anyhow::Result<Vec<Row>> {
    let inventory = source.load().await?;
    let clusters = select::candidates(&inventory.clusters, &publisher.only)?;
    let plans: Vec<_> = clusters
        .iter()
        .map(|c| (c, render::plan(c, select::profiles_for(c, &inventory.profiles))))
        .collect();
    let wanted: BTreeSet<_> = plans.iter().filter_map(|(_, p)| p.as_ref().ok()).flat_map(|p| p.references().cloned()).collect();
    let resources = source.fetch(&wanted).await?;
    let now = Timestamp::from_second(Timestamp::now().as_second()).expect("now is a valid time");
    let mut rows = Vec::with_capacity(plans.len());
    let mut changed: Vec<SignedBundle> = Vec::new();
    for (cluster, plan) in plans {
        let rendered = plan.and_then(|p| render::render(&p, &resources, &publisher.limits));
        let row = match rendered {
            Ok(r) => prepare(publisher, r, now, &mut changed).await,
            Err(e) => failed(cluster.id.clone(), e.to_string(), Vec::new()),
        };
        rows.push(row);
    }
    if !changed.is_empty() && !publisher.dry_run {
        publisher.store.publish(&changed, &publisher.meta).await?;
    }
    Ok(rows)
}

fn failed(cluster: ClusterId, message: String, warnings: Vec<String>) -> Row {
    Row { cluster, version: None, digest: None, objects: None, status: Status::Failed(message), warnings }
}

/// Compares one rendered cluster with the store and signs it when it changed.
async fn prepare(publisher: &Publisher, r: Rendered, now: Timestamp, changed: &mut Vec<SignedBundle>) -> Row {
    let current = match publisher.store.fetch_envelope(&r.cluster, &publisher.limits).await {
        Ok(f) => match f.unverified_statement() {
            Some(s) if s.predicate.cluster == r.cluster.to_string() => Some((s, f.keyring_chain)),
            _ => {
                let message = format!("{}: the stored envelope is unreadable; cannot tell the current version", publisher.store.describe());
                return failed(r.cluster, message, r.warnings);
            }
        },
        Err(StoreError::NotFound { .. }) => None,
        Err(e) => return failed(r.cluster, e.to_string(), r.warnings),
    };
    let signer = &publisher.signer;
    let expires = match now.checked_add(signer.expires_in) {
        Ok(t) => t,
        Err(e) => return failed(r.cluster, format!("--expires-in: {e}"), r.warnings),
    };
    let mut release = Release {
        cluster: r.cluster.clone(),
        version: 0,
        issued_at: now,
        expires,
        keyring_version: signer.keyring_version,
        watch_namespaces: r.watch_namespaces.clone(),
    };
    let settings = |part: &str| r.settings.get(part).cloned().unwrap_or_else(PartSettings::default);
    let next = sign::statement(&r.bundle, &release, &settings);
    let current = current.as_ref().map(|(s, c)| (s, c.as_deref()));
    let decision = decide(current, &next, signer.chain.as_deref(), now, signer.expires_in);
    let digest = r.bundle.digest();
    let row = |version, status| Row { cluster: r.cluster.clone(), version: Some(version), digest: Some(digest), objects: Some(r.objects), status, warnings: r.warnings.clone() };
    match decision {
        Decision::Unchanged { version } => row(version, Status::Unchanged),
        Decision::Publish { version, refresh } => {
            let status = match (publisher.dry_run, refresh) {
                (true, _) => Status::WouldPublish,
                (false, true) => Status::Refreshed,
                (false, false) => Status::Published,
            };
            let out = row(version, status);
            if !publisher.dry_run {
                release.version = version;
                changed.push(sign::sign(r.bundle, &release, &settings, &signer.keys, signer.chain.clone()));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock::bundle::Bundle;

    fn statement(files: &[(&str, &str)], version: u64, issued: i64, expires_in: SignedDuration, chain: Option<&[u8]>) -> (Statement, Option<Vec<u8>>) {
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
            watch_namespaces: None,
        };
        (sign::statement(&bundle, &release, &|_| PartSettings::default()), chain.map(<[u8]>::to_vec))
    }

    #[test]
    fn versions_follow_the_store_and_unchanged_content_keeps_its_version() {
        let day = SignedDuration::from_hours(24);
        let files = [("ClusterProfile.web/ConfigMap.a.b.yaml", "x: 1\n")];
        let (next, _) = statement(&files, 0, 1_000_000, 30 * day, None);
        assert_eq!(decide(None, &next, None, next.predicate.issued_at, 30 * day), Decision::Publish { version: 1, refresh: false });
        let (cur, _) = statement(&files, 7, 1_000_000 - 86_400, 30 * day, None);
        let now = next.predicate.issued_at;
        assert_eq!(decide(Some((&cur, None)), &next, None, now, 30 * day), Decision::Unchanged { version: 7 });
        let (other, _) = statement(&[("ClusterProfile.web/ConfigMap.a.b.yaml", "x: 2\n")], 0, 1_000_000, 30 * day, None);
        assert_eq!(decide(Some((&cur, None)), &other, None, now, 30 * day), Decision::Publish { version: 8, refresh: false });
        // A new keyring chain must reach the pullers even when the files did not change.
        assert_eq!(decide(Some((&cur, None)), &next, Some(b"[]"), now, 30 * day), Decision::Publish { version: 8, refresh: false });
        let mut settings_changed = next.clone();
        settings_changed.predicate.profiles[0].tier = 5;
        assert_eq!(decide(Some((&cur, None)), &settings_changed, None, now, 30 * day), Decision::Publish { version: 8, refresh: false });
        let mut watch_changed = next.clone();
        watch_changed.predicate.watch_namespaces = Some(vec!["apps".into()]);
        assert_eq!(decide(Some((&cur, None)), &watch_changed, None, now, 30 * day), Decision::Publish { version: 8, refresh: false });
    }

    #[test]
    fn refreshes_a_bundle_past_half_its_validity() {
        let day = SignedDuration::from_hours(24);
        let files = [("ClusterProfile.web/ConfigMap.a.b.yaml", "x: 1\n")];
        let (cur, _) = statement(&files, 3, 0, 30 * day, None);
        let (next, _) = statement(&files, 0, 16 * 86_400, 30 * day, None);
        assert_eq!(decide(Some((&cur, None)), &next, None, next.predicate.issued_at, 30 * day), Decision::Publish { version: 4, refresh: true });
    }
}
