//! The puller's apply engine against the real Kubernetes 1.20 API server of
//! `hack/services.sh` (`AIRLOCK_KUBECONFIG_MANAGED`), through its API (`desired`, `sync`,
//! `check_drift` and `correct`, `plan`) with real verified bundles. The puller binary's own end-to-end
//! tests drive the process; these pin what the engine does to the cluster.
//!
//! Every test works in namespaces of its own and labels objects with a cluster id of its
//! own, so tests run in parallel and reruns never collide. What the optional part settings
//! and create-only objects change (spec 2.5.1, 5.7, 5.8) is in `engine/settings.rs`, and
//! objects recreated when an update is refused (spec 2.5.2) in `engine/recreate.rs`, the
//! reloader (spec 5.10) in `engine/reload.rs`, Helm hooks (spec 2.5.3) in `engine/hooks.rs`,
//! what a release's options ask of the site (wait, cleanup, deletion propagation) in
//! `engine/release.rs`.

mod hooks;
mod recreate;
mod release;
mod reload;
mod scenario;
mod settings;

use std::collections::BTreeMap;

use airlock_bundle::{StopMatchingBehavior, SyncMode};
use airlock_puller::engine::{self, Action, EngineError, NamespacePolicy};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::json;

use scenario::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_sync_creates_everything_and_an_unchanged_resync_writes_nothing() {
    let mut s = Scenario::new("first").await;
    let (ns, group) = (s.ns("app"), s.group());
    let files = vec![
        file("ClusterProfile.app", "cm-a", config_map(&ns, "a", "1")),
        file("ClusterProfile.app", "cm-b", config_map(&ns, "b", "2")),
        file("ClusterProfile.app", "deploy", deployment(&ns, "web", 1)),
        file("ClusterProfile.app", "svc", service(&ns, "web")),
        file("ClusterProfile.app", "widget", widget(&group, &ns, "w")),
        file("ClusterProfile.base", "crd", crd(&group)),
        file("ClusterProfile.base", "ns", namespace(&ns)),
    ];
    let first = s.sync(1, &files, &[]).await;
    assert_eq!(first.results.len(), 7);
    assert!(first.results.iter().all(|r| r.action == Action::Created), "{:#?}", first.results);
    assert_eq!(s.inventory.len(), 7);

    // The CRD and its instance went in in one run; the Service port got its protocol.
    let widget = s.get(&format!("{group}/v1"), "Widget", &ns, "w").await.expect("widget exists");
    assert_eq!(widget.data["spec"]["size"], 3);
    let labels = widget.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("airlock.dev/profile").map(String::as_str), Some("ClusterProfile.app"));
    assert_eq!(widget.metadata.annotations.unwrap_or_default().get("airlock.dev/version").map(String::as_str), Some("1"));
    let service = s.get("v1", "Service", &ns, "web").await.expect("service exists");
    assert_eq!(service.data["spec"]["ports"][0]["protocol"], "TCP");

    let widgets = format!("{group}/v1");
    let kinds = [("v1", "ConfigMap"), ("v1", "Service"), ("v1", "Namespace"), ("apps/v1", "Deployment"), (widgets.as_str(), "Widget")];
    let before = s.snapshot(&kinds).await;
    assert_eq!(before.len(), 6, "{before:?}");
    let again = s.sync(1, &files, &[]).await;
    assert!(again.results.iter().all(|r| r.action == Action::Unchanged), "{:#?}", again.results);
    // Only discovery: v1, apps/v1, apiextensions.k8s.io/v1 and the Widget group.
    assert!(again.api_requests <= 4, "{} requests", again.api_requests);
    assert_eq!(s.snapshot(&kinds).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_sync_reads_what_it_would_take_over_once_per_kind_and_namespace() {
    let mut s = Scenario::new("reads").await;
    let ns = s.ns("app");
    let mut files = vec![file("ClusterProfile.base", "ns", namespace(&ns)), file("ClusterProfile.app", "svc", service(&ns, "web"))];
    files.extend((0..6).map(|i| file("ClusterProfile.app", &format!("cm-{i}"), config_map(&ns, &format!("cm-{i}"), "1"))));
    let first = s.sync(1, &files, &[]).await;
    assert!(first.results.iter().all(|r| r.action == Action::Created), "{:#?}", first.results);
    // Discovery of v1; the ownership check's reads: the Namespace and the lone Service by
    // GET, the six ConfigMaps by one LIST; then one apply per object.
    assert_eq!(first.api_requests, 1 + 3 + 8, "{} requests", first.api_requests);
}

/// The revision at which each object named `names` was created in `ns`, read back from the
/// API server's watch history since `since` (the revisions of one etcd, so comparable).
async fn created_at(api: &Api<DynamicObject>, since: &str, names: &[&str]) -> BTreeMap<String, u64> {
    let mut created = BTreeMap::new();
    let mut events = api.watch(&WatchParams::default().timeout(10), since).await.expect("watch").boxed();
    while created.len() < names.len() {
        match events.try_next().await.expect("watch event") {
            Some(WatchEvent::Added(object)) => {
                let name = object.metadata.name.clone().unwrap_or_default();
                if names.contains(&name.as_str()) {
                    created.insert(name, object.metadata.resource_version.unwrap_or_default().parse().expect("etcd revision"));
                }
            }
            Some(_) => {}
            None => panic!("the watch ended with {created:?} of {names:?}"),
        }
    }
    created
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_go_in_after_the_config_and_service_accounts_of_their_wave() {
    let mut s = Scenario::new("order").await;
    let ns = s.ns("app");
    let (config_maps, accounts, deployments) =
        (s.namespaced("v1", "ConfigMap", &ns), s.namespaced("v1", "ServiceAccount", &ns), s.namespaced("apps/v1", "Deployment", &ns));
    // The cluster's revision before the sync: the watches below replay from here.
    let since = config_maps.list(&ListParams::default().limit(1)).await.expect("list").metadata.resource_version.expect("revision");
    // In path order the Deployment comes before its ServiceAccount, and with 4 objects in
    // flight it would be sent among the ConfigMaps.
    let web =
        deployment(&ns, "web", 1).replace("    spec:\n      containers:", "    spec:\n      serviceAccountName: runner\n      containers:");
    let mut files = app(&ns, &[("c1", "1"), ("c2", "1"), ("c3", "1"), ("c4", "1"), ("c5", "1")]);
    files.push(file("ClusterProfile.app", "deploy", web));
    files.push(file(
        "ClusterProfile.app",
        "sa",
        format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: runner\n  namespace: {ns}\n"),
    ));
    let outcome = s.sync(1, &files, &[]).await;
    assert!(outcome.results.iter().all(|r| r.action == Action::Created), "{:#?}", outcome.results);

    let mut config = created_at(&config_maps, &since, &["c1", "c2", "c3", "c4", "c5"]).await;
    config.extend(created_at(&accounts, &since, &["runner"]).await);
    let web = created_at(&deployments, &since, &["web"]).await["web"];
    let last = config.values().max().copied().unwrap_or_default();
    assert!(last < web, "the Deployment was created at {web}, before its config was all in ({config:?})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_version_applies_exactly_the_difference_and_leaves_foreign_objects() {
    let mut s = Scenario::new("diff").await;
    let ns = s.ns("app");
    let v1 = app(&ns, &[("a", "1"), ("b", "1"), ("c", "1")]);
    s.sync(1, &v1, &[]).await;
    // An object Airlock did not create, wrongly listed in the inventory, is not deleted.
    let foreign = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "foreign", "namespace": ns}});
    s.namespaced("v1", "ConfigMap", &ns)
        .patch("foreign", &PatchParams::apply("someone-else"), &Patch::Apply(&foreign))
        .await
        .expect("create");
    let mut fake = s.inventory.iter().find(|e| e.id.name == "c").cloned().expect("c in inventory");
    fake.id.name = "foreign".into();
    s.inventory.push(fake);

    let before = s.snapshot(&[("v1", "ConfigMap")]).await;
    let v2 = app(&ns, &[("a", "1"), ("b", "2"), ("d", "1")]);
    let outcome = s.sync(2, &v2, &[]).await;
    let mut expected = expect(&[
        ("ConfigMap a", Action::Unchanged),
        ("ConfigMap b", Action::Configured),
        ("ConfigMap c", Action::Pruned),
        ("ConfigMap d", Action::Created),
        ("ConfigMap foreign", Action::Left),
    ]);
    expected.insert(format!("Namespace {ns}"), Action::Unchanged);
    assert_eq!(actions(&outcome), expected);
    assert!(detail(&outcome, "foreign").contains("not Airlock's"), "{}", detail(&outcome, "foreign"));

    let after = s.snapshot(&[("v1", "ConfigMap")]).await;
    assert_eq!(after[&format!("ConfigMap {ns}/a")], before[&format!("ConfigMap {ns}/a")], "a was not written");
    assert!(!after.contains_key(&format!("ConfigMap {ns}/c")));
    assert!(s.get("v1", "ConfigMap", &ns, "foreign").await.is_some());
    assert_eq!(s.get("v1", "ConfigMap", &ns, "b").await.expect("b").data["data"]["k"], "2");
    let mut names: Vec<&str> = s.inventory.iter().map(|e| e.id.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["a", "b", "d", ns.as_str()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leave_policies_leaves_objects_and_one_time_is_not_updated() {
    let mut s = Scenario::new("leave").await;
    let ns = s.ns("app");
    let parts = [
        ("ClusterProfile.keep", SyncMode::Continuous, StopMatchingBehavior::LeavePolicies),
        ("ClusterProfile.once", SyncMode::OneTime, StopMatchingBehavior::WithdrawPolicies),
    ];
    let v1 = vec![
        file("ClusterProfile.base", "ns", namespace(&ns)),
        file("ClusterProfile.keep", "kept", config_map(&ns, "kept", "1")),
        file("ClusterProfile.once", "once", config_map(&ns, "once", "1")),
    ];
    s.sync(1, &v1, &parts).await;
    let v2 = vec![file("ClusterProfile.base", "ns", namespace(&ns)), file("ClusterProfile.once", "once", config_map(&ns, "once", "2"))];
    let outcome = s.sync(2, &v2, &parts).await;
    let results = actions(&outcome);
    assert_eq!(results["ConfigMap kept"], Action::Left);
    assert_eq!(results["ConfigMap once"], Action::Unchanged);
    assert!(s.get("v1", "ConfigMap", &ns, "kept").await.is_some(), "LeavePolicies left it in place");
    assert_eq!(s.get("v1", "ConfigMap", &ns, "once").await.expect("once").data["data"]["k"], "1", "OneTime never updates");
    assert!(!s.inventory.iter().any(|e| e.id.name == "kept"), "released from the inventory");
    assert!(s.inventory.iter().any(|e| e.id.name == "once"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_corrected_only_under_drift_detection() {
    let mut s = Scenario::new("drift").await;
    let ns = s.ns("app");
    let parts = [("ClusterProfile.watched", SyncMode::ContinuousWithDriftDetection, StopMatchingBehavior::WithdrawPolicies)];
    let files = vec![
        file("ClusterProfile.base", "ns", namespace(&ns)),
        file("ClusterProfile.plain", "p", config_map(&ns, "p", "1")),
        file("ClusterProfile.watched", "deploy", deployment(&ns, "web", 1)),
        file("ClusterProfile.watched", "w1", config_map(&ns, "w1", "1")),
        file("ClusterProfile.watched", "w2", config_map(&ns, "w2", "1")),
    ];
    s.sync(1, &files, &parts).await;

    let quiet = s.correct_drift(1, &files, &parts).await;
    assert!(quiet.results.iter().all(|r| r.action == Action::Unchanged) && quiet.results.len() == 3, "{:#?}", quiet.results);
    // One list per kind (2 kinds): the kinds the sync learnt need no discovery.
    assert_eq!(quiet.api_requests, 2, "one list per kind");

    let edit = PatchParams::default();
    let config_maps = s.namespaced("v1", "ConfigMap", &ns);
    for name in ["w1", "p"] {
        config_maps.patch(name, &edit, &Patch::Merge(json!({"data": {"k": "edited"}}))).await.expect("edit");
    }
    config_maps.delete("w2", &DeleteParams::default()).await.expect("delete");
    s.namespaced("apps/v1", "Deployment", &ns).patch("web", &edit, &Patch::Merge(json!({"spec": {"replicas": 3}}))).await.expect("scale");

    let outcome = s.correct_drift(1, &files, &parts).await;
    assert!(!outcome.failed(), "{:#?}", outcome.results);
    let expected = expect(&[
        ("ConfigMap w1", Action::DriftCorrected),
        ("ConfigMap w2", Action::DriftCorrected),
        ("Deployment web", Action::DriftCorrected),
    ]);
    assert_eq!(actions(&outcome), expected);
    assert!(detail(&outcome, "w1").contains("data.k"), "{}", detail(&outcome, "w1"));
    assert!(detail(&outcome, "w2").contains("deleted"), "{}", detail(&outcome, "w2"));
    assert!(detail(&outcome, "web").contains("spec.replicas"), "{}", detail(&outcome, "web"));
    // Two lists, three re-applies.
    assert_eq!(outcome.api_requests, 2 + 3, "{} requests", outcome.api_requests);

    assert_eq!(s.get("v1", "ConfigMap", &ns, "w1").await.expect("w1").data["data"]["k"], "1");
    assert!(s.get("v1", "ConfigMap", &ns, "w2").await.is_some());
    assert_eq!(s.get("apps/v1", "Deployment", &ns, "web").await.expect("web").data["spec"]["replicas"], 1);
    assert_eq!(s.get("v1", "ConfigMap", &ns, "p").await.expect("p").data["data"]["k"], "edited", "Continuous: not corrected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_deleted_by_hand_is_restored_with_its_objects_by_the_drift_check() {
    let mut s = Scenario::new("crdgone").await;
    let (ns, group) = (s.ns("app"), s.group());
    let parts = [("ClusterProfile.watched", SyncMode::ContinuousWithDriftDetection, StopMatchingBehavior::WithdrawPolicies)];
    let files = vec![
        file("ClusterProfile.base", "ns", namespace(&ns)),
        file("ClusterProfile.watched", "crd", crd(&group)),
        file("ClusterProfile.watched", "widget", widget(&group, &ns, "w")),
    ];
    s.sync(1, &files, &parts).await;
    let widgets = format!("{group}/v1");
    assert!(
        s.kinds.iter().any(|k| k.api_version == widgets && k.plural == "widgets" && k.namespaced),
        "the sync learnt how Widgets are served: {:?}",
        s.kinds
    );

    let crd_name = format!("widgets.{group}");
    let crds = s.api("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    crds.delete(&crd_name, &DeleteParams::default()).await.expect("CRD deleted");
    let started = std::time::Instant::now();
    while s.exists_cluster_scoped("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd_name).await {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the CRD is never gone");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // The Widget kind, known from the sync, now answers its list with 404: not served.
    let outcome = s.correct_drift(1, &files, &parts).await;
    assert!(!outcome.failed(), "{:#?}", outcome.results);
    let crd_key = format!("CustomResourceDefinition {crd_name}");
    let expected = expect(&[(crd_key.as_str(), Action::DriftCorrected), ("Widget w", Action::DriftCorrected)]);
    assert_eq!(actions(&outcome), expected);
    assert!(detail(&outcome, "w").contains("not served"), "{}", detail(&outcome, "w"));
    assert_eq!(s.get(&widgets, "Widget", &ns, "w").await.expect("widget restored").data["spec"]["size"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_dry_run_and_dry_run_profiles_change_nothing() {
    let mut s = Scenario::new("dry").await;
    let (ns, group) = (s.ns("app"), s.group());
    let preview = [("ClusterProfile.preview", SyncMode::DryRun, StopMatchingBehavior::WithdrawPolicies)];
    let mut v1 = app(&ns, &[("a", "1"), ("c", "1")]);
    v1.extend([
        file("ClusterProfile.base", "crd", crd(&group)),
        file("ClusterProfile.preview", "p", config_map(&ns, "p", "1")),
        file("ClusterProfile.preview", "widget", widget(&group, &ns, "w")),
    ]);
    // A plan from scratch: nothing exists yet, not even the namespace or the CRD.
    let planned = engine::plan(&s.client, s.desired(1, &v1, &preview), &[], &s.settings).await.expect("plan").outcome;
    assert!(planned.results.iter().all(|r| r.action == Action::WouldCreate), "{:#?}", planned.results);
    assert!(detail(&planned, "a").contains("namespace"), "{}", detail(&planned, "a"));
    assert!(detail(&planned, "w").contains("CRD"), "{}", detail(&planned, "w"));
    assert!(!s.exists_cluster_scoped("v1", "Namespace", &ns).await);

    let first = s.sync(1, &v1, &preview).await;
    let results = actions(&first);
    assert_eq!((results["ConfigMap p"], results["Widget w"]), (Action::WouldCreate, Action::WouldCreate));
    assert!(s.get("v1", "ConfigMap", &ns, "p").await.is_none(), "a DryRun profile applies nothing");
    assert!(s.get(&format!("{group}/v1"), "Widget", &ns, "w").await.is_none());
    assert!(!s.inventory.iter().any(|e| e.id.name == "p" || e.id.name == "w"));

    let kinds = [("v1", "ConfigMap"), ("v1", "Namespace")];
    let before = s.snapshot(&kinds).await;
    let mut v2 = app(&ns, &[("a", "2"), ("b", "1")]);
    v2.push(file("ClusterProfile.base", "crd", crd(&group)));
    let planned = engine::plan(&s.client, s.desired(2, &v2, &[]), &s.inventory, &s.settings).await.expect("plan").outcome;
    let mut dry = s.settings.clone();
    dry.dry_run = true;
    let dry_synced = engine::sync(&s.client, s.desired(2, &v2, &[]), &s.inventory, &dry).await.expect("dry-run sync");
    for outcome in [&planned, &dry_synced] {
        let results = actions(outcome);
        assert_eq!(results["ConfigMap a"], Action::WouldConfigure, "{:#?}", outcome.results);
        assert_eq!(detail(outcome, "a"), "data.k: \"1\" → \"2\"");
        assert_eq!(results["ConfigMap b"], Action::WouldCreate);
        assert_eq!(results["ConfigMap c"], Action::WouldPrune);
        assert_eq!(outcome.inventory, s.inventory);
    }
    assert_eq!(s.snapshot(&kinds).await, before, "nothing was written");
    assert!(s.get("v1", "ConfigMap", &ns, "b").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_namespaces_reject_applies_nothing_and_filter_applies_the_rest() {
    let mut s = Scenario::new("watch").await;
    let (inside, outside) = (s.ns("in"), s.ns("out"));
    let files = vec![
        file("ClusterProfile.app", "in", config_map(&inside, "in", "1")),
        file("ClusterProfile.app", "out1", config_map(&outside, "out1", "1")),
        file("ClusterProfile.app", "out2", config_map(&outside, "out2", "1")),
        file("ClusterProfile.base", "ns-in", namespace(&inside)),
        file("ClusterProfile.base", "ns-out", namespace(&outside)),
    ];
    s.settings.watch_namespaces = Some(vec![inside.clone()]);
    let rejected = engine::sync(&s.client, s.desired(1, &files, &[]), &[], &s.settings).await;
    let Err(EngineError::OutsideWatchNamespaces { objects }) = rejected else { panic!("expected a rejection: {rejected:?}") };
    // The Namespace outside the list is cluster-scoped and not allowed (spec 5.12).
    assert_eq!(objects.len(), 3, "{objects:?}");
    assert!(objects.iter().any(|o| o.contains("out1")) && objects.iter().any(|o| o.contains("out2")), "{objects:?}");
    assert!(
        objects.iter().any(|o| o.starts_with(&format!("Namespace {outside} (")) && o.ends_with("cluster-scoped and not in clusterScoped"))
    );
    assert!(!s.exists_cluster_scoped("v1", "Namespace", &inside).await, "nothing applied");

    s.settings.namespace_policy = NamespacePolicy::Filter;
    let outcome = s.sync(1, &files, &[]).await;
    let results = actions(&outcome);
    assert_eq!(results["ConfigMap in"], Action::Created);
    assert_eq!((results["ConfigMap out1"], results["ConfigMap out2"]), (Action::Refused, Action::Refused));
    assert_eq!(results[&format!("Namespace {outside}")], Action::Refused);
    assert!(detail(&outcome, "out1").contains("outside watch-namespaces"));
    assert!(s.get("v1", "ConfigMap", &inside, "in").await.is_some());
    assert!(s.get("v1", "ConfigMap", &outside, "out1").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_object_fails_the_run_and_nothing_is_pruned() {
    let mut s = Scenario::new("fail").await;
    let ns = s.ns("app");
    let v1 = app(&ns, &[("a", "1"), ("c", "1")]);
    s.sync(1, &v1, &[]).await;
    // ConfigMap data values must be strings: the API server refuses this one.
    let broken = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n  namespace: {ns}\ndata:\n  k: [1]\n");
    let mut v2 = app(&ns, &[("a", "2")]);
    v2.push(file("ClusterProfile.app", "broken", broken));
    let outcome = engine::sync(&s.client, s.desired(2, &v2, &[]), &s.inventory, &s.settings).await.expect("sync runs");
    assert!(outcome.failed());
    let results = actions(&outcome);
    assert_eq!((results["ConfigMap broken"], results["ConfigMap a"]), (Action::Failed, Action::Configured));
    assert!(!detail(&outcome, "broken").is_empty());
    assert!(!results.contains_key("ConfigMap c"), "no prune after a failure: {results:?}");
    assert!(s.get("v1", "ConfigMap", &ns, "c").await.is_some());
}
