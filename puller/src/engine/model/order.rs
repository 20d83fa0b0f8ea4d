//! The safe order of a sync, as stages: CRDs first (the caller waits until they are
//! Established and refreshes discovery), then Namespaces, then, profile wave by profile
//! wave (from `dependsOn`, then `tier`), cluster-scoped kinds, then namespaced objects, then
//! workloads (Pods and the controllers that make them). Within a wave and tier, the Helm
//! hooks a run fires go around the other objects (`Slot`): pre- hooks first, by weight,
//! then everything else, then post- hooks, then test hooks. Objects of one stage are
//! independent and may be applied concurrently. Pruning runs the classes the other way
//! round: workloads first, CRDs and Namespaces last.
//!
//! CRDs and Namespaces go first whatever their profile: they only make room for other
//! objects, and an instance in one profile often needs the CRD of another. Workloads go
//! after the ConfigMaps, Secrets and ServiceAccounts of their wave, as Helm and Flux order
//! them: the API server refuses a Pod whose ServiceAccount does not exist yet, and its
//! controller then retries with a growing back-off. Roles and ClusterRoles go before the
//! other objects of their wave, as Helm orders them: a puller without `bind` may create a
//! binding only to a role that exists, whose rules the API server checks it holds.
//! Pure functions; no I/O.

use std::collections::HashMap;

use airlock_bundle::statement::ProfileEntry;

/// What an object is, as far as ordering goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Class {
    Crd,
    Namespace,
    /// Roles and ClusterRoles: before the bindings that name them.
    Role,
    ClusterScoped,
    Namespaced,
    Workload,
}

pub(crate) const CRD_GROUP: &str = "apiextensions.k8s.io";
pub(crate) const CRD_KIND: &str = "CustomResourceDefinition";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

impl Class {
    pub(crate) fn of(group: &str, kind: &str, namespaced: bool) -> Class {
        match (group, kind) {
            (CRD_GROUP, CRD_KIND) => Class::Crd,
            ("", "Namespace") => Class::Namespace,
            (RBAC_GROUP, "Role" | "ClusterRole") => Class::Role,
            ("", "Pod" | "ReplicationController")
            | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
            | ("batch", "Job" | "CronJob")
                if namespaced =>
            {
                Class::Workload
            }
            _ if namespaced => Class::Namespaced,
            _ => Class::ClusterScoped,
        }
    }

    /// Position in the prune order: what others live in goes last.
    pub(crate) fn prune_rank(self) -> u8 {
        match self {
            Class::Workload => 0,
            Class::Namespaced => 1,
            Class::ClusterScoped => 2,
            Class::Role => 3,
            Class::Crd => 4,
            Class::Namespace => 5,
        }
    }
}

/// Where a Helm hook fired this run goes among the objects of its wave and tier; every
/// other object, hooks not fired included, is `Main`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Slot {
    Pre,
    Main,
    Post,
    Test,
}

/// A stage of a sync; stages run in ascending order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Stage {
    /// 0 for CRDs and Namespaces, 1 for everything else.
    phase: u8,
    wave: u32,
    tier: u32,
    slot: Slot,
    /// A fired hook's weight; 0 for the rest.
    weight: i32,
    pub(crate) class: Class,
}

impl Stage {
    pub(crate) fn new(class: Class, wave: u32, tier: u32) -> Stage {
        match class {
            Class::Crd | Class::Namespace => Stage { phase: 0, wave: 0, tier: 0, slot: Slot::Main, weight: 0, class },
            _ => Stage { phase: 1, wave, tier, slot: Slot::Main, weight: 0, class },
        }
    }

    /// Whether this stage still holds objects of the same release step as `earlier`: the
    /// release objects of its wave and tier, before their post- hooks.
    pub(crate) fn continues(self, earlier: Stage) -> bool {
        (self.phase, self.wave, self.tier, self.slot) == (earlier.phase, earlier.wave, earlier.tier, Slot::Main)
    }

    /// The stage of a hook fired in `slot` with `weight`.
    pub(crate) fn fired(self, slot: Slot, weight: i32) -> Stage {
        Stage { slot, weight, ..self }
    }
}

