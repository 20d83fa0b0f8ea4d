//! One engine test's corner of the real API server (`Scenario`: its namespaces, its
//! cluster label, its inventory and the kinds it learnt) and the manifests the tests build
//! bundles from.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use airlock_bundle::{PartSettings, StopMatchingBehavior, SyncMode};
use airlock_cli::{KubeArgs, install_crypto_provider};
use airlock_puller::engine::{self, Action, DesiredObject, InventoryEntry, KnownKind, Outcome, Settings};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;

/// One test's corner of the cluster: its namespaces, its cluster label, its inventory.
pub(crate) struct Scenario {
    pub(crate) client: kube::Client,
    /// Prefix of every namespace and CRD group the test creates.
    pub(crate) id: String,
    pub(crate) settings: Settings,
    pub(crate) inventory: Vec<InventoryEntry>,
    /// How the inventory's kinds are served, as the last sync learnt.
    pub(crate) kinds: Vec<KnownKind>,
}

pub(crate) type Files = Vec<(String, String)>;

impl Scenario {
    pub(crate) async fn new(test: &str) -> Scenario {
        install_crypto_provider();
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let stamp = jiff::Timestamp::now().as_second() % 100_000;
        let id = format!("eng-{test}-{stamp}-{}-{n}", std::process::id() % 100_000);
        let kube = KubeArgs { kubeconfig: Some(airlock_e2e::service_env("AIRLOCK_KUBECONFIG_MANAGED").into()), context: None };
        let client = kube.client().await.expect("client for the managed apiserver");
        let settings = engine::testing::settings(&format!("e2e/{id}"));
        Scenario { client, id, settings, inventory: Vec::new(), kinds: Vec::new() }
    }

    pub(crate) fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.id)
    }

    /// A CRD group of this test's own.
    pub(crate) fn group(&self) -> String {
        format!("{}.e2e.airlock.dev", self.id)
    }

    pub(crate) fn desired(&self, version: u64, files: &Files, parts: &[(&str, SyncMode, StopMatchingBehavior)]) -> Vec<DesiredObject> {
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
    pub(crate) fn desired_with(&self, version: u64, files: &Files, settings: &dyn Fn(&str) -> PartSettings) -> Vec<DesiredObject> {
        engine::desired(&engine::testing::verified(version, files, settings), &self.settings).expect("bundle parses")
    }

    /// A sync that must succeed; its inventory becomes the previous one of the next run.
    pub(crate) async fn sync(&mut self, version: u64, files: &Files, parts: &[(&str, SyncMode, StopMatchingBehavior)]) -> Outcome {
        let outcome = self.sync_objects(self.desired(version, files, parts)).await;
        assert!(!outcome.failed(), "{:#?}", outcome.results);
        outcome
    }

    /// A sync of `desired`; unless it failed, its inventory becomes the previous one of the
    /// next run, as the puller records it.
    pub(crate) async fn sync_objects(&mut self, desired: Vec<DesiredObject>) -> Outcome {
        let outcome = engine::sync(&self.client, desired, &self.inventory, &self.settings).await.expect("sync runs");
        if !outcome.failed() {
            self.inventory = outcome.inventory.clone();
            self.kinds = outcome.kinds.clone();
        }
        outcome
    }

    /// A drift check of the bundle applied last, corrected: both steps, as a sync runs them.
    pub(crate) async fn correct_drift(&self, version: u64, files: &Files, parts: &[(&str, SyncMode, StopMatchingBehavior)]) -> Outcome {
        self.correct_objects(self.desired(version, files, parts)).await
    }

    /// [`Scenario::correct_drift`] of `desired`.
    pub(crate) async fn correct_objects(&self, desired: Vec<DesiredObject>) -> Outcome {
        let check = engine::check_drift(&self.client, desired, &self.kinds, &self.settings).await.expect("drift check");
        check.correct(&self.inventory, &self.settings).await.expect("drift correction")
    }

    pub(crate) fn api(&self, api_version: &str, kind: &str) -> Api<DynamicObject> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        Api::all_with(self.client.clone(), &ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)))
    }

    pub(crate) fn namespaced(&self, api_version: &str, kind: &str, ns: &str) -> Api<DynamicObject> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        Api::namespaced_with(self.client.clone(), ns, &resource)
    }

    /// Every object of the test's label, as "Kind ns/name" → resourceVersion (generation
    /// for Deployments, whose status the controllers keep writing).
    pub(crate) async fn snapshot(&self, kinds: &[(&str, &str)]) -> BTreeMap<String, String> {
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

    pub(crate) async fn get(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<DynamicObject> {
        self.namespaced(api_version, kind, ns).get_opt(name).await.expect("get")
    }

    pub(crate) async fn exists_cluster_scoped(&self, api_version: &str, kind: &str, name: &str) -> bool {
        self.api(api_version, kind).get_opt(name).await.expect("get").is_some()
    }
}

/// Deletes what the test created (its namespaces and CRDs, found by its cluster label),
/// also when the test failed, without waiting for namespace finalization.
impl Drop for Scenario {
    fn drop(&mut self) {
        let selector = format!("airlock.dev/cluster={}", self.settings.cluster.replace('/', "."));
        let _ = std::process::Command::new(airlock_e2e::service_env("AIRLOCK_KUBECTL"))
            .arg("--kubeconfig")
            .arg(airlock_e2e::service_env("AIRLOCK_KUBECONFIG_MANAGED"))
            .args(["delete", "namespaces,customresourcedefinitions", "-l", &selector, "--wait=false"])
            .output();
    }
}

/// Results by "Kind name" (names are unique within each test).
pub(crate) fn actions(outcome: &Outcome) -> BTreeMap<String, Action> {
    outcome.results.iter().map(|r| (format!("{} {}", r.id.kind, r.id.name), r.action)).collect()
}

pub(crate) fn expect(pairs: &[(&str, Action)]) -> BTreeMap<String, Action> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

pub(crate) fn detail<'a>(outcome: &'a Outcome, name: &str) -> &'a str {
    outcome.results.iter().find(|r| r.id.name == name).and_then(|r| r.detail.as_deref()).unwrap_or_default()
}

pub(crate) fn file(part: &str, name: &str, yaml: String) -> (String, String) {
    (format!("{part}/{name}.yaml"), yaml)
}

/// A Namespace (profile `base`) and ConfigMaps `(name, value)` in it (profile `app`).
pub(crate) fn app(ns: &str, config_maps: &[(&str, &str)]) -> Files {
    let mut files: Files = config_maps.iter().map(|(name, value)| file("ClusterProfile.app", name, config_map(ns, name, value))).collect();
    files.push(file("ClusterProfile.base", "ns", namespace(ns)));
    files
}

pub(crate) fn namespace(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")
}

pub(crate) fn config_map(ns: &str, name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n  k: \"{value}\"\n")
}

/// A Service whose port omits `protocol`, which 1.20's server-side apply refuses as is.
pub(crate) fn service(ns: &str, name: &str) -> String {
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
pub(crate) fn deployment(ns: &str, name: &str, replicas: u32) -> String {
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

pub(crate) fn crd(group: &str) -> String {
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

pub(crate) fn widget(group: &str, ns: &str, name: &str) -> String {
    format!("apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  size: 3\n")
}
