//! The safe order of a sync, as stages: CRDs first (the caller waits until they are
//! Established and refreshes discovery), then Namespaces, then, profile wave by profile
//! wave (from `dependsOn`, then `tier`), cluster-scoped kinds before namespaced objects.
//! Objects of one stage are independent and may be applied concurrently. Pruning runs the
//! classes the other way round: namespaced objects first, CRDs and Namespaces last.
//!
//! CRDs and Namespaces go first whatever their profile: they only make room for other
//! objects, and an instance in one profile often needs the CRD of another.
//! Pure functions; no I/O.

use std::collections::HashMap;

use airlock::bundle::statement::ProfileEntry;

/// What an object is, as far as ordering goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Class {
    Crd,
    Namespace,
    ClusterScoped,
    Namespaced,
}

pub(super) const CRD_GROUP: &str = "apiextensions.k8s.io";
pub(super) const CRD_KIND: &str = "CustomResourceDefinition";

impl Class {
    pub(super) fn of(group: &str, kind: &str, namespaced: bool) -> Class {
        match (group, kind) {
            (CRD_GROUP, CRD_KIND) => Class::Crd,
            ("", "Namespace") => Class::Namespace,
            _ if namespaced => Class::Namespaced,
            _ => Class::ClusterScoped,
        }
    }

    /// Position in the prune order: what others live in goes last.
    pub(super) fn prune_rank(self) -> u8 {
        match self {
            Class::Namespaced => 0,
            Class::ClusterScoped => 1,
            Class::Crd => 2,
            Class::Namespace => 3,
        }
    }
}

/// A stage of a sync; stages run in ascending order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Stage {
    /// 0 for CRDs and Namespaces, 1 for everything else.
    phase: u8,
    wave: u32,
    tier: u32,
    pub(super) class: Class,
}

impl Stage {
    pub(super) fn new(class: Class, wave: u32, tier: u32) -> Stage {
        match class {
            Class::Crd | Class::Namespace => Stage { phase: 0, wave: 0, tier: 0, class },
            _ => Stage { phase: 1, wave, tier, class },
        }
    }
}

/// Each profile's wave: 0 without `dependsOn`, else one more than its highest dependency.
/// Verification rejects cycles; the loop is bounded anyway.
pub(super) fn waves(profiles: &[ProfileEntry]) -> HashMap<&str, u32> {
    let mut wave: HashMap<&str, u32> = profiles.iter().map(|p| (p.name.as_str(), 0)).collect();
    for _ in 0..profiles.len() {
        let mut changed = false;
        for profile in profiles {
            let w = profile.depends_on.iter().filter_map(|d| wave.get(d.as_str())).map(|w| w + 1).max().unwrap_or(0);
            if wave.insert(profile.name.as_str(), w) != Some(w) {
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    wave
}

#[cfg(test)]
mod tests {
    use airlock::Digest;
    use airlock::bundle::{StopMatchingBehavior, SyncMode};

    use super::*;

    fn profile(name: &str, depends_on: &[&str]) -> ProfileEntry {
        ProfileEntry {
            name: name.into(),
            digest: Digest::of(b""),
            size: 1024,
            sync_mode: SyncMode::Continuous,
            tier: 100,
            depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
            stop_matching_behavior: StopMatchingBehavior::WithdrawPolicies,
            force_conflicts: false,
        }
    }

    #[test]
    fn crd_before_namespace_before_cluster_scoped_before_namespaced() {
        let crd = Stage::new(Class::of(CRD_GROUP, CRD_KIND, false), 3, 500);
        let namespace = Stage::new(Class::of("", "Namespace", false), 2, 1);
        let cluster = Stage::new(Class::of("rbac.authorization.k8s.io", "ClusterRole", false), 0, 100);
        let namespaced = Stage::new(Class::of("", "ConfigMap", true), 0, 100);
        let mut stages = vec![namespaced, cluster, namespace, crd];
        stages.sort();
        assert_eq!(stages, vec![crd, namespace, cluster, namespaced]);
    }

    #[test]
    fn waves_follow_depends_on_and_then_tiers() {
        let profiles = vec![profile("a", &["b"]), profile("b", &[]), profile("c", &["a", "b"]), profile("d", &[])];
        let waves = waves(&profiles);
        assert_eq!((waves["b"], waves["d"], waves["a"], waves["c"]), (0, 0, 1, 2));
        // A namespaced object of a dependency goes before a cluster-scoped one of its dependent.
        let dependency = Stage::new(Class::Namespaced, waves["b"], 100);
        let dependent = Stage::new(Class::ClusterScoped, waves["a"], 100);
        assert!(dependency < dependent);
        // In one wave, a lower tier goes first.
        assert!(Stage::new(Class::Namespaced, 0, 10) < Stage::new(Class::ClusterScoped, 0, 100));
    }

    #[test]
    fn prune_goes_the_other_way() {
        let mut classes = vec![Class::Crd, Class::Namespace, Class::ClusterScoped, Class::Namespaced];
        classes.sort_by_key(|c| c.prune_rank());
        assert_eq!(classes, vec![Class::Namespaced, Class::ClusterScoped, Class::Crd, Class::Namespace]);
    }
}