/// Each profile's wave: 0 without `dependsOn`, else one more than its highest dependency.
/// Verification rejects cycles; the loop is bounded anyway.
pub(crate) fn waves(profiles: &[ProfileEntry]) -> HashMap<&str, u32> {
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
    use super::*;
    use crate::engine::testing::profile;

    #[test]
    fn crd_before_namespace_before_cluster_scoped_before_namespaced() {
        let crd = Stage::new(Class::of(CRD_GROUP, CRD_KIND, false), 3, 500);
        let namespace = Stage::new(Class::of("", "Namespace", false), 2, 1);
        let cluster = Stage::new(Class::of("scheduling.k8s.io", "PriorityClass", false), 0, 100);
        let namespaced = Stage::new(Class::of("", "ConfigMap", true), 0, 100);
        let workload = Stage::new(Class::of("apps", "Deployment", true), 0, 100);
        let mut stages = vec![workload, namespaced, cluster, namespace, crd];
        stages.sort();
        assert_eq!(stages, vec![crd, namespace, cluster, namespaced, workload]);
    }

    #[test]
    fn roles_go_before_the_bindings_that_name_them() {
        let group = "rbac.authorization.k8s.io";
        let role = Stage::new(Class::of(group, "Role", true), 0, 100);
        let cluster_role = Stage::new(Class::of(group, "ClusterRole", false), 0, 100);
        let binding = Stage::new(Class::of(group, "RoleBinding", true), 0, 100);
        let cluster_binding = Stage::new(Class::of(group, "ClusterRoleBinding", false), 0, 100);
        assert_eq!(role, cluster_role, "one stage: applied together");
        assert!(role < cluster_binding && cluster_binding < binding);
        assert!(Class::Role.prune_rank() > Class::ClusterScoped.prune_rank(), "pruned after the bindings");
    }

    #[test]
    fn workloads_are_pods_and_what_makes_them() {
        for (group, kind) in
            [("", "Pod"), ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("batch", "Job"), ("batch", "CronJob")]
        {
            assert_eq!(Class::of(group, kind, true), Class::Workload, "{group}/{kind}");
        }
        // What a Pod needs is not a workload; a kind of the same name in another group is not either.
        for (group, kind) in [("", "ServiceAccount"), ("", "Secret"), ("", "ConfigMap"), ("example.com", "Deployment")] {
            assert_eq!(Class::of(group, kind, true), Class::Namespaced, "{group}/{kind}");
        }
        // In a later wave, a ConfigMap still follows the workloads of an earlier one.
        assert!(Stage::new(Class::Workload, 0, 100) < Stage::new(Class::Namespaced, 1, 100));
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
    fn fired_hooks_go_around_their_tier_by_weight() {
        let main = Stage::new(Class::Namespaced, 0, 100);
        let job = Stage::new(Class::Workload, 0, 100);
        let (heavy, light) = (job.fired(Slot::Pre, 5), job.fired(Slot::Pre, -5));
        let account = Stage::new(Class::Namespaced, 0, 100).fired(Slot::Pre, 5);
        let (post, test) = (job.fired(Slot::Post, -10), job.fired(Slot::Test, 0));
        let mut stages = vec![test, post, main, heavy, job, account, light];
        stages.sort();
        assert_eq!(stages, vec![light, account, heavy, main, job, post, test]);
        // Hooks stay inside their wave: a later wave's pre- hook follows an earlier wave's objects.
        assert!(Stage::new(Class::Workload, 0, 100).fired(Slot::Post, 0) < Stage::new(Class::Workload, 1, 100).fired(Slot::Pre, -9));
        // Waiting for a tier's objects ends where its post- hooks or the next tier begin.
        assert!(job.continues(main) && !post.continues(main) && !Stage::new(Class::Namespaced, 0, 101).continues(main));
    }

    #[test]
    fn prune_goes_the_other_way() {
        let mut classes = vec![Class::Crd, Class::Namespace, Class::Role, Class::ClusterScoped, Class::Namespaced, Class::Workload];
        classes.sort_by_key(|c| c.prune_rank());
        assert_eq!(classes, vec![Class::Workload, Class::Namespaced, Class::ClusterScoped, Class::Role, Class::Crd, Class::Namespace]);
    }
}
