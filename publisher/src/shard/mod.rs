//! Which clusters one `watch` replica publishes when several share the fleet: those of its
//! Sveltos shard key (the `sharding.projectsveltos.io/key` annotation, none for clusters
//! without it), and among those the ones a stable hash assigns to it over the live
//! replicas (rendezvous hashing: adding or removing a replica moves only its share).
//!
//! A [`Shard`] is what a run is given: the key, this replica, and the views (member lists)
//! a cluster must be assigned to it in all of — more than one while the membership
//! changes (`fence`). Who is live is `cmd::watch::members`'s business; this module only
//! decides, and holds no client.

pub mod fence;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::sources::model::SveltosCluster;

/// Sveltos's shard annotation on a SveltosCluster: the controllers started with that key
/// manage it; clusters without it belong to those started without one.
pub const SHARD_ANNOTATION: &str = "sharding.projectsveltos.io/key";

/// The clusters one replica publishes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// The shard key served; `None`: the clusters without one.
    pub key: Option<String>,
    /// This replica's identity among the members.
    pub me: String,
    /// Each a sorted list of member identities; a cluster is this replica's when every one
    /// assigns it here. None at all: every cluster of the key (one replica publishes, the
    /// others stand by).
    pub views: Vec<Vec<String>>,
}

impl Shard {
    /// Whether a cluster annotated with `annotation` (its shard key, if any) is of this key.
    /// An empty key counts as none, as Sveltos's own filter reads an absent one.
    pub fn in_key(&self, annotation: Option<&str>) -> bool {
        annotation.filter(|k| !k.is_empty()) == self.key.as_deref().filter(|k| !k.is_empty())
    }

    /// Whether every view assigns `cluster` (`namespace/name`) to this replica.
    pub fn owns(&self, cluster: &str) -> bool {
        self.views.iter().all(|view| owner(view, cluster) == Some(self.me.as_str()))
    }

    /// Whether this replica publishes `cluster`.
    pub fn selects(&self, cluster: &SveltosCluster) -> bool {
        let annotation = cluster.object["metadata"]["annotations"][SHARD_ANNOTATION].as_str();
        self.in_key(annotation) && self.owns(&cluster.id.to_string())
    }

    /// Whether this replica can own nothing at all: a view without it.
    pub fn owns_nothing(&self) -> bool {
        self.views.iter().any(|view| !view.contains(&self.me))
    }
}

/// The member `cluster` is assigned to among `members`: the one with the highest hash of
/// (member, cluster), so each cluster's order of preference is its own and a member's
/// leaving hands each of its clusters to that cluster's next choice.
pub fn owner<'m>(members: &'m [String], cluster: &str) -> Option<&'m str> {
    members.iter().max_by_key(|m| (score(m, cluster), m.as_str())).map(String::as_str)
}

fn score(member: &str, cluster: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(member.as_bytes());
    hasher.update([0]);
    hasher.update(cluster.as_bytes());
    let hash = hasher.finalize();
    u64::from_be_bytes(hash[..8].try_into().expect("a SHA-256 hash is 32 bytes"))
}

/// A short name for a set of members, written on a member's Lease to say which view it
/// works under: order-free, since views are sorted.
pub fn view_name(view: &[String]) -> String {
    short_hash(view.iter().map(String::as_str), 12)
}

/// The first `bytes` bytes, in hex, of the SHA-256 of `parts` each ended by a zero byte:
/// a name for them that fits a label or an object name.
pub fn short_hash<'p>(parts: impl IntoIterator<Item = &'p str>, bytes: usize) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize()[..bytes.min(32)].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn members(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn fleet(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("fleet-{}/edge-{i}", i % 7)).collect()
    }

    #[test]
    fn assignment_is_stable_and_independent_of_member_order() {
        let (abc, cab) = (members(&["a", "b", "c"]), members(&["c", "a", "b"]));
        for cluster in fleet(500) {
            assert_eq!(owner(&abc, &cluster), owner(&cab, &cluster), "{cluster}");
            assert_eq!(owner(&abc, &cluster), owner(&abc.clone(), &cluster));
        }
        assert_eq!(owner(&[], "fleet/a"), None);
        assert_eq!(owner(&members(&["only"]), "fleet/a"), Some("only"));
    }

    #[test]
    fn assignment_is_balanced() {
        let view = members(&["pod-a", "pod-b", "pod-c"]);
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for cluster in fleet(30_000) {
            *counts.entry(owner(&view, &cluster).unwrap()).or_default() += 1;
        }
        assert_eq!(counts.len(), 3);
        for (member, n) in counts {
            assert!((9_400..=10_600).contains(&n), "{member} got {n} of 30000");
        }
    }

    #[test]
    fn a_member_leaving_or_joining_moves_only_its_share() {
        let (three, two) = (members(&["pod-a", "pod-b", "pod-c"]), members(&["pod-a", "pod-c"]));
        let four = members(&["pod-a", "pod-b", "pod-c", "pod-d"]);
        let (mut left, mut joined) = (0, 0);
        for cluster in fleet(9_000) {
            let before = owner(&three, &cluster).unwrap();
            let after = owner(&two, &cluster).unwrap();
            if before == "pod-b" {
                left += 1;
            } else {
                assert_eq!(before, after, "{cluster} moved between two replicas that stayed");
            }
            let grown = owner(&four, &cluster).unwrap();
            if grown == "pod-d" {
                joined += 1;
            } else {
                assert_eq!(before, grown, "{cluster} moved to a replica other than the new one");
            }
        }
        assert!((2_700..=3_300).contains(&left), "pod-b held {left} of 9000");
        assert!((2_000..=2_500).contains(&joined), "pod-d took {joined} of 9000");
    }

    #[test]
    fn the_key_filter_follows_sveltos() {
        let keyed = Shard { key: Some("eu".into()), ..Shard::default() };
        let unkeyed = Shard::default();
        assert!(keyed.in_key(Some("eu")));
        assert!(!keyed.in_key(Some("us")) && !keyed.in_key(None) && !keyed.in_key(Some("")));
        assert!(unkeyed.in_key(None) && unkeyed.in_key(Some("")));
        assert!(!unkeyed.in_key(Some("eu")));
    }

    #[test]
    fn a_cluster_is_owned_only_where_every_view_agrees() {
        let (three, two) = (members(&["pod-a", "pod-b", "pod-c"]), members(&["pod-a", "pod-c"]));
        let clusters = fleet(300);
        let moving = Shard { me: "pod-a".into(), views: vec![three.clone(), two.clone()], ..Shard::default() };
        for cluster in &clusters {
            let both = owner(&three, cluster) == Some("pod-a") && owner(&two, cluster) == Some("pod-a");
            assert_eq!(moving.owns(cluster), both, "{cluster}");
        }
        let standby = Shard { me: "pod-a".into(), ..Shard::default() };
        assert!(clusters.iter().all(|c| standby.owns(c)) && !standby.owns_nothing());
        let joining = Shard { me: "pod-d".into(), views: vec![vec![], three], ..Shard::default() };
        assert!(joining.owns_nothing() && clusters.iter().all(|c| !joining.owns(c)));
    }

    #[test]
    fn a_view_name_depends_on_its_members_only() {
        let name = view_name(&members(&["pod-a", "pod-b"]));
        assert_eq!(name.len(), 24);
        assert_eq!(name, view_name(&members(&["pod-a", "pod-b"])));
        assert_ne!(name, view_name(&members(&["pod-a"])));
        assert_ne!(view_name(&members(&["ab", "c"])), view_name(&members(&["a", "bc"])));
    }
}
