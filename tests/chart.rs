//! The chart of `charts/airlock`, installed with the real helm as an operator installs it.
//!
//! On the node of `hack/node.sh`, whose API server (1.20.2) is here the management cluster
//! as well as the cluster the puller applies to, since it is the one where pods run:
//! `helm install` starts `airlock-publisher watch` from the image `hack/image.sh` builds,
//! with its ServiceAccount, its key from a Secret and the chart's security settings; it
//! publishes the cluster's bundle, `airlock-puller sync` applies it and pushes its report
//! to the store, and the same pod brings the report to the SveltosCluster. A profile change
//! goes round the same way; then a `helm upgrade` that restarts the pod publishes nothing.
//! The node gets the Sveltos CRDs of `hack/crds/` and the status CRDs the reports feed.
//! The RBAC the chart grants is `chart/rbac.rs`'s.

mod rbac;

use std::process::Command;
use std::time::{Duration, Instant};

use airlock_bundle::{ClusterId, Keyring, Limits};
use airlock_e2e::publisher::{kubectl, kubectl_ok, try_read_back};
use airlock_e2e::{Run, assert_exit};
use serde_json::{Value, json};

const NODE: &str = "AIRLOCK_KUBECONFIG_NODE";
/// Longest a step of the loop may take: a pod start, a publish, a report read.
const STEP: Duration = Duration::from_secs(60);

/// `helm` v3 of `hack/helm.sh` against the API server of the service variable `kubeconfig`.
pub fn helm(kubeconfig: &str, args: &[&str]) -> Run {
    let helm = &airlock_e2e::chart_repo::helm_paths()[0];
    let out = Command::new(helm).arg("--kubeconfig").arg(airlock_e2e::service_env(kubeconfig)).args(args).output();
    out.expect("helm runs").into()
}

/// The chart's directory.
pub fn chart_dir() -> String {
    airlock_e2e::root().join("charts/airlock").to_str().expect("UTF-8 path").to_string()
}

/// A release of the chart and what it needs on the node; everything is removed on drop.
struct Release {
    id: String,
    dir: tempfile::TempDir,
    cluster: ClusterId,
    store: String,
    image: String,
    metrics_port: u16,
}

