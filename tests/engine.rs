//! The puller's apply engine against the real Kubernetes 1.20 API server of
//! `hack/services.sh` (`AIRLOCK_KUBECONFIG_MANAGED`), through its API (`desired`, `sync`,
//! `check_drift` and `correct`, `plan`) with real verified bundles. The puller binary's own end-to-end
//! tests drive the process; these pin what the engine does to the cluster.
//!
//! Every test works in namespaces of its own and labels objects with a cluster id of its
//! own, so tests run in parallel and reruns never collide. What the optional part settings
//! and create-only objects change (spec 2.5.1, 5.7, 5.8) is in `engine/settings.rs`.

mod common;
#[path = "engine/settings.rs"]
mod settings;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use airlock_bundle::{PartSettings, StopMatchingBehavior, SyncMode};
use airlock_cli::{KubeArgs, install_crypto_provider};
use airlock_puller::engine::{self, Action, DesiredObject, EngineError, InventoryEntry, KnownKind, NamespacePolicy, Outcome, Settings};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::core::GroupVersionKind;
use serde_json::json;

/// One test's corner of the cluster: its namespaces, its cluster label, its inventory.
struct Scenario {
    client: kube::Client,
    /// Prefix of every namespace and CRD group the test creates.
    id: String,
    settings: Settings,
    inventory: Vec<InventoryEntry>,
    /// How the inventory's kinds are served, as the last sync learnt.
    kinds: Vec<KnownKind>,
}

type Files = Vec<(String, String)>;

impl Scenario {
    async fn new(test: &str) -> Scenario {
        install_crypto_provider();
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let stamp = jiff::Timestamp::now().as_second() % 100_000;
        let id = format!("eng-{test}-{stamp}-{}-{n}", std::process::id() % 100_000);
        let kube = KubeArgs { kubeconfig: Some(common::service_env("AIRLOCK_KUBECONFIG_MANAGED").into()), context: None };
        let client = kube.client().await.expect("client for the managed apiserver");
        let settings = Settings {
            cluster: format!("e2e/{id}"),
            watch_namespaces: None,
            namespace_policy: NamespacePolicy::Reject,
            own_namespace: None,
            dry_run: false,
            concurrency: 4,
            held_back: Default::default(),
        };
        Scenario { client, id, settings, inventory: Vec::new(), kinds: Vec::new() }
    }

    fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.id)
    }

    /// A CRD group of this test's own.
    fn group(&self) -> String {
        format!("{}.e2e.airlock.dev", self.id)
    }

    fn desired(&self, version: u64, files: &Files, parts: &[(&str, SyncMode, StopMatchingBehavior)]) -> Vec<DesiredObject> {
        let settings = |name: &str| {
            let (_, sync_mode, stop_matching_behavior) = parts.iter().find(|(p, ..)| *p == name).copied().unwrap_or((
                "",
                SyncMode::Continuous,
                StopMatchingBehavior::WithdrawPolicies,
            ));
            let depends_on = if name == "ClusterProfile.app" { vec!["ClusterProfile.base".to_string()] } else { vec![] };
            let depends_on = depends_on.into_iter().filter(|d| files.iter().any(|(p, _)| p.starts_with(d.as_str()))).collect();
            PartSettings { sync_mode, stop_matching_behavior, depends_on, ..PartSettings::default() }
        };
        self.desired_with(version, files, &settings)
    }

    /// The desired objects of `files` signed as `version`, each part with the settings `settings` gives it.
    fn desired_with(&self, version: u64, files: &Files, settings: &dyn Fn(&str) -> PartSettings) -> Vec<DesiredObject> {
        engine::desired(&engine::testing::verified(version, files, settings), &self.settings).expect("bundle parses")
    }

    /// A sync that must succeed; its inventory becomes the previous one of the next run.
    async fn sync(&mut self, version: u64, files: &Files, parts: &[(&str, SyncMode, StopMatchingBehavior)]) -> Outcome {
        let outcome = self.sync_objects(self.desired(version, files, parts)).await;
        assert!(!outcome.failed(), "{:#?}", outcome.results);
        outcome
    }

    /// A sync of `desired`; unless it failed, its inventory becomes the previous one of the
    /// next run, as the puller records it.
    async fn sync_objects(&mut self, desired: Vec<DesiredObject>) -> Outcome {
        let outcome = engine::sync(&self.client, desired, &self.inventory, &self.settings).await.expect("sync runs");
        if !outcome.failed() {
            self.inventory = outcome.inventory.clone();
            self.kinds = outcome.kinds.clone();
        }
        outcome
    }

    /// A drift check of the bundle applied last, corrected: both steps, as a sync runs them.
    async fn correct_drift(&self, version: u64, files: &Files, parts: &[(&str, SyncMode, StopMatchingBehavior)]) -> Outcome {
        self.correct_objects(self.desired(version, files, parts)).await
    }

    /// [`Scenario::correct_drift`] of `desired`.
    async fn correct_objects(&self, desired: Vec<DesiredObject>) -> Outcome {
        let check = engine::check_drift(&self.client, desired, &self.kinds, &self.settings).await.expect("drift check");
        check.correct(&self.inventory, &self.settings).await.expect("drift correction")
    }

    fn api(&self, api_version: &str, kind: &str) -> Api<DynamicObject> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        Api::all_with(self.client.clone(), &ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)))
    }

    fn namespaced(&self, api_version: &str, kind: &str, ns: &str) -> Api<DynamicObject> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        Api::namespaced_with(self.client.clone(), ns, &resource)
    }

    /// Every object of the test's label, as "Kind ns/name" → resourceVersion (generation
    /// for Deployments, whose status the controllers keep writing).
    async fn snapshot(&self, kinds: &[(&str, &str)]) -> BTreeMap<String, String> {
        // Cluster ids this short are their own label value, with `/` made `.`.
        let selector = format!("airlock.dev/cluster={}", self.settings.cluster.replace('/', "."));
        let mut out = BTreeMap::new();
        for (api_version, kind) in kinds {
            for object in self.api(api_version, kind).list(&ListParams::default().labels(&selector)).await.expect("list").items {
                let meta = &object.metadata;
                let version = if *kind == "Deployment" {
                    meta.generation.unwrap_or_default().to_string()
                } else {
                    meta.resource_version.clone().unwrap_or_default()
                };
                out.insert(
                    format!("{kind} {}/{}", meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default()),
                    version,
                );
            }
        }
        out
    }

    async fn get(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<DynamicObject> {
        self.namespaced(api_version, kind, ns).get_opt(name).await.expect("get")
    }

    async fn exists_cluster_scoped(&self, api_version: &str, kind: &str, name: &str) -> bool {
        self.api(api_version, kind).get_opt(name).await.expect("get").is_some()
    }
}

