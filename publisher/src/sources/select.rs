//! Selection: which clusters a run publishes for, and which profiles each of them gets.
//!
//! Only pull-mode clusters that are not paused get bundles: push-mode clusters are
//! Sveltos's own business. A ClusterProfile matches clusters of every namespace, a Profile
//! only those of its own namespace; a profile matches the union of its clusterSelector,
//! its clusterRefs and the clusters of its setRefs. An empty clusterSelector matches
//! nothing, as in Sveltos; what a selector is and which labels it matches is `selector`'s.
//! A cluster also gets the prerequisites (`dependsOn`, transitively) of every profile it
//! gets, whether or not they match it, as Sveltos deploys them by default. A paused
//! profile is not reconciled, so it is selected for no cluster; what a cluster holds of it
//! is kept when publishing. Rendering what was selected is `render`'s job.

use std::collections::BTreeSet;

use airlock_bundle::ClusterId;
use airlock_bundle::statement::Evaluation;
use airlock_bundle::vocabulary::DECOMMISSION_ANNOTATION;

use super::inventory::Inventory;
use super::model::{ClusterSet, Profile, ProfileKind, SveltosCluster};

/// A cluster named by `--cluster` that cannot be published for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    #[error("--cluster {0}: no SveltosCluster of that name")]
    Unknown(ClusterId),
    #[error("--cluster {0}: the SveltosCluster is not in pull mode (spec.pullMode is not true)")]
    NotPullMode(ClusterId),
    #[error("--cluster {0}: the SveltosCluster is paused (spec.paused)")]
    Paused(ClusterId),
}

/// The clusters a run publishes for: pull-mode, not paused, and among `only` when given.
pub fn candidates<'a>(clusters: &'a [SveltosCluster], only: &[ClusterId]) -> Result<Vec<&'a SveltosCluster>, SelectError> {
    for id in only {
        match clusters.iter().find(|c| &c.id == id) {
            None => return Err(SelectError::Unknown(id.clone())),
            Some(c) if !c.pull_mode => return Err(SelectError::NotPullMode(id.clone())),
            Some(c) if c.paused => return Err(SelectError::Paused(id.clone())),
            Some(_) => {}
        }
    }
    let mut out: Vec<&SveltosCluster> =
        clusters.iter().filter(|c| c.pull_mode && !c.paused && (only.is_empty() || only.contains(&c.id))).collect();
    for c in clusters.iter().filter(|c| c.pull_mode && c.paused) {
        tracing::info!(cluster = %c.id, "paused: not published");
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// Whether `deregister cluster --final-bundle` published the cluster's final bundle
/// (annotation `airlock.dev/decommission`): a publish must not put a bundle above it, which
/// would undo it at a site that has not pulled it yet.
pub fn decommissioning(cluster: &SveltosCluster) -> bool {
    let marked = !cluster.object["metadata"]["annotations"][DECOMMISSION_ANNOTATION].is_null();
    if marked {
        tracing::info!(cluster = %cluster.id, "decommissioned: its final bundle stands, not published");
    }
    marked
}

/// Whether `profile` matches `cluster`, with `sets` the ClusterSets and Sets read.
pub fn matches(profile: &Profile, cluster: &SveltosCluster, sets: &[ClusterSet]) -> bool {
    if let ProfileKind::Profile { namespace } = &profile.kind
        && namespace != cluster.id.namespace()
    {
        return false;
    }
    profile.cluster_refs.contains(&cluster.id)
        || profile.selector.as_ref().is_some_and(|s| s.matches(&cluster.labels))
        || in_sets(profile, cluster, sets)
}

/// Whether one of the profile's setRefs lists the cluster: a ClusterProfile names
/// ClusterSets, a Profile Sets of its own namespace. A set that does not exist selects
/// nothing.
fn in_sets(profile: &Profile, cluster: &SveltosCluster, sets: &[ClusterSet]) -> bool {
    !profile.set_refs.is_empty()
        && sets.iter().any(|set| {
            set.namespace.as_deref() == profile.own_namespace()
                && profile.set_refs.contains(&set.name)
                && set.selected.contains(&cluster.id)
        })
}

/// The profiles `cluster` gets, in part-name order: those that match it, not paused, and
/// their prerequisites. A prerequisite that does not exist (or is paused) is not added;
/// rendering holds its dependent back.
pub fn profiles_for<'a>(cluster: &SveltosCluster, inventory: &'a Inventory) -> Vec<&'a Profile> {
    // The inventory is in part-name order, so the matches are too. A paused profile is
    // not reconciled, so it keeps the prerequisites it had: they are still chosen.
    let mut chosen: Vec<&Profile> = inventory.profiles.iter().filter(|p| matches(p, cluster, &inventory.sets)).collect();
    if chosen.iter().all(|p| p.depends_on.is_empty()) {
        chosen.retain(|p| !p.paused);
        return chosen;
    }
    let mut next = 0;
    while let Some(profile) = chosen.get(next).copied() {
        for name in &profile.depends_on {
            if let Some(prerequisite) = prerequisite(inventory, profile, name)
                && !chosen.iter().any(|c| std::ptr::eq(*c, prerequisite))
            {
                chosen.push(prerequisite);
            }
        }
        next += 1;
    }
    chosen.retain(|p| !p.paused);
    chosen.sort_by_cached_key(|p| p.part_name());
    chosen
}

