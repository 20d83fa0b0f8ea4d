//! What the sources yield and rendering reads: the checked [`Inventory`] of clusters,
//! profiles, sets, classifiers, event triggers and health checks (with what could not be
//! read), the [`Resources`] fetched for a run, and why a source could not be read at all.
//! Reading them from a directory or a cluster is `dir`'s and `live`'s.

use std::collections::BTreeMap;

use serde_json::Value;

use airlock_bundle::ClusterId;
use airlock_bundle::statement::Evaluation;

use super::broken::{Broken, Touches};
use super::classifier::Classifier;
use super::event_instances;
use super::event_trigger::EventTrigger;
use super::health_check::ClusterHealthCheck;
use super::key::ObjectKey;
use super::model::{CLUSTER_GROUP, ClusterSet, PROFILE_GROUP, Profile, SveltosCluster};
use super::parse::{
    parse_classifier, parse_cluster, parse_cluster_health_check, parse_event_source, parse_event_trigger, parse_health_check,
    parse_profile, parse_role_request, parse_set, part_of_unreadable,
};

/// Why the source could not be read at all; what one object breaks is a [`Broken`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum SourceError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("management cluster: {what}: {message}")]
    Kube { what: String, message: String },
}

/// Clusters, profiles and sets, checked, and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub clusters: Vec<SveltosCluster>,
    pub profiles: Vec<Profile>,
    pub sets: Vec<ClusterSet>,
    /// Every Classifier that could be read, by name: each pull-mode cluster's bundle
    /// carries them all, as Sveltos evaluates every Classifier on every cluster.
    pub classifiers: Vec<Classifier>,
    /// Every EventSource that could be read, by name: a cluster's bundle carries those the
    /// EventTriggers watching it name.
    pub event_sources: Vec<Evaluation>,
    /// Every EventTrigger that could be read, by name.
    pub event_triggers: Vec<EventTrigger>,
    /// Every HealthCheck that could be read, as the evaluation a bundle carries, by name.
    pub health_checks: Vec<Evaluation>,
    /// Every ClusterHealthCheck that could be read, by name: which clusters carry which
    /// HealthChecks.
    pub cluster_health_checks: Vec<ClusterHealthCheck>,
    pub broken: Vec<Broken>,
}