impl Release {
    fn new() -> Release {
        let id = format!("chart-{}", std::process::id());
        let dir = tempfile::tempdir().expect("tempdir");
        for (out_dir, name) in [(dir.path().to_path_buf(), "airlock"), (dir.path().join("report"), "report")] {
            let out =
                Command::new(airlock_e2e::publisher_bin()).arg("keygen").arg("--out-dir").arg(&out_dir).args(["--name", name]).output();
            assert_exit(&out.expect("keygen runs").into(), 0);
        }
        let free = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        Release {
            cluster: ClusterId::new(&id, "edge").expect("a cluster id"),
            store: format!("oci+http://{}/airlock-e2e-{id}", airlock_e2e::service_env("AIRLOCK_REGISTRY")),
            image: crate::pull_loop::site::image(),
            metrics_port: free.local_addr().expect("address").port(),
            id,
            dir,
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().expect("UTF-8 path").to_string()
    }

    fn ns(&self, what: &str) -> String {
        format!("{}-{what}", self.id)
    }

    /// The CRDs, the namespaces, the key Secret, the cluster registered and its profile.
    fn prepare(&self) {
        let crds = airlock_e2e::root().join("hack/crds");
        let crds = crds.to_str().expect("UTF-8 path");
        kubectl_ok(NODE, &["apply", "--server-side", "-f", crds], b"");
        kubectl_ok(NODE, &["wait", "--for", "condition=established", "--timeout=60s", "-f", crds], b"");
        // Sveltos's status CRDs, which the pod writes what the reports say to.
        let out = Command::new(airlock_e2e::root().join("hack/sveltos-crds.sh"))
            .args(["status", &airlock_e2e::service_env(NODE)])
            .env("AIRLOCK_KUBECTL", airlock_e2e::service_env("AIRLOCK_KUBECTL"))
            .output();
        assert_exit(&out.expect("hack/sveltos-crds.sh runs").into(), 0);
        for ns in [self.ns("system"), self.ns("state"), self.cluster.namespace().to_string()] {
            kubectl_ok(NODE, &["create", "namespace", &ns], b"");
        }
        let (key, keyring) = (format!("--from-file=airlock.key={}", self.path("airlock.key")), self.path("keyring.json"));
        let secret = ["-n", &self.ns("system"), "create", "secret", "generic", "airlock-signing-key", &key];
        kubectl_ok(NODE, &[&secret[..], &[&format!("--from-file=keyring.json={keyring}")]].concat(), b"");
        self.profile("one");
        let labels = format!("airlock-e2e-chart={}", self.id);
        let out = Command::new(airlock_e2e::publisher_bin())
            .args(["register", "cluster", "--kubeconfig", &airlock_e2e::service_env(NODE), "--pullmode", "--no-encryption"])
            .args(["--namespace", self.cluster.namespace(), "--cluster", self.cluster.name(), "--labels", &labels])
            .args(["--source", &self.store, "--keyring", &keyring, "--report-key-file", &self.path("report/report.key")])
            .output();
        assert_exit(&out.expect("register runs").into(), 0);
    }

    /// The ClusterProfile that selects the cluster, with one ConfigMap holding `value`.
    fn profile(&self, value: &str) {
        let manifest = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: {}}}\ndata: {{value: {value}}}\n",
            self.ns("app")
        );
        let namespace = format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {}}}\n", self.ns("app"));
        let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": self.cluster.namespace()},
             "data": {"namespace.yaml": namespace, "settings.yaml": manifest}},
            {"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile", "metadata": {"name": self.id},
             "spec": {"clusterSelector": {"matchLabels": {"airlock-e2e-chart": self.id}},
                      "policyRefs": [{"kind": "ConfigMap", "namespace": self.cluster.namespace(), "name": "app"}]}},
        ]});
        kubectl_ok(NODE, &["apply", "-f", "-"], objects.to_string().as_bytes());
    }

    /// `helm install` or `helm upgrade` with the values this node needs; `extra` more.
    fn helm(&self, verb: &str, extra: &[&str]) -> Run {
        let (reference, digest) = self.image.split_once('@').expect("a pinned image");
        let (repository, tag) = reference.rsplit_once(':').expect("a tagged image");
        let values = json!({
            "image": {"repository": repository, "tag": tag, "digest": digest},
            "store": {"url": self.store},
            "signing": {"secretName": "airlock-signing-key"},
            "publish": {"debounce": "1s", "clusters": [self.cluster.to_string()]},
            "reports": {"every": "1s"},
            "metrics": {"bindAddress": "127.0.0.1", "port": self.metrics_port},
            "hostNetwork": true, "dnsPolicy": "None", "dnsConfig": {"nameservers": ["127.0.0.1"]},
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
        });
        std::fs::write(self.path("values.json"), values.to_string()).expect("values written");
        let args = [verb, &self.id, &chart_dir(), "-n", &self.ns("system"), "-f", &self.path("values.json")];
        helm(NODE, &[&args[..], extra].concat())
    }

    /// The newest bundle's version and issue time, once it is at least `version`.
    async fn bundle(&self, version: u64) -> (u64, jiff::Timestamp) {
        let keyring = Keyring::parse(&std::fs::read(self.path("keyring.json")).unwrap(), &Limits::SPEC).unwrap();
        let deadline = Instant::now() + STEP;
        loop {
            let found = try_read_back(&self.store, &self.cluster, &keyring).await;
            if let Ok(b) = &found
                && b.predicate().version >= version
            {
                return (b.predicate().version, b.predicate().issued_at);
            }
            assert!(Instant::now() < deadline, "no bundle version {version}: {:?}\n{}", found.err(), self.logs());
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// `airlock-puller sync` of the cluster, on the node, sending its report to the store.
    fn sync(&self) {
        let out = Command::new(airlock_e2e::puller_bin())
            .args(["sync", "--source", &self.store, "--cluster", &self.cluster.to_string()])
            .args(["--keyring", &self.path("keyring.json"), "--state-namespace", &self.ns("state")])
            .args(["--report-key", &self.path("report/report.key"), "--push-reports"])
            .env("KUBECONFIG", airlock_e2e::service_env(NODE))
            .env("AIRLOCK_LOG", "warn")
            .output();
        assert_exit(&out.expect("airlock-puller runs").into(), 0);
    }

    /// The SveltosCluster, once the pod recorded a report of `version` on it.
    async fn reported(&self, version: u64) -> Value {
        let deadline = Instant::now() + STEP;
        loop {
            let out = kubectl(NODE, &["-n", self.cluster.namespace(), "get", "sveltoscluster", self.cluster.name(), "-o", "json"], b"");
            let object: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            let applied = object["metadata"]["annotations"]["airlock.dev/applied-version"].as_str().map(str::to_string);
            if applied == Some(version.to_string()) && object["status"]["ready"] == true {
                return object;
            }
            assert!(Instant::now() < deadline, "no report of version {version} recorded:\n{object:#}\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// `/metrics` of the pod, on the node's network.
    async fn metrics(&self) -> Option<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.metrics_port));
        let answer = airlock_cli::http::get(addr, "GET /metrics HTTP/1.1\r\n\r\n").await.ok()?;
        answer.starts_with("HTTP/1.1 200 ").then(|| answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()))?
    }

    /// The pod's recent log and state, for failure messages.
    fn logs(&self) -> String {
        // The chart names its objects `<release>-airlock`.
        let deploy = format!("deploy/{}-airlock", self.id);
        let logs = kubectl(NODE, &["-n", &self.ns("system"), "logs", &deploy, "--tail=30"], b"");
        let pods = kubectl(NODE, &["-n", &self.ns("system"), "get", "pods,events", "-o", "wide"], b"");
        format!(
            "{}{}{}",
            String::from_utf8_lossy(&pods.stdout),
            String::from_utf8_lossy(&logs.stdout),
            String::from_utf8_lossy(&logs.stderr)
        )
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        let _ = helm(NODE, &["uninstall", &self.id, "-n", &self.ns("system")]);
        for ns in [self.ns("system"), self.ns("state"), self.ns("app"), self.cluster.namespace().to_string()] {
            kubectl(NODE, &["delete", "namespace", &ns, "--wait=false", "--ignore-not-found"], b"");
        }
        kubectl(NODE, &["delete", "clusterprofile", &self.id, "--ignore-not-found"], b"");
    }
}

