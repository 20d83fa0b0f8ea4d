//! One registered cluster of the loop's tests, as an operator sets it up: a management set
//! (a ConfigMap of manifests and the ClusterProfile that selects the cluster), the real
//! `airlock-publisher register cluster` and `kubectl apply -f` of its YAML on the node, and
//! `airlock-publisher watch` publishing and bringing the reports back. Every name carries
//! the test and the process, so tests and the quickstart share the API servers.
//!
//! The puller is never run here: the registration's CronJob runs it on the node, from the
//! image `hack/image.sh` builds, once per test process.

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use airlock_bundle::ClusterId;
use airlock_e2e::locks::AirlockCrds;
use airlock_e2e::publisher::{install_crds, kubectl, kubectl_ok};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

pub const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
pub const NODE: &str = "AIRLOCK_KUBECONFIG_NODE";
/// The Kubernetes version of the node, which its reports must carry.
pub const NODE_VERSION: &str = "v1.20.2";

/// The puller's image of this test process, built and pushed once.
pub fn image() -> String {
    static IMAGE: Mutex<Option<String>> = Mutex::new(None);
    let mut image = IMAGE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(image) = image.as_ref() {
        return image.clone();
    }
    let to = format!("{}/airlock-e2e-loop/puller:{}", airlock_e2e::service_env("AIRLOCK_REGISTRY"), std::process::id());
    let out = Command::new(airlock_e2e::root().join("hack/image.sh")).args(["--debug", "--push-to", &to]).output().expect("image.sh runs");
    assert!(out.status.success(), "hack/image.sh: {}", String::from_utf8_lossy(&out.stderr));
    // What image.sh prints, as the quickstart registers it: the tag pinned to its digest.
    let pinned = String::from_utf8(out.stdout).expect("UTF-8").trim().to_string();
    assert!(pinned.starts_with(&format!("{to}@sha256:")), "{pinned}");
    *image = Some(pinned.clone());
    pinned
}

/// A cluster of one test: its names, keys and the management set that selects it.
pub struct Site {
    /// `<test>-<pid>`: in every name.
    pub id: String,
    pub cluster: ClusterId,
    pub puller_ns: String,
    /// The one namespace the bundles write to.
    pub app_ns: String,
    pub dir: tempfile::TempDir,
    /// What the puller reads, and what the publisher writes to.
    pub source: String,
    pub publish_to: String,
    /// The publisher's environment (registry logins).
    pub env: Vec<(&'static str, String)>,
    watch: Option<Child>,
    _crds: AirlockCrds,
}

/// The id of the cluster of `test` in this process.
pub fn cluster_of(test: &str) -> ClusterId {
    ClusterId::new(&format!("loop-{test}-{}", std::process::id()), "edge").expect("a cluster id")
}

impl Site {
    pub fn new(test: &str, source: &str, publish_to: &str) -> Site {
        let crds = install_crds();
        let id = format!("{test}-{}", std::process::id());
        let dir = tempfile::tempdir().expect("tempdir");
        // The publisher's key and keyring here, the cluster's report key under report/.
        for (out_dir, name) in [(dir.path().to_path_buf(), "airlock"), (dir.path().join("report"), "report")] {
            let out =
                Command::new(airlock_e2e::publisher_bin()).arg("keygen").arg("--out-dir").arg(&out_dir).args(["--name", name]).output();
            let out = out.expect("keygen runs");
            assert!(out.status.success(), "keygen: {}", String::from_utf8_lossy(&out.stderr));
        }
        Site {
            cluster: cluster_of(test),
            puller_ns: format!("loop-{id}-puller"),
            app_ns: format!("loop-{id}-app"),
            id,
            dir,
            source: source.to_string(),
            publish_to: publish_to.to_string(),
            env: Vec::new(),
            watch: None,
            _crds: crds,
        }
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().expect("UTF-8 path").to_string()
    }

