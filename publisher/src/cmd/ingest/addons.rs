//! What a verified report says each profile deployed on its cluster, in the shape Sveltos
//! keeps it: the status of the cluster's ClusterConfiguration (config.projectsveltos.io),
//! which `sveltosctl show addons` and the dashboard read, and per profile whether it failed
//! there. Pure functions over JSON: `profiles` turns the per-profile states into the
//! profiles' status, `sveltos_target` writes both.
//!
//! Only a run that applied a new bundle lists every object (spec 14.3); any other report is
//! merged over what the ClusterConfiguration held. A report lists objects, not where they
//! came from: each is recorded under the feature `Resources`, a Helm release's objects
//! too; the releases themselves are recorded under `Helm` (`charts`).

use std::collections::{BTreeMap, BTreeSet};

use airlock_bundle::ClusterId;
use airlock_bundle::statement::rfc3339;
use serde_json::{Map, Value, json};

use super::applied::{Effect, ReportedObject};
use super::charts::{self, Charts};
use super::configuration::{ProfileRef, feature_entries, ours, sections};
use super::report::{PullReport, RunResult};

/// The kind of cluster in Sveltos's names and labels.
const CLUSTER_TYPE: &str = "Sveltos";
/// Sveltos labels the objects it keeps per cluster with the cluster's name and type.
pub const CLUSTER_NAME_LABEL: &str = "projectsveltos.io/cluster-name";
pub const CLUSTER_TYPE_LABEL: &str = "projectsveltos.io/cluster-type";
/// A failure message is cut here, as the report's error is on its annotation.
const MAX_FAILURE_CHARS: usize = 1024;

/// The ClusterConfiguration of `cluster`, named as Sveltos names it: `sveltos--<name>`.
pub fn configuration_name(cluster: &ClusterId) -> String {
    format!("{}--{}", CLUSTER_TYPE.to_lowercase(), cluster.name())
}

/// The labels Sveltos sets on it.
pub fn configuration_labels(cluster: &ClusterId) -> Value {
    json!({CLUSTER_NAME_LABEL: cluster.name(), CLUSTER_TYPE_LABEL: CLUSTER_TYPE})
}

/// What becomes of a profile's failure on the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The report says nothing about it: what was recorded stays.
    Keep,
    Clear,
    Set(String),
}

/// One profile the ClusterConfiguration held or holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileState {
    pub profile: ProfileRef,
    /// Deployed on the cluster after the report (a matching cluster, for Sveltos).
    pub matching: bool,
    pub failure: Failure,
}

/// What one report changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Addons {
    /// The ClusterConfiguration's whole status.
    pub status: Value,
    pub profiles: Vec<ProfileState>,
}

/// One deployed object, keyed without its API version (one object under two versions is
/// one object, as the puller's inventory keys it).
type Key = (String, String, Option<String>, String);

#[derive(Debug, Clone, PartialEq)]
struct Deployed {
    version: String,
    time: String,
}

type Held = BTreeMap<ProfileRef, BTreeMap<Key, Deployed>>;