impl Inventory {
    /// Builds an inventory from objects of any kind (each with where it came from, for
    /// messages); kinds other than the Sveltos ones are ignored. An object that cannot be
    /// parsed is recorded as broken, with what it touches; the others are kept.
    pub fn from_objects<'a>(objects: impl IntoIterator<Item = (String, &'a Value)>) -> Inventory {
        let mut inv = Inventory::default();
        let mut event_reports = Vec::new();
        for (origin, value) in objects {
            let Some(key) = ObjectKey::of(value) else { continue };
            let broken = |message: String, what: Touches| Broken { origin: origin.clone(), what, message };
            match (key.group.as_str(), key.kind.as_str()) {
                (CLUSTER_GROUP, "SveltosCluster") => match parse_cluster(value) {
                    Ok(c) => inv.clusters.push(c),
                    Err(e) => {
                        let what = ClusterId::new(&key.namespace, &key.name).map_or(Touches::Unknown, Touches::Cluster);
                        inv.broken.push(broken(e.to_string(), what));
                    }
                },
                (PROFILE_GROUP, kind @ ("ClusterProfile" | "Profile")) => {
                    let namespaced = kind == "Profile";
                    match parse_profile(value, namespaced) {
                        Ok(p) => inv.profiles.push(p),
                        Err(e) => {
                            let what = part_of_unreadable(value, namespaced)
                                .map_or(Touches::Unknown, |(part, display)| Touches::Profile { part, display });
                            inv.broken.push(broken(e.to_string(), what));
                        }
                    }
                }
                (CLUSTER_GROUP, "RoleRequest") => match parse_role_request(value) {
                    Ok(p) => inv.profiles.push(p),
                    Err(e) => {
                        let (part, display) = (format!("RoleRequest.{}", key.name), format!("RoleRequest/{}", key.name));
                        inv.broken.push(broken(e.to_string(), Touches::Profile { part, display }));
                    }
                },
                (CLUSTER_GROUP, "Classifier") => match parse_classifier(value) {
                    Ok(c) => inv.classifiers.push(c),
                    Err(e) => inv.broken.push(broken(e.to_string(), Touches::Object(key))),
                },
                (CLUSTER_GROUP, "HealthCheck") => match parse_health_check(value) {
                    Ok(h) => inv.health_checks.push(h),
                    Err(e) => inv.broken.push(broken(e.to_string(), Touches::Object(key))),
                },
                (CLUSTER_GROUP, "ClusterHealthCheck") => match parse_cluster_health_check(value) {
                    Ok(c) => inv.cluster_health_checks.push(c),
                    Err(e) => inv.broken.push(broken(e.to_string(), Touches::Object(key))),
                },
                (CLUSTER_GROUP, "EventSource") => match parse_event_source(value) {
                    Ok(e) => inv.event_sources.push(e),
                    Err(e) => inv.broken.push(broken(e.to_string(), Touches::Object(key))),
                },
                (CLUSTER_GROUP, "EventTrigger") => match parse_event_trigger(value) {
                    Ok(t) => inv.event_triggers.push(t),
                    Err(e) => inv.broken.push(broken(e.to_string(), Touches::Object(key))),
                },
                (CLUSTER_GROUP, "EventReport") => event_reports.push((origin.clone(), value.clone())),
                (CLUSTER_GROUP, kind @ ("ClusterSet" | "Set")) => match parse_set(value, kind == "Set") {
                    Ok(s) => inv.sets.push(s),
                    Err(e) => inv.broken.push(broken(e.to_string(), Touches::Object(key))),
                },
                _ => {}
            }
        }
        inv.hold_profiles_of_broken_sets();
        event_instances::instantiate(&mut inv, &event_reports);
        inv.clusters.sort_by(|a, b| a.id.cmp(&b.id));
        inv.profiles.sort_by_key(Profile::part_name);
        inv.classifiers.sort_by(|a, b| a.name.cmp(&b.name));
        inv.health_checks.sort_by(|a, b| a.name.cmp(&b.name));
        inv.cluster_health_checks.sort_by(|a, b| a.name.cmp(&b.name));
        inv.event_sources.sort_by(|a, b| a.name.cmp(&b.name));
        inv.event_triggers.sort_by(|a, b| a.name.cmp(&b.name));
        inv
    }

    /// A profile selecting clusters through a set that cannot be read cannot tell its
    /// clusters: it is as broken as the set, so what clusters hold of it is kept.
    fn hold_profiles_of_broken_sets(&mut self) {
        let broken_sets: Vec<(ObjectKey, String)> = self
            .broken
            .iter()
            .filter_map(|b| match &b.what {
                Touches::Object(key) if key.group == CLUSTER_GROUP => Some((key.clone(), b.message.clone())),
                _ => None,
            })
            .collect();
        if broken_sets.is_empty() {
            return;
        }
        let mut kept = Vec::with_capacity(self.profiles.len());
        for profile in std::mem::take(&mut self.profiles) {
            let (kind, namespace) = match profile.own_namespace() {
                Some(ns) => ("Set", ns.to_string()),
                None => ("ClusterSet", String::new()),
            };
            let hit =
                broken_sets.iter().find(|(key, _)| key.kind == kind && key.namespace == namespace && profile.set_refs.contains(&key.name));
            match hit {
                Some((key, message)) => self.broken.push(Broken {
                    origin: profile.display(),
                    what: Touches::Profile { part: profile.part_name(), display: profile.display() },
                    message: format!("spec.setRefs names {key}, which cannot be read: {message}"),
                }),
                None => kept.push(profile),
            }
        }
        self.profiles = kept;
    }
}

/// Objects fetched for rendering, by key, and the references that could not be read. A
/// key in neither was not found.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    found: BTreeMap<ObjectKey, Value>,
    failed: BTreeMap<ObjectKey, String>,
}

