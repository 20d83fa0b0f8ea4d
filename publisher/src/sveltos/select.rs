//! Selection: which clusters a run publishes for, and which profiles match each of them.
//!
//! Only pull-mode clusters that are not paused get bundles: push-mode clusters are
//! Sveltos's own business. A ClusterProfile matches clusters of every namespace, a Profile
//! only those of its own namespace; a profile matches the union of its clusterSelector and
//! its clusterRefs. An empty clusterSelector matches nothing, as in Sveltos; what a
//! selector is and which labels it matches is `selector`'s. Rendering what matched is
//! `render`'s job.

use airlock_bundle::ClusterId;

use super::model::{Profile, ProfileKind, SveltosCluster};

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

/// Whether `profile` matches `cluster`.
pub fn matches(profile: &Profile, cluster: &SveltosCluster) -> bool {
    if let ProfileKind::Profile { namespace } = &profile.kind
        && namespace != cluster.id.namespace()
    {
        return false;
    }
    profile.cluster_refs.contains(&cluster.id) || profile.selector.as_ref().is_some_and(|s| s.matches(&cluster.labels))
}

/// The profiles that match `cluster`, in part-name order.
pub fn profiles_for<'a>(cluster: &SveltosCluster, profiles: &'a [Profile]) -> Vec<&'a Profile> {
    let mut out: Vec<&Profile> = profiles.iter().filter(|p| matches(p, cluster)).collect();
    out.sort_by_cached_key(|p| p.part_name());
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::parse::{parse_cluster, parse_profile};
    use super::*;

    fn cluster(id: &str, labels: Value, pull_mode: bool, paused: bool) -> SveltosCluster {
        let (ns, name) = id.split_once('/').unwrap();
        parse_cluster(&json!({"metadata": {"namespace": ns, "name": name, "labels": labels},
                              "spec": {"pullMode": pull_mode, "paused": paused}}))
        .unwrap()
    }

    #[test]
    fn cluster_refs_union_and_profile_namespace_scoping() {
        let eu = cluster("fleet/eu-1", json!({"region": "eu"}), true, false);
        let us = cluster("fleet/us-1", json!({"region": "us"}), true, false);
        let team_eu = cluster("team-a/eu-2", json!({"region": "eu"}), true, false);
        let cp = parse_profile(
            &json!({"metadata": {"name": "eu"}, "spec": {"clusterSelector": {"matchLabels": {"region": "eu"}},
                "clusterRefs": [{"kind": "SveltosCluster", "namespace": "fleet", "name": "us-1"}]}}),
            false,
        )
        .unwrap();
        assert_eq!([matches(&cp, &eu), matches(&cp, &us), matches(&cp, &team_eu)], [true, true, true]);
        let p = parse_profile(
            &json!({"metadata": {"name": "eu", "namespace": "team-a"}, "spec": {"clusterSelector": {"matchLabels": {"region": "eu"}}}}),
            true,
        )
        .unwrap();
        assert_eq!([matches(&p, &eu), matches(&p, &us), matches(&p, &team_eu)], [false, false, true]);
        let refs_only = parse_profile(
            &json!({"metadata": {"name": "one"}, "spec": {"clusterRefs": [{"kind": "SveltosCluster", "namespace": "fleet", "name": "eu-1"}]}}),
            false,
        )
        .unwrap();
        assert_eq!([matches(&refs_only, &eu), matches(&refs_only, &us)], [true, false]);
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
}