/// Deletes what the test created (its namespaces and CRDs, found by its cluster label),
/// also when the test failed, without waiting for namespace finalization.
impl Drop for Scenario {
    fn drop(&mut self) {
        let selector = format!("airlock.dev/cluster={}", self.settings.cluster.replace('/', "."));
        let _ = std::process::Command::new(common::service_env("AIRLOCK_KUBECTL"))
            .arg("--kubeconfig")
            .arg(common::service_env("AIRLOCK_KUBECONFIG_MANAGED"))
            .args(["delete", "namespaces,customresourcedefinitions", "-l", &selector, "--wait=false"])
            .output();
    }
}

/// Results by "Kind name" (names are unique within each test).
fn actions(outcome: &Outcome) -> BTreeMap<String, Action> {
    outcome.results.iter().map(|r| (format!("{} {}", r.id.kind, r.id.name), r.action)).collect()
}

fn expect(pairs: &[(&str, Action)]) -> BTreeMap<String, Action> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn detail<'a>(outcome: &'a Outcome, name: &str) -> &'a str {
    outcome.results.iter().find(|r| r.id.name == name).and_then(|r| r.detail.as_deref()).unwrap_or_default()
}

fn file(part: &str, name: &str, yaml: String) -> (String, String) {
    (format!("{part}/{name}.yaml"), yaml)
}

/// A Namespace (profile `base`) and ConfigMaps `(name, value)` in it (profile `app`).
fn app(ns: &str, config_maps: &[(&str, &str)]) -> Files {
    let mut files: Files = config_maps.iter().map(|(name, value)| file("ClusterProfile.app", name, config_map(ns, name, value))).collect();
    files.push(file("ClusterProfile.base", "ns", namespace(ns)));
    files
}

fn namespace(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")
}

fn config_map(ns: &str, name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n  k: \"{value}\"\n")
}

/// A Service whose port omits `protocol`, which 1.20's server-side apply refuses as is.
fn service(ns: &str, name: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
spec:
  selector:
    app: {name}
  ports:
  - port: 80
    targetPort: 8080
"#
    )
}

/// Its container port omits `protocol` and its CPU limit is a YAML number: two more
/// things 1.20's server-side apply refuses as they are.
fn deployment(ns: &str, name: &str, replicas: u32) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: web
        image: nginx:1.19
        ports:
        - containerPort: 8080
        resources:
          limits:
            cpu: 0.5
            memory: 64Mi
"#
    )
}

fn crd(group: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{group}
spec:
  group: {group}
  scope: Namespaced
  names:
    kind: Widget
    plural: widgets
    singular: widget
    listKind: WidgetList
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
"#
    )
}

fn widget(group: &str, ns: &str, name: &str) -> String {
    format!("apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  size: 3\n")
}

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
    let planned = engine::plan(&s.client, s.desired(1, &v1, &preview), &[], &s.settings).await.expect("plan");
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
    let planned = engine::plan(&s.client, s.desired(2, &v2, &[]), &s.inventory, &s.settings).await.expect("plan");
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
    assert_eq!(objects.len(), 2, "{objects:?}");
    assert!(objects.iter().any(|o| o.contains("out1")) && objects.iter().any(|o| o.contains("out2")), "{objects:?}");
    assert!(!s.exists_cluster_scoped("v1", "Namespace", &inside).await, "nothing applied");

    s.settings.namespace_policy = NamespacePolicy::Filter;
    let outcome = s.sync(1, &files, &[]).await;
    let results = actions(&outcome);
    assert_eq!(results["ConfigMap in"], Action::Created);
    assert_eq!((results["ConfigMap out1"], results["ConfigMap out2"]), (Action::Refused, Action::Refused));
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
