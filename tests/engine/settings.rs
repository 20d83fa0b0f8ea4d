//! What the optional settings of a part and create-only objects change in what the engine
//! does to the cluster: a refusal stopping the rest of its part and its dependents
//! (`continueOnError`, spec 5.7), fields left to the cluster (`driftExclusions`, spec 5.8),
//! and objects created once and never touched again (spec 2.5.1).

use airlock_bundle::PartSettings;
use airlock_bundle::statement::{DriftExclusion, Target};
use airlock_bundle::{StopMatchingBehavior, SyncMode};
use airlock_puller::engine::{self, Action, NamespacePolicy};
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::{Files, Scenario, actions, config_map, deployment, detail, file, namespace};

/// The ConfigMap `broken` in `ns`, which the API server refuses: data values are strings.
fn broken(ns: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n  namespace: {ns}\ndata:\n  k: [1]\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_stops_the_rest_of_its_part_unless_it_continues_on_error_and_always_its_dependents() {
    let mut s = Scenario::new("stop").await;
    let ns = s.ns("app");
    // The Deployment goes in after the ConfigMaps of its wave, so it is not yet sent when
    // the refusal of `broken` arrives; `other` is in the same stage as `broken`, of a part
    // of its own; `after` depends on the refused part.
    let files = vec![
        file("ClusterProfile.base", "ns", namespace(&ns)),
        file("ClusterProfile.app", "broken", broken(&ns)),
        file("ClusterProfile.app", "deploy", deployment(&ns, "web", 1)),
        file("ClusterProfile.other", "cm", config_map(&ns, "other", "1")),
        file("ClusterProfile.after", "cm", config_map(&ns, "after", "1")),
    ];
    let settings = |continue_on_error: bool| {
        move |name: &str| PartSettings {
            depends_on: match name {
                "ClusterProfile.app" | "ClusterProfile.other" => vec!["ClusterProfile.base".into()],
                "ClusterProfile.after" => vec!["ClusterProfile.app".into()],
                _ => vec![],
            },
            continue_on_error: continue_on_error && name == "ClusterProfile.app",
            ..PartSettings::default()
        }
    };

    let stopped = s.sync_objects(s.desired_with(1, &files, &settings(false))).await;
    assert!(stopped.failed(), "{:#?}", stopped.results);
    let results = actions(&stopped);
    assert_eq!((results["ConfigMap broken"], results["ConfigMap other"]), (Action::Failed, Action::Created));
    assert_eq!((results["Deployment web"], results["ConfigMap after"]), (Action::Skipped, Action::Skipped));
    assert!(detail(&stopped, "web").contains("continueOnError is false"), "{}", detail(&stopped, "web"));
    assert!(detail(&stopped, "after").contains("depends on part ClusterProfile.app, which failed"), "{}", detail(&stopped, "after"));
    assert!(s.get("apps/v1", "Deployment", &ns, "web").await.is_none(), "not sent");
    assert!(s.get("v1", "ConfigMap", &ns, "other").await.is_some(), "an independent part goes on");

    let went_on = s.sync_objects(s.desired_with(1, &files, &settings(true))).await;
    assert!(went_on.failed(), "the refusal fails the run whatever the setting: {:#?}", went_on.results);
    let results = actions(&went_on);
    assert_eq!((results["ConfigMap broken"], results["Deployment web"]), (Action::Failed, Action::Created));
    assert_eq!(results["ConfigMap after"], Action::Skipped, "a part that depends on a failed one waits for it");
    assert!(s.get("apps/v1", "Deployment", &ns, "web").await.is_some());
    assert!(s.get("v1", "ConfigMap", &ns, "after").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_exclusions_leave_the_excluded_fields_to_the_cluster() {
    let mut s = Scenario::new("exclude").await;
    let ns = s.ns("app");
    let files: Files = vec![
        file("ClusterProfile.base", "ns", namespace(&ns)),
        file("ClusterProfile.watched", "deploy", deployment(&ns, "web", 2)),
        file("ClusterProfile.watched", "w1", config_map(&ns, "w1", "1")),
    ];
    let settings = |name: &str| match name {
        "ClusterProfile.watched" => PartSettings {
            sync_mode: SyncMode::ContinuousWithDriftDetection,
            drift_exclusions: vec![DriftExclusion {
                paths: vec!["/spec/replicas".into()],
                target: Some(Target { group: Some("apps".into()), kind: Some("Deploy.*".into()), ..Target::default() }),
            }],
            ..PartSettings::default()
        },
        _ => PartSettings::default(),
    };
    let first = s.sync_objects(s.desired_with(1, &files, &settings)).await;
    assert!(!first.failed(), "{:#?}", first.results);
    let deployments = s.namespaced("apps/v1", "Deployment", &ns);
    let replicas = || async { deployments.get("web").await.expect("web").data["spec"]["replicas"].clone() };
    assert_eq!(replicas().await, 2, "the first create applies the manifest whole");

    // Scaled by hand (an autoscaler, an operator): an excluded field.
    deployments.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 5}}))).await.expect("scaled");
    let quiet = s.correct_objects(s.desired_with(1, &files, &settings)).await;
    assert!(quiet.results.iter().all(|r| r.action == Action::Unchanged), "not drift: {:#?}", quiet.results);
    assert_eq!(replicas().await, 5);

    // A field that is not excluded is drift, and its correction leaves the excluded one.
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.20"}]}}}});
    deployments.patch("web", &PatchParams::default(), &Patch::Strategic(image)).await.expect("image changed");
    let corrected = s.correct_objects(s.desired_with(1, &files, &settings)).await;
    assert_eq!(actions(&corrected)["Deployment web"], Action::DriftCorrected, "{:#?}", corrected.results);
    assert!(detail(&corrected, "web").contains("image"), "{}", detail(&corrected, "web"));
    let web = deployments.get("web").await.expect("web");
    assert_eq!(web.data["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.19");
    assert_eq!(web.data["spec"]["replicas"], 5, "the correction left the excluded field as the cluster has it");

    // A new version of the Deployment is applied without the excluded field too.
    let mut v2 = files.clone();
    v2[1] = file(
        "ClusterProfile.watched",
        "deploy",
        deployment(&ns, "web", 2).replace("  name: web\n", "  name: web\n  labels:\n    tier: front\n"),
    );
    let applied = s.sync_objects(s.desired_with(2, &v2, &settings)).await;
    assert_eq!(actions(&applied)["Deployment web"], Action::Configured, "{:#?}", applied.results);
    let web = deployments.get("web").await.expect("web");
    assert_eq!((web.data["spec"]["replicas"].clone(), web.metadata.labels.unwrap_or_default()["tier"].clone()), (json!(5), "front".into()));
}