/// The value of the sample `line` (`name{labels}`) in a Prometheus text.
fn sample(text: &str, line: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(line)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_install_publishes_the_puller_reports_back_and_an_upgrade_publishes_nothing() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let release = Release::new();
    release.prepare();
    let started = Instant::now();
    assert_exit(&release.helm("install", &[]), 0);

    let (first, _) = release.bundle(1).await;
    println!("bundle {first} published {:?} after helm install", started.elapsed());
    release.sync();
    let object = release.reported(first).await;
    assert_eq!(object["status"]["version"], "v1.20.2", "{object:#}");
    // What an operator sees: READY and VERSION.
    let table = kubectl_ok(NODE, &["get", "sveltoscluster", "-n", release.cluster.namespace()], b"");
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row.get(..3), Some(&[release.cluster.name(), "true", "v1.20.2"][..]), "{table}");
    let settings = ["-n", &release.ns("app"), "get", "configmap", "settings", "-o", "jsonpath={.data.value}"];
    assert_eq!(kubectl_ok(NODE, &settings, b""), "one");

    // A profile change: published by the pod, applied, reported.
    let changed = Instant::now();
    release.profile("two");
    let (second, issued) = release.bundle(first + 1).await;
    release.sync();
    release.reported(second).await;
    println!("version {second} reported {:?} after the change", changed.elapsed());
    assert_eq!(kubectl_ok(NODE, &settings, b""), "two");
    let text = release.metrics().await.expect("/metrics answers");
    assert_eq!(sample(&text, "airlock_publisher_leader"), Some(1.0), "{text}");
    assert!(sample(&text, "airlock_publish_bundles_total") >= Some(2.0), "{text}");

    // An upgrade that restarts the pod: the new one publishes nothing.
    let upgraded = Instant::now();
    assert_exit(&release.helm("upgrade", &["--set-string", "podAnnotations.airlock-e2e/upgrade=1"]), 0);
    // On the host network the new pod waits until the old one is deleted, which the node's
    // kubelet has taken over a minute to do while other tests loaded it.
    let deadline = Instant::now() + 2 * STEP;
    let text = loop {
        // The new pod's counters start at zero: a finished run and no bundle written.
        let text = release.metrics().await.unwrap_or_default();
        if sample(&text, "airlock_publish_runs_total{result=\"ok\"}") >= Some(1.0)
            && sample(&text, "airlock_publish_bundles_total") == Some(0.0)
        {
            break text;
        }
        assert!(Instant::now() < deadline, "the upgraded pod did not finish a run:\n{text}\n{}", release.logs());
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    println!("upgraded pod ran {:?} after helm upgrade", upgraded.elapsed());
    assert_eq!(sample(&text, "airlock_publisher_leader"), Some(1.0), "{text}");
    assert_eq!(release.bundle(second).await, (second, issued), "the upgrade published nothing");
    println!("whole loop {:?}", started.elapsed());
}