/// The EventSources `cluster`'s puller evaluates, in name order: those the EventTriggers
/// watching it name. A trigger naming an EventSource that does not exist or cannot be read
/// adds nothing.
pub fn event_sources_for(cluster: &SveltosCluster, inventory: &Inventory) -> Vec<Evaluation> {
    let named: BTreeSet<&str> =
        inventory.event_triggers.iter().filter(|t| t.watches(cluster, &inventory.sets)).map(|t| t.event_source.as_str()).collect();
    inventory.event_sources.iter().filter(|e| named.contains(e.name.as_str())).cloned().collect()
}

/// The profile `dependent` names `name` in dependsOn: of its kind, and for a Profile of its
/// namespace; `None` when there is none that is not paused.
pub fn prerequisite<'a>(inventory: &'a Inventory, dependent: &Profile, name: &str) -> Option<&'a Profile> {
    inventory.profiles.iter().find(|p| !p.paused && p.kind == dependent.kind && p.name == name)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::model::ClusterSet;
    use super::super::parse::{parse_cluster, parse_profile};
    use super::*;

    fn cluster(id: &str, labels: Value, pull_mode: bool, paused: bool) -> SveltosCluster {
        let (ns, name) = id.split_once('/').unwrap();
        parse_cluster(&json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "metadata": {"namespace": ns, "name": name, "labels": labels},
                              "spec": {"pullMode": pull_mode, "paused": paused}}))
        .unwrap()
    }

    fn profile(metadata: Value, spec: Value, namespaced: bool) -> Profile {
        parse_profile(&json!({"apiVersion": "config.projectsveltos.io/v1beta1", "metadata": metadata, "spec": spec}), namespaced).unwrap()
    }

    #[test]
    fn cluster_refs_union_and_profile_namespace_scoping() {
        let eu = cluster("fleet/eu-1", json!({"region": "eu"}), true, false);
        let us = cluster("fleet/us-1", json!({"region": "us"}), true, false);
        let team_eu = cluster("team-a/eu-2", json!({"region": "eu"}), true, false);
        let cp = profile(
            json!({"name": "eu"}),
            json!({"clusterSelector": {"matchLabels": {"region": "eu"}}, "clusterRefs": [{"kind": "SveltosCluster", "namespace": "fleet", "name": "us-1"}]}),
            false,
        );
        let m = |p: &Profile, c: &SveltosCluster| matches(p, c, &[]);
        assert_eq!([m(&cp, &eu), m(&cp, &us), m(&cp, &team_eu)], [true, true, true]);
        let p = profile(json!({"name": "eu", "namespace": "team-a"}), json!({"clusterSelector": {"matchLabels": {"region": "eu"}}}), true);
        assert_eq!([m(&p, &eu), m(&p, &us), m(&p, &team_eu)], [false, false, true]);
        let refs_only = profile(
            json!({"name": "one"}),
            json!({"clusterRefs": [{"kind": "SveltosCluster", "namespace": "fleet", "name": "eu-1"}]}),
            false,
        );
        assert_eq!([m(&refs_only, &eu), m(&refs_only, &us)], [true, false]);
    }

    #[test]
    fn paused_and_push_mode_clusters_are_skipped() {
        let all = vec![
            cluster("fleet/b", json!({}), true, false),
            cluster("fleet/a", json!({}), true, false),
            cluster("fleet/paused", json!({}), true, true),
            cluster("fleet/push", json!({}), false, false),
        ];
        let ids = |v: Vec<&SveltosCluster>| v.iter().map(|c| c.id.to_string()).collect::<Vec<_>>();
        assert_eq!(ids(candidates(&all, &[]).unwrap()), ["fleet/a", "fleet/b"]);
        assert_eq!(ids(candidates(&all, &["fleet/b".parse().unwrap()]).unwrap()), ["fleet/b"]);
        let id = |s: &str| s.parse::<ClusterId>().unwrap();
        assert_eq!(candidates(&all, &[id("fleet/paused")]), Err(SelectError::Paused(id("fleet/paused"))));
        assert_eq!(candidates(&all, &[id("fleet/push")]), Err(SelectError::NotPullMode(id("fleet/push"))));
        assert_eq!(candidates(&all, &[id("fleet/zzz")]), Err(SelectError::Unknown(id("fleet/zzz"))));
    }

    #[test]
    fn set_refs_select_what_the_set_controller_selected() {
        let a = cluster("fleet/a", json!({}), true, false);
        let b = cluster("team/b", json!({}), true, false);
        let sets = vec![
            ClusterSet { namespace: None, name: "prod".into(), selected: vec![a.id.clone()] },
            ClusterSet { namespace: Some("team".into()), name: "prod".into(), selected: vec![b.id.clone()] },
        ];
        let cp = profile(json!({"name": "cp"}), json!({"setRefs": ["prod", "missing"]}), false);
        let p = profile(json!({"name": "p", "namespace": "team"}), json!({"setRefs": ["prod"]}), true);
        assert_eq!([matches(&cp, &a, &sets), matches(&cp, &b, &sets)], [true, false], "a ClusterProfile names ClusterSets");
        assert_eq!([matches(&p, &a, &sets), matches(&p, &b, &sets)], [false, true], "a Profile names Sets of its namespace");
    }

    #[test]
    fn prerequisites_come_with_their_dependents_and_paused_profiles_with_none() {
        let c = cluster("fleet/a", json!({"env": "prod"}), true, false);
        let inventory = Inventory {
            classifiers: vec![],
            event_sources: vec![],
            event_triggers: vec![],
            clusters: vec![c.clone()],
            profiles: vec![
                profile(json!({"name": "app"}), json!({"clusterSelector": {"matchLabels": {"env": "prod"}}, "dependsOn": ["base"]}), false),
                profile(json!({"name": "base"}), json!({"dependsOn": ["root"]}), false),
                profile(
                    json!({"name": "paused", "annotations": {"profile.projectsveltos.io/paused": ""}}),
                    json!({"clusterSelector": {"matchLabels": {"env": "prod"}}}),
                    false,
                ),
                profile(json!({"name": "root"}), json!({}), false),
                profile(json!({"name": "unrelated"}), json!({}), false),
            ],
            ..Inventory::default()
        };
        let names: Vec<String> = profiles_for(&c, &inventory).iter().map(|p| p.part_name()).collect();
        assert_eq!(names, ["ClusterProfile.app", "ClusterProfile.base", "ClusterProfile.root"]);
        let mut paused = inventory.clone();
        paused.profiles[0].paused = true;
        let names: Vec<String> = profiles_for(&c, &paused).iter().map(|p| p.part_name()).collect();
        assert_eq!(names, ["ClusterProfile.base", "ClusterProfile.root"], "a paused dependent keeps its prerequisites");
    }
}