/// A Namespace marked create-only, with a label.
fn create_only_namespace(name: &str, stage: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    stage: \"{stage}\"\n  annotations:\n    \
         airlock.dev/create-only: \"true\"\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_only_namespace_is_created_once_and_never_updated_corrected_or_pruned() {
    let mut s = Scenario::new("once").await;
    let ns = s.ns("made");
    let parts = [("ClusterProfile.app", SyncMode::ContinuousWithDriftDetection, StopMatchingBehavior::WithdrawPolicies)];
    let v1 = vec![
        file("ClusterProfile.app", "ns", create_only_namespace(&ns, "one")),
        file("ClusterProfile.app", "cm", config_map(&ns, "a", "1")),
    ];
    let created = s.sync(1, &v1, &parts).await;
    assert_eq!(actions(&created)[&format!("Namespace {ns}")], Action::Created);
    assert!(!s.inventory.iter().any(|e| e.id.kind == "Namespace"), "not in the inventory: {:?}", s.inventory);
    let stage = |s: &Scenario| {
        let api = s.api("v1", "Namespace");
        let ns = ns.clone();
        async move { api.get(&ns).await.expect("namespace").metadata.labels.unwrap_or_default()["stage"].clone() }
    };

    let v2 = vec![
        file("ClusterProfile.app", "ns", create_only_namespace(&ns, "two")),
        file("ClusterProfile.app", "cm", config_map(&ns, "a", "1")),
    ];
    let again = s.sync(2, &v2, &parts).await;
    assert_eq!(actions(&again)[&format!("Namespace {ns}")], Action::Unchanged);
    assert!(detail(&again, &ns).contains("create-only"), "{}", detail(&again, &ns));
    assert_eq!(stage(&s).await, "one", "never updated");

    let relabel = json!({"metadata": {"labels": {"stage": "edited"}}});
    s.api("v1", "Namespace").patch(&ns, &PatchParams::default(), &Patch::Merge(relabel)).await.expect("relabelled");
    let checked = s.correct_drift(2, &v2, &parts).await;
    assert!(!actions(&checked).contains_key(&format!("Namespace {ns}")), "never compared: {:#?}", checked.results);
    assert_eq!(stage(&s).await, "edited", "never corrected");

    let v3 = vec![file("ClusterProfile.app", "cm", config_map(&ns, "a", "1"))];
    let dropped = s.sync(3, &v3, &parts).await;
    assert!(!actions(&dropped).contains_key(&format!("Namespace {ns}")), "{:#?}", dropped.results);
    assert!(s.exists_cluster_scoped("v1", "Namespace", &ns).await, "never pruned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_only_namespace_must_be_watched() {
    let mut s = Scenario::new("watchonce").await;
    let (inside, outside) = (s.ns("in"), s.ns("out"));
    let files = vec![
        file("ClusterProfile.app", "in", create_only_namespace(&inside, "one")),
        file("ClusterProfile.app", "out", create_only_namespace(&outside, "one")),
        file("ClusterProfile.app", "cm", config_map(&inside, "a", "1")),
    ];
    s.settings.watch_namespaces = Some(vec![inside.clone()]);
    let rejected = engine::sync(&s.client, s.desired(1, &files, &[]), &[], &s.settings).await;
    assert!(matches!(&rejected, Err(engine::EngineError::OutsideWatchNamespaces { objects }) if objects.len() == 1), "{rejected:?}");
    assert!(!s.exists_cluster_scoped("v1", "Namespace", &inside).await, "nothing applied");

    s.settings.namespace_policy = NamespacePolicy::Filter;
    let outcome = s.sync(1, &files, &[]).await;
    let results = actions(&outcome);
    assert_eq!((results[&format!("Namespace {inside}")], results[&format!("Namespace {outside}")]), (Action::Created, Action::Refused));
    assert!(!s.exists_cluster_scoped("v1", "Namespace", &outside).await);
}