/// The change `report` of `cluster` makes to the ClusterConfiguration whose status is `old`
/// (`Value::Null` when there is none yet). `None` when the report saw no bundle: it says
/// nothing about the profiles.
pub fn addons(report: &PullReport, cluster: &ClusterId, old: &Value) -> Option<Addons> {
    report.bundle.as_ref()?;
    let finished = rfc3339::format(&report.finished_at);
    let before = held(old, cluster);
    let charts = charts::after(report, cluster, &charts::held(old, cluster), &finished);
    // A run that applied a new bundle lists all of it; what it does not list is gone.
    let complete = report.result == RunResult::Applied;
    let mut after: Held = if complete { BTreeMap::new() } else { before.clone() };
    let mut named: BTreeSet<ProfileRef> = BTreeSet::new();
    let mut failed: BTreeMap<ProfileRef, Vec<String>> = BTreeMap::new();
    for object in &report.objects {
        let Some(profile) = ours(&object.profile, cluster) else { continue };
        let key = (object.id.group.clone(), object.id.kind.clone(), object.id.namespace.clone(), object.id.name.clone());
        let earlier = before.get(&profile).and_then(|h| h.get(&key));
        let deployed = after.entry(profile.clone()).or_default();
        let effect = object.effect();
        match effect {
            Effect::Wrote => {
                deployed.insert(key, Deployed { version: object.id.version.clone(), time: finished.clone() });
            }
            // Not written this run: applied when it was last recorded (else by this run).
            Effect::Unchanged => {
                let time = earlier.map(|d| d.time.clone()).filter(|t| !t.is_empty()).unwrap_or_else(|| finished.clone());
                deployed.insert(key, Deployed { version: object.id.version.clone(), time });
            }
            Effect::Gone => {
                deployed.remove(&key);
            }
            Effect::Failed | Effect::Kept => {
                if let Some(earlier) = earlier {
                    deployed.insert(key, earlier.clone());
                }
            }
        }
        if effect != Effect::Gone {
            named.insert(profile.clone());
        }
        if effect == Effect::Failed {
            failed.entry(profile).or_default().push(object_failure(object));
        }
    }
    for notes in &report.profiles {
        let Some(profile) = ours(&notes.name, cluster) else { continue };
        named.insert(profile.clone());
        if let Some(failure) = &notes.failure {
            failed.entry(profile).or_default().insert(0, format!("render failed: {}", failure.message));
        }
    }
    named.extend(charts.keys().cloned());
    after.retain(|profile, deployed| !deployed.is_empty() || named.contains(profile) || (!complete && before.contains_key(profile)));
    for profile in &named {
        after.entry(profile.clone()).or_default();
    }
    // Whether this report tells every failure of a profile: a run that applied or checked
    // the bundle the cluster runs does, as does one that listed the profile's objects.
    let listed: BTreeSet<ProfileRef> = report.objects.iter().filter_map(|o| ours(&o.profile, cluster)).collect();
    let whole = matches!(report.result, RunResult::Applied | RunResult::UpToDate);
    let profiles: Vec<ProfileState> = before
        .keys()
        .chain(after.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|profile| {
            let failure = match failed.get(profile) {
                Some(messages) => Failure::Set(messages.join("; ").chars().take(MAX_FAILURE_CHARS).collect()),
                None if whole || listed.contains(profile) || !after.contains_key(profile) => Failure::Clear,
                None => Failure::Keep,
            };
            ProfileState { profile: profile.clone(), matching: after.contains_key(profile), failure }
        })
        .collect();
    Some(Addons { status: status_of(&after, &charts), profiles })
}

fn object_failure(object: &ReportedObject) -> String {
    let id = &object.id;
    let name = id.namespace.as_ref().map_or(id.name.clone(), |ns| format!("{ns}/{}", id.name));
    match &object.detail {
        Some(detail) => format!("{} {name}: {detail}", id.kind),
        None => format!("{} {name} failed", id.kind),
    }
}

/// What a ClusterConfiguration status holds, per profile; entries that do not parse are
/// dropped (the next complete report writes them again).
fn held(status: &Value, cluster: &ClusterId) -> Held {
    let mut held = Held::new();
    for (profile, section) in sections(status, cluster) {
        let deployed = held.entry(profile).or_default();
        for r in feature_entries(section, "resources") {
            let text = |k: &str| r[k].as_str().map(str::to_string);
            let (Some(group), Some(version), Some(kind), Some(name)) = (text("group"), text("version"), text("kind"), text("name")) else {
                continue;
            };
            let time = text("lastAppliedTime").unwrap_or_default();
            deployed.insert((group, kind, text("namespace").filter(|n| !n.is_empty()), name), Deployed { version, time });
        }
    }
    held
}