/// What a fetch said of one key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lookup<'r> {
    Found(&'r Value),
    Missing,
    /// The source could not read it: the message says why.
    Failed(&'r str),
}

impl Resources {
    pub fn new(found: BTreeMap<ObjectKey, Value>, failed: BTreeMap<ObjectKey, String>) -> Resources {
        Resources { found, failed }
    }

    /// Resources that were all read.
    pub fn found(found: BTreeMap<ObjectKey, Value>) -> Resources {
        Resources { found, failed: BTreeMap::new() }
    }

    pub fn lookup(&self, key: &ObjectKey) -> Lookup<'_> {
        match (self.found.get(key), self.failed.get(key)) {
            (Some(v), _) => Lookup::Found(v),
            (None, Some(why)) => Lookup::Failed(why),
            (None, None) => Lookup::Missing,
        }
    }

    /// The object at `key`, when it was found.
    pub fn get(&self, key: &ObjectKey) -> Option<&Value> {
        self.found.get(key)
    }

    /// Every object found and every failure, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, Result<&Value, &str>)> {
        self.found.iter().map(|(k, v)| (k, Ok(v))).chain(self.failed.iter().map(|(k, why)| (k, Err(why.as_str()))))
    }

    /// Records what was read for `key` outside the source: found, not found, or why it
    /// could not be read.
    pub fn record(&mut self, key: ObjectKey, outcome: Result<Option<Value>, String>) {
        self.found.remove(&key);
        self.failed.remove(&key);
        match outcome {
            Ok(Some(value)) => {
                self.found.insert(key, value);
            }
            Ok(None) => {}
            Err(why) => {
                self.failed.insert(key, why);
            }
        }
    }

    #[cfg(test)]
    pub fn insert(&mut self, key: ObjectKey, value: Value) {
        self.found.insert(key, value);
    }

    #[cfg(test)]
    pub fn remove(&mut self, key: &ObjectKey) {
        self.found.remove(key);
    }
}

/// A fetched JSON object as its k8s-openapi type, with the reason when it is not one.
pub fn typed<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, String> {
    T::deserialize(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bad_object_is_broken_alone_and_names_its_origin_and_field() {
        let bad = json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
                         "metadata": {"name": "p"}, "spec": {"tier": "high"}});
        let good = json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile", "metadata": {"name": "q"}});
        let old = json!({"apiVersion": "lib.projectsveltos.io/v1alpha1", "kind": "SveltosCluster", "metadata": {"name": "c", "namespace": "fleet"}});
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let inv = Inventory::from_objects([
            ("a.yaml document 1".to_string(), &other),
            ("b.yaml document 2".to_string(), &bad),
            ("b.yaml document 3".to_string(), &good),
            ("c.yaml document 1".to_string(), &old),
        ]);
        assert_eq!(inv.profiles.iter().map(Profile::part_name).collect::<Vec<_>>(), ["ClusterProfile.q"]);
        assert_eq!(inv.broken.len(), 2, "{:?}", inv.broken);
        let profile = &inv.broken[0];
        assert_eq!(profile.origin, "b.yaml document 2");
        assert_eq!(profile.what, Touches::Profile { part: "ClusterProfile.p".into(), display: "ClusterProfile/p".into() });
        assert!(profile.message.starts_with("ClusterProfile/p: field spec.tier:"), "{}", profile.message);
        let cluster = &inv.broken[1];
        assert_eq!(cluster.what, Touches::Cluster("fleet/c".parse().unwrap()));
        assert!(
            cluster.to_string().contains("c.yaml document 1: SveltosCluster fleet/c: apiVersion lib.projectsveltos.io/v1alpha1"),
            "{cluster}"
        );
    }

    #[test]
    fn a_profile_of_a_broken_set_is_broken_too() {
        let set = json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "ClusterSet", "metadata": {"name": "prod"},
                         "status": {"selectedClusterRefs": "not a list"}});
        let profile = json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile", "metadata": {"name": "p"},
                             "spec": {"setRefs": ["prod"]}});
        let inv = Inventory::from_objects([("s".to_string(), &set), ("p".to_string(), &profile)]);
        assert!(inv.profiles.is_empty());
        assert!(
            inv.broken.iter().any(|b| matches!(&b.what, Touches::Profile { part, .. } if part == "ClusterProfile.p")
                && b.message.contains("ClusterSet.lib.projectsveltos.io prod")),
            "{:?}",
            inv.broken
        );
    }
}
