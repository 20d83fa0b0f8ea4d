//! `spec.maxUpdate` across the fleet: of the clusters whose part of a profile would change,
//! only as many take the new version as the profile's window leaves room for; the others
//! keep the part the store holds (`hold`'s held-back reason) and take it in a later publish,
//! once the clusters updating report it applied. Entry points: [`Rollout::read`] before a
//! run's chunks, [`hold_back`] after each chunk is completed. It does not render, sign or
//! write.
//!
//! A cluster is updating a profile while its stored bundle carries the profile's newest
//! part (not held back, not kept from an earlier version after a failure) and the version
//! its puller last reported applied (the SveltosCluster annotation `ingest` writes) is
//! older than that bundle. It keeps its place in the window until then, so a cluster that
//! fails to apply holds the rest back, as in Sveltos. Clusters are admitted in cluster
//! order (namespace, then name), the order the chunks run in.

use std::collections::{BTreeMap, HashMap};

use airlock_bundle::{ClusterId, Digest};
use futures::StreamExt;

use super::draft::{Draft, Stage, complete_from_store};
use super::{Run, STORE_READS, kept};
use crate::render::{ClusterPlan, RenderError};
use crate::sources::max_update::MaxUpdate;
use crate::sources::model::SveltosCluster;

/// One profile's window.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Window {
    max: MaxUpdate,
    matching: usize,
    /// Clusters that may be updating at once.
    limit: usize,
    /// Clusters updating now, or admitted by this run.
    busy: usize,
}

/// What the store holds of a windowed part for one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StoredPart {
    digest: Digest,
    updating: bool,
}

/// The windows of a run and what they start from.
#[derive(Debug, Default)]
pub struct Rollout {
    /// Part name → its window; only profiles that set `maxUpdate`.
    windows: BTreeMap<String, Window>,
    stored: HashMap<ClusterId, BTreeMap<String, StoredPart>>,
}

impl Rollout {
    /// The windows of every profile setting `maxUpdate` over the clusters it matches, and
    /// which of those clusters are updating it, from their stored bundles and reports.
    pub async fn read(run: &Run<'_>, plans: &[(&SveltosCluster, Result<ClusterPlan<'_>, RenderError>)]) -> Rollout {
        let mut rollout = Rollout::default();
        let mut windowed: Vec<(&SveltosCluster, Vec<String>)> = Vec::new();
        for (cluster, plan) in plans {
            let Ok(plan) = plan else { continue };
            let parts: Vec<String> = plan
                .profiles
                .iter()
                .filter_map(|pp| pp.profile.max_update.map(|max| (pp.profile.part_name(), max)))
                .map(|(part, max)| {
                    rollout.windows.entry(part.clone()).or_insert(Window { max, matching: 0, limit: 0, busy: 0 }).matching += 1;
                    part
                })
                .collect();
            if !parts.is_empty() {
                windowed.push((cluster, parts));
            }
        }
        for window in rollout.windows.values_mut() {
            window.limit = window.max.window(window.matching);
        }
        let Some(keyring) = &run.keyring else { return rollout };
        let p = run.publisher;
        let reads = futures::stream::iter(windowed.into_iter().map(|(cluster, parts)| async move {
            let stored = match kept::read(&*p.store, &cluster.id, keyring, run.times.now, &p.limits).await {
                Ok(stored) => stored,
                Err(e) => {
                    tracing::warn!(cluster = %cluster.id, "the stored bundle cannot be read, so its windowed parts count as updating: {e}");
                    return (cluster.id.clone(), Err(parts));
                }
            };
            let applied = cluster.applied_version();
            let parts: BTreeMap<String, StoredPart> = stored
                .iter()
                .flat_map(|s| {
                    let predicate = &s.statement().predicate;
                    let behind = applied.is_none_or(|a| a < predicate.version);
                    predicate
                        .profiles
                        .iter()
                        .filter(|e| parts.contains(&e.name))
                        .map(move |e| (e.name.clone(), StoredPart { digest: e.digest, updating: behind && e.failure.is_none() }))
                })
                .collect();
            (cluster.id.clone(), Ok(parts))
        }))
        .buffered(STORE_READS)
        .collect::<Vec<_>>()
        .await;
        for (cluster, parts) in reads {
            match parts {
                Ok(parts) => {
                    for (part, stored) in &parts {
                        if stored.updating {
                            rollout.windows.get_mut(part).expect("a windowed part").busy += 1;
                        }
                    }
                    rollout.stored.insert(cluster, parts);
                }
                // Unknown is counted as taken: the window never admits more than its size.
                Err(unknown) => {
                    for part in &unknown {
                        rollout.windows.get_mut(part).expect("a windowed part").busy += 1;
                    }
                }
            }
        }
        rollout
    }

    /// The windowed parts of `cluster` whose new version must wait (part → why), given the
    /// digests this render gives them; admits the others, taking their places.
    fn admit(&mut self, cluster: &ClusterId, fresh: impl IntoIterator<Item = (String, Digest)>) -> BTreeMap<String, String> {
        let stored = self.stored.get(cluster);
        let mut held = BTreeMap::new();
        for (part, digest) in fresh {
            let Some(window) = self.windows.get_mut(&part) else { continue };
            let had = stored.and_then(|s| s.get(&part));
            if had.is_some_and(|h| h.digest == digest || h.updating) {
                continue;
            }
            if window.busy < window.limit {
                window.busy += 1;
                continue;
            }
            let why = format!(
                "held back by spec.maxUpdate: {} of its {} matching clusters may update at once, and that many are updating; this cluster keeps the part it holds until they report the new version applied",
                window.limit, window.matching
            );
            held.insert(part, why);
        }
        held
    }
}