/// The ClusterConfiguration status of `held` and `charts`, sorted, every section complete.
fn status_of(held: &Held, charts: &Charts) -> Value {
    let (mut cluster_profiles, mut profiles) = (Vec::new(), Vec::new());
    for (profile, deployed) in held {
        let resources: Vec<Value> = deployed
            .iter()
            .map(|((group, kind, namespace, name), d)| {
                let mut r = Map::new();
                r.insert("group".into(), group.clone().into());
                r.insert("version".into(), d.version.clone().into());
                r.insert("kind".into(), kind.clone().into());
                r.insert("name".into(), name.clone().into());
                if let Some(ns) = namespace {
                    r.insert("namespace".into(), ns.clone().into());
                }
                r.insert("deploymentType".into(), "Remote".into());
                if !d.time.is_empty() {
                    r.insert("lastAppliedTime".into(), d.time.clone().into());
                }
                Value::Object(r)
            })
            .collect();
        let mut features = Vec::new();
        if let Some(charts) = charts.get(profile).filter(|c| !c.is_empty()) {
            features.push(json!({"featureID": charts::FEATURE, "charts": charts}));
        }
        if !resources.is_empty() {
            features.push(json!({"featureID": "Resources", "resources": resources}));
        }
        match profile {
            ProfileRef::ClusterProfile(name) => cluster_profiles.push(json!({"clusterProfileName": name, "Features": features})),
            ProfileRef::Profile { name, .. } => profiles.push(json!({"profileName": name, "Features": features})),
        }
    }
    json!({"clusterProfileResources": cluster_profiles, "profileResources": profiles})
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{T1, T2, cluster, report_with};
    use super::*;

    fn object(part: &str, kind: &str, namespace: Option<&str>, name: &str, action: &str) -> Value {
        let group = if kind == "Deployment" { "apps" } else { "" };
        json!({"id": {"group": group, "version": "v1", "kind": kind, "namespace": namespace, "name": name}, "profile": part, "action": action})
    }

    fn report(finished: &str, result: &str, objects: Vec<Value>, profiles: Value) -> PullReport {
        let bundle = json!({"version": 3, "digest": airlock_bundle::Digest::of(b"v3")});
        report_with(finished, result, json!({"bundle": bundle, "objects": objects, "profiles": profiles}))
    }

    fn state(profile: ProfileRef, matching: bool, failure: Failure) -> ProfileState {
        ProfileState { profile, matching, failure }
    }

    fn web() -> ProfileRef {
        ProfileRef::ClusterProfile("web".into())
    }

    fn monitoring() -> ProfileRef {
        ProfileRef::Profile { namespace: "fleet".into(), name: "monitoring".into() }
    }

    #[test]
    fn names_the_configuration_and_reads_part_names_as_sveltos_does() {
        assert_eq!(configuration_name(&cluster()), "sveltos--a");
        assert_eq!(
            configuration_labels(&cluster()),
            json!({"projectsveltos.io/cluster-name": "a", "projectsveltos.io/cluster-type": "Sveltos"})
        );
        assert_eq!(ProfileRef::of_part("ClusterProfile.web.v2"), Some(ProfileRef::ClusterProfile("web.v2".into())));
        assert_eq!(ProfileRef::of_part("Profile.fleet.monitoring"), Some(monitoring()));
        assert_eq!(ProfileRef::of_part("Airlock.system"), None);
    }

    #[test]
    fn an_applied_run_lists_each_profiles_resources_with_the_time_it_applied_them() {
        let objects = vec![
            object("ClusterProfile.web", "ConfigMap", Some("apps"), "settings", "created"),
            object("ClusterProfile.web", "Namespace", None, "apps", "unchanged"),
            object("Profile.fleet.monitoring", "Deployment", Some("mon"), "agent", "configured"),
            object("Profile.other.x", "ConfigMap", Some("x"), "x", "created"),
            object("Airlock.system", "ConfigMap", Some("airlock"), "y", "created"),
        ];
        let change = addons(&report(T1, "applied", objects, json!([])), &cluster(), &Value::Null).unwrap();
        let resource = |group: &str, kind: &str, ns: Option<&str>, name: &str| {
            let mut r =
                json!({"group": group, "version": "v1", "kind": kind, "name": name, "deploymentType": "Remote", "lastAppliedTime": T1});
            if let Some(ns) = ns {
                r["namespace"] = ns.into();
            }
            r
        };
        let expected = json!({
            "clusterProfileResources": [{"clusterProfileName": "web", "Features": [{"featureID": "Resources", "resources": [
                resource("", "ConfigMap", Some("apps"), "settings"), resource("", "Namespace", None, "apps")]}]}],
            "profileResources": [{"profileName": "monitoring", "Features": [{"featureID": "Resources", "resources": [
                resource("apps", "Deployment", Some("mon"), "agent")]}]}],
        });
        assert_eq!(change.status, expected);
        assert_eq!(change.profiles, [state(web(), true, Failure::Clear), state(monitoring(), true, Failure::Clear)]);

        // A later run: unchanged keeps the time it was applied, drift correction takes its own.
        let again = vec![
            object("ClusterProfile.web", "ConfigMap", Some("apps"), "settings", "driftCorrected"),
            object("ClusterProfile.web", "Namespace", None, "apps", "unchanged"),
        ];
        let later = addons(&report(T2, "up-to-date", again, json!([])), &cluster(), &change.status).unwrap();
        let times: Vec<&Value> = later.status["clusterProfileResources"][0]["Features"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["lastAppliedTime"])
            .collect();
        assert_eq!(times, [T2, T1]);
        assert_eq!(later.status["profileResources"], expected["profileResources"], "a partial report keeps the rest");
    }

    #[test]
    fn a_failed_object_or_render_fails_its_profile_and_a_new_bundle_drops_what_it_withdrew() {
        let mut failed = object("ClusterProfile.web", "ConfigMap", Some("apps"), "settings", "failed");
        failed["detail"] = "forbidden".into();
        let objects = vec![failed, object("Profile.fleet.monitoring", "Deployment", Some("mon"), "agent", "created")];
        let profiles = json!([{"name": "Profile.fleet.monitoring", "failure": {"message": "template: no key", "keptFrom": 2}}]);
        let change = addons(&report(T1, "error", objects, profiles), &cluster(), &Value::Null).unwrap();
        assert_eq!(
            change.profiles,
            [
                state(web(), true, Failure::Set("ConfigMap apps/settings: forbidden".into())),
                state(monitoring(), true, Failure::Set("render failed: template: no key".into())),
            ]
        );
        assert_eq!(change.status["clusterProfileResources"][0], json!({"clusterProfileName": "web", "Features": []}));

        // The next bundle no longer holds monitoring: it is pruned, and web recovered.
        let next = vec![
            object("ClusterProfile.web", "ConfigMap", Some("apps"), "settings", "created"),
            object("Profile.fleet.monitoring", "Deployment", Some("mon"), "agent", "pruned"),
        ];
        let after = addons(&report(T2, "applied", next, json!([])), &cluster(), &change.status).unwrap();
        assert_eq!(after.profiles, [state(web(), true, Failure::Clear), state(monitoring(), false, Failure::Clear)]);
        assert_eq!(after.status["profileResources"], json!([]));
    }

    #[test]
    fn a_run_that_says_nothing_about_a_profile_keeps_its_failure_and_one_without_a_bundle_changes_nothing() {
        let held = json!({"clusterProfileResources": [{"clusterProfileName": "web", "Features": []}]});
        let deferred = addons(&report(T2, "deferred", vec![], json!([])), &cluster(), &held).unwrap();
        assert_eq!(deferred.profiles, [state(web(), true, Failure::Keep)]);
        assert_eq!(deferred.status["clusterProfileResources"], held["clusterProfileResources"]);
        let mut unreached = report(T2, "error", vec![], json!([]));
        unreached.bundle = None;
        assert_eq!(addons(&unreached, &cluster(), &held), None);
    }
}