    /// The ConfigMap of manifests `files` (file name → YAML) and the ClusterProfile that
    /// deploys it to this cluster, applied to the management cluster.
    pub fn management(&self, files: &[(&str, String)]) {
        let data: serde_json::Map<String, Value> = files.iter().map(|(k, v)| (k.to_string(), v.clone().into())).collect();
        let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.cluster.namespace()}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "loop-app", "namespace": self.cluster.namespace()}, "data": data},
            {"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile", "metadata": {"name": format!("loop-{}", self.id)},
             "spec": {"clusterSelector": {"matchLabels": {"airlock-e2e-loop": self.id}},
                      "policyRefs": [{"kind": "ConfigMap", "namespace": self.cluster.namespace(), "name": "loop-app"}]}},
        ]});
        kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], objects.to_string().as_bytes());
    }

    /// `register cluster` as the tests' operator runs it, with `extra` flags; the YAML.
    pub fn register(&self, extra: &[&str]) -> String {
        let labels = format!("airlock-e2e-loop={}", self.id);
        let out = Command::new(airlock_e2e::publisher_bin())
            .args(["register", "cluster", "--kubeconfig", &airlock_e2e::service_env(MANAGEMENT), "--pullmode"])
            .args(["--namespace", self.cluster.namespace(), "--cluster", self.cluster.name(), "--labels", &labels])
            .args(["--source", &self.source, "--keyring", &self.path("keyring.json"), "--report-key-file", &self.path("report/report.key")])
            .args(["--image", &image(), "--cronjob-api", "batch/v1beta1", "--schedule", "* * * * *", "--host-network"])
            .args(["--puller-namespace", &self.puller_ns, "--lease-duration", "20s"])
            .args(extra)
            .output()
            .expect("register runs");
        assert!(out.status.success(), "register: {}", String::from_utf8_lossy(&out.stderr));
        let yaml = String::from_utf8(out.stdout).expect("UTF-8 YAML");
        std::fs::write(self.path("registration.yaml"), &yaml).expect("registration written");
        yaml
    }

    /// `kubectl apply -f registration.yaml` on the node: all that is done there by hand.
    pub fn apply_registration(&self) {
        kubectl_ok(NODE, &["apply", "-f", &self.path("registration.yaml")], b"");
    }

    /// Starts `airlock-publisher watch` for this cluster: it publishes, and reads the
    /// reports every two seconds.
    pub fn start_watch(&mut self) {
        let log = std::fs::File::create(self.path("watch.log")).expect("watch log");
        let child = Command::new(airlock_e2e::publisher_bin())
            .args(["watch", "--kubeconfig", &airlock_e2e::service_env(MANAGEMENT), "--to", &self.publish_to])
            .args(["--key", &self.path("airlock.key"), "--keyring", &self.path("keyring.json")])
            .args(["--cluster", &self.cluster.to_string(), "--lease-namespace", self.cluster.namespace()])
            .args(["--reports-every", "2s", "--debounce", "1s", "--no-cache"])
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("watch starts");
        self.watch = Some(child);
    }

    /// Where the loop is, for failure messages: the puller's Jobs and pods on the node and
    /// the last lines `watch` logged.
    pub async fn progress(&self) -> String {
        let text = std::fs::read_to_string(self.path("watch.log")).unwrap_or_default();
        let watch = text.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        format!("jobs: {:?}\npods: {:?}\nwatch:\n{watch}", self.jobs().await, self.pod_phases().await)
    }

    /// The SveltosCluster as the management cluster has it.
    pub async fn sveltos_cluster(&self) -> Value {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("lib.projectsveltos.io", "v1beta1", "SveltosCluster"),
            "sveltosclusters",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client(MANAGEMENT).await, self.cluster.namespace(), &resource);
        serde_json::to_value(api.get(self.cluster.name()).await.expect("the SveltosCluster")).expect("JSON")
    }

    /// Waits until the cluster reports ready at `applied`, in a report that finished after
    /// `after` (an `airlock.dev/report-time`); that report's time.
    pub async fn wait_reported(&self, after: Option<&str>, applied: u64, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let object = self.sveltos_cluster().await;
            let annotations = &object["metadata"]["annotations"];
            let time = annotations["airlock.dev/report-time"].as_str().unwrap_or_default().to_string();
            let later = after.is_none_or(|a| time.parse::<jiff::Timestamp>().ok() > a.parse::<jiff::Timestamp>().ok());
            if !time.is_empty()
                && later
                && object["status"]["ready"] == true
                && object["status"]["version"] == NODE_VERSION
                && annotations["airlock.dev/applied-version"].as_str() == Some(applied.to_string().as_str())
            {
                return time;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not report version {applied} ready within {timeout:?}:\n{object:#}\n{}",
                self.cluster,
                self.progress().await
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// The row of `kubectl get sveltoscluster -A` for this cluster, as an operator reads it.
    pub fn get_sveltoscluster_row(&self) -> Vec<String> {
        let table = kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-A"], b"");
        let row = table.lines().find(|l| l.split_whitespace().next() == Some(self.cluster.namespace()));
        row.unwrap_or_else(|| panic!("no row for {} in\n{table}", self.cluster)).split_whitespace().map(str::to_string).collect()
    }

    /// The puller's Jobs on the node, oldest first: (name, succeeded, failed).
    pub async fn jobs(&self) -> Vec<(String, i32, i32)> {
        let jobs: Api<Job> = Api::namespaced(client(NODE).await, &self.puller_ns);
        let mut list = jobs.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
        list.sort_by_key(|j| j.metadata.creation_timestamp.clone().map(|t| t.0));
        list.into_iter()
            .map(|j| {
                let status = j.status.unwrap_or_default();
                (j.metadata.name.unwrap_or_default(), status.succeeded.unwrap_or(0), status.failed.unwrap_or(0))
            })
            .collect()
    }

    /// The puller's pods on the node.
    pub async fn pods(&self) -> Vec<Pod> {
        let pods: Api<Pod> = Api::namespaced(client(NODE).await, &self.puller_ns);
        pods.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default()
    }

    /// Each puller pod's phase and, while it is not scheduled, why (a node under disk
    /// pressure takes no pods).
    async fn pod_phases(&self) -> Vec<String> {
        let pods = self.pods().await.into_iter().filter_map(|p| p.status);
        pods.map(|status| {
            let unscheduled = status.conditions.unwrap_or_default().into_iter().find(|c| c.type_ == "PodScheduled" && c.status == "False");
            let why = unscheduled.and_then(|c| c.message).map_or(String::new(), |m| format!(" ({m})"));
            format!("{}{why}", status.phase.unwrap_or_default())
        })
        .collect()
    }

    /// A ConfigMap of the namespace the bundles write to, on the node.
    pub async fn app_config_map(&self, name: &str) -> Option<ConfigMap> {
        Api::<ConfigMap>::namespaced(client(NODE).await, &self.app_ns).get_opt(name).await.expect("ConfigMaps readable")
    }

    /// The kept report ConfigMap of the puller, on the node.
    pub async fn kept_report(&self) -> Option<ConfigMap> {
        let name = format!("airlock-report-{}", self.cluster.name());
        Api::<ConfigMap>::namespaced(client(NODE).await, &self.puller_ns).get_opt(&name).await.expect("ConfigMaps readable")
    }

    /// Removes what the test made on both clusters.
    fn clean_up(&mut self) {
        self.stop_watch();
        for ns in [&self.puller_ns, &self.app_ns] {
            kubectl(NODE, &["delete", "namespace", ns, "--wait=false", "--ignore-not-found"], b"");
        }
        let shared = format!("airlock-puller:{}", self.puller_ns);
        kubectl(NODE, &["delete", "clusterrole,clusterrolebinding", &shared, "--ignore-not-found"], b"");
        kubectl(MANAGEMENT, &["delete", "clusterprofile", &format!("loop-{}", self.id), "--ignore-not-found"], b"");
        kubectl(MANAGEMENT, &["delete", "namespace", self.cluster.namespace(), "--wait=false", "--ignore-not-found"], b"");
    }

    fn stop_watch(&mut self) {
        if let Some(mut child) = self.watch.take() {
            // SIGTERM: watch releases its Lease and stops.
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let _ = child.wait();
        }
    }
}

// Also when a test fails: its CronJob would run on the shared node every minute, for good.
impl Drop for Site {
    fn drop(&mut self) {
        self.clean_up();
    }
}

/// A client of the API server whose kubeconfig is the service variable `kubeconfig`.
pub async fn client(kubeconfig: &str) -> kube::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    airlock_e2e::kube_client(&airlock_e2e::service_env(kubeconfig)).await
}

/// A namespace's manifests: the ConfigMaps `c<from>`… `c<to - 1>` in it, each holding
/// `value`, and the namespace itself with the first of them.
pub fn config_maps(namespace: &str, (from, to): (usize, usize), value: &str) -> String {
    let mut documents = Vec::new();
    if from == 0 {
        documents.push(format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n"));
    }
    for i in from..to {
        documents.push(format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i:04}\n  namespace: {namespace}\ndata:\n  value: \"{value}\"\n"
        ));
    }
    documents.join("---\n")
}