/// Holds back, in cluster order, the windowed parts of the completed `drafts` that the
/// windows have no room for, completing those clusters again from the store.
pub async fn hold_back<'a>(run: &Run<'_>, drafts: Vec<Draft<'a>>, rollout: &mut Rollout) -> Vec<Draft<'a>> {
    if rollout.windows.is_empty() {
        return drafts;
    }
    let decided: Vec<(Draft<'a>, BTreeMap<String, String>)> = drafts
        .into_iter()
        .map(|d| {
            let held = match &d.stage {
                Stage::Full(f) => {
                    let fresh = f.statement.predicate.profiles.iter().filter(|e| e.failure.is_none()).map(|e| (e.name.clone(), e.digest));
                    rollout.admit(d.cluster(), fresh)
                }
                _ => BTreeMap::new(),
            };
            (d, held)
        })
        .collect();
    futures::stream::iter(decided.into_iter().map(|(d, held)| again(run, d, held))).buffered(STORE_READS).collect().await
}

/// Completes `d` again with `held` held back. Its inputs' fingerprint takes in what was
/// held, so the memo never recalls a held-back bundle as what those inputs render to.
async fn again<'a>(run: &Run<'_>, mut d: Draft<'a>, held: BTreeMap<String, String>) -> Draft<'a> {
    if held.is_empty() {
        return d;
    }
    let Stage::Full(f) = std::mem::replace(&mut d.stage, Stage::Failed(String::new())) else {
        unreachable!("only a full draft is held back")
    };
    d.inputs = Digest::of(format!("{} held back: {:?}", d.inputs, held.keys().collect::<Vec<_>>()).as_bytes());
    complete_from_store(run, d, f.prepared, &held).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str) -> ClusterId {
        format!("fleet/{name}").parse().unwrap()
    }

    /// A window of `max` over `matching` clusters, `updating` of which hold the new part.
    fn rollout(max: MaxUpdate, matching: usize, updating: &[&str], old: &[&str]) -> Rollout {
        let mut r = Rollout::default();
        let busy = updating.len();
        r.windows.insert("P".into(), Window { max, matching, limit: max.window(matching), busy });
        for (names, digest, updating) in [(updating, Digest::of(b"new"), true), (old, Digest::of(b"old"), false)] {
            for name in names {
                r.stored.insert(id(name), BTreeMap::from([("P".to_string(), StoredPart { digest, updating })]));
            }
        }
        r
    }

    fn admitted(r: &mut Rollout, names: &[&str]) -> Vec<String> {
        names.iter().filter(|n| r.admit(&id(n), [("P".to_string(), Digest::of(b"new"))]).is_empty()).map(|n| n.to_string()).collect()
    }

    #[test]
    fn admits_as_many_as_the_window_in_the_order_asked() {
        let mut r = rollout(MaxUpdate::Percent(50), 4, &[], &["a", "b", "c", "d"]);
        assert_eq!(admitted(&mut r, &["a", "b", "c", "d"]), ["a", "b"]);
    }

    #[test]
    fn clusters_still_updating_take_their_places() {
        let mut r = rollout(MaxUpdate::Count(2), 4, &["a"], &["b", "c", "d"]);
        assert_eq!(admitted(&mut r, &["a", "b", "c", "d"]), ["a", "b"], "a keeps its place, one is left");
        let mut r = rollout(MaxUpdate::Count(2), 4, &["a", "b"], &["c", "d"]);
        assert_eq!(admitted(&mut r, &["c", "d"]), Vec::<String>::new(), "a failing cluster holds the rest back");
    }

    #[test]
    fn a_cluster_holding_the_new_part_needs_no_place() {
        let mut r = rollout(MaxUpdate::Count(1), 3, &[], &["b", "c"]);
        r.stored.insert(id("a"), BTreeMap::from([("P".to_string(), StoredPart { digest: Digest::of(b"new"), updating: false })]));
        assert_eq!(admitted(&mut r, &["a", "b", "c"]), ["a", "b"]);
    }

    #[test]
    fn a_cluster_new_to_the_profile_takes_a_place() {
        let mut r = rollout(MaxUpdate::Count(1), 2, &[], &[]);
        assert_eq!(admitted(&mut r, &["a", "b"]), ["a"]);
        let held = r.admit(&id("b"), [("P".to_string(), Digest::of(b"new"))]);
        assert!(held["P"].starts_with("held back by spec.maxUpdate: 1 of its 2 matching clusters"), "{held:?}");
    }

    #[test]
    fn parts_without_max_update_are_never_held() {
        let mut r = rollout(MaxUpdate::Count(0), 2, &[], &["a", "b"]);
        assert_eq!(admitted(&mut r, &["a", "b"]), ["a", "b"], "zero means no limit");
        assert!(r.admit(&id("a"), [("Q".to_string(), Digest::of(b"x"))]).is_empty());
    }
}
