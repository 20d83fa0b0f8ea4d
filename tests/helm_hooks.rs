//! The whole loop for a chart with hook Jobs, on the single node of `hack/node.sh`: a chart
//! made here (busybox Jobs as pre-install, pre-upgrade and post- hooks, a test Pod),
//! served as a chart repository on 127.0.0.1, rendered by `airlock-publisher publish` with
//! the real helm, applied by `airlock-puller sync` to the node's API server, where the
//! kubelet runs the hooks. The install runs the pre-install hooks to completion before the
//! release's objects and the post-install hook after them, deletes a `hook-succeeded` hook,
//! runs the test Pod with `runTests`, and renders against the API versions the cluster
//! reported; an unchanged bundle fires nothing; an upgrade whose
//! pre-upgrade Job fails stops before the release's objects change, the fixed upgrade
//! re-creates that Job and applies the release, and `Uninstall` runs the pre-delete and
//! post-delete Jobs around the prune, as do a profile that stops matching the cluster and
//! a profile that drops the chart, once. With `wait`, the post-install hook runs only once the release's Deployment is
//! available.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use airlock_e2e::chart_repo::{ChartRepo, edge_fleet, helm_paths};
use serde_json::Value;

const NODE: &str = "AIRLOCK_KUBECONFIG_NODE";

/// The pod spec of every hook: host network and the resolver on loopback, as every pod on
/// this node needs; no token, which a fresh namespace may not have yet.
const POD_SPEC: &str = "      hostNetwork: true
      dnsPolicy: None
      dnsConfig: {nameservers: [127.0.0.1]}
      restartPolicy: Never
      automountServiceAccountToken: false
      containers:
      - name: main
        image: {{ .Values.image }}
        imagePullPolicy: Never";

/// A Deployment of one busybox that sleeps, with `app: true`: ready a few seconds after it
/// was applied, once the kubelet started its Pod.
const APP: &str = "{{- if .Values.app }}
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: sleeper}}
  template:
    metadata: {labels: {app: sleeper}}
    spec:
      hostNetwork: true
      dnsPolicy: None
      dnsConfig: {nameservers: [127.0.0.1]}
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 0
      containers:
      - name: main
        image: {{ .Values.image }}
        imagePullPolicy: Never
        command: [sleep, '3600']
{{- end }}
";

/// A hook Job `name` of `events` with `weight` and `policy`, whose busybox runs `script`.
fn job(name: &str, events: &str, weight: i32, policy: &str, script: &str) -> String {
    format!(
        "---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  annotations:
    helm.sh/hook: {events}
    helm.sh/hook-weight: \"{weight}\"
{policy}spec:
  backoffLimit: 0
  template:
    spec:
{POD_SPEC}
        command: [sh, -c, '{script}']
"
    )
}

/// The chart `airlock-hooks` 0.1.0, packaged into `repo` with its index.
fn make_chart(helm: &Path, repo: &Path) {
    let chart = tempfile::tempdir().expect("tempdir");
    let dir = chart.path().join("airlock-hooks");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(dir.join("Chart.yaml"), "apiVersion: v2\nname: airlock-hooks\nversion: 0.1.0\n").unwrap();
    std::fs::write(dir.join("values.yaml"), "image: busybox\nvalue: '1'\nupgradeExit: 0\napp: false\n").unwrap();
    std::fs::write(dir.join("templates/app.yaml"), APP).unwrap();
    let main = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: main}\ndata: {value: {{ .Values.value | quote }}}\n";
    std::fs::write(dir.join("templates/main.yaml"), main).unwrap();
    let capable = "{{- if .Capabilities.APIVersions.Has \"example.airlock.dev/v1\" }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: capable}\n{{- end }}\n";
    std::fs::write(dir.join("templates/capable.yaml"), capable).unwrap();
    let succeeded = "    helm.sh/hook-delete-policy: hook-succeeded\n";
    let hooks = [
        job("pre-early", "pre-install", -1, succeeded, "echo early"),
        job("pre-late", "pre-install,pre-upgrade", 1, "", "sleep 2; exit {{ .Values.upgradeExit }}"),
        job("post", "post-install,post-upgrade", 0, "", "echo post"),
        job("backup", "pre-delete", 0, "", "echo backup"),
        job("farewell", "post-delete", 0, "", "echo farewell"),
    ]
    .concat();
    let test = format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: smoke\n  annotations:\n    helm.sh/hook: test\nspec:\n{}\n    command: [sh, -c, 'echo ok']\n",
        POD_SPEC.replace("\n      ", "\n  ").replacen("      ", "  ", 1)
    );
    std::fs::write(dir.join("templates/hooks.yaml"), hooks + &test).unwrap();
    let homes = tempfile::tempdir().expect("tempdir");
    let helm_run = |args: &[&str]| {
        let out = Command::new(helm)
            .args(args)
            .env("HELM_CACHE_HOME", homes.path().join("cache"))
            .env("HELM_CONFIG_HOME", homes.path().join("config"))
            .env("HELM_DATA_HOME", homes.path().join("data"))
            .output()
            .expect("helm runs");
        assert!(out.status.success(), "helm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    helm_run(&["package", &dir.display().to_string(), "--destination", &repo.display().to_string()]);
    helm_run(&["repo", "index", &repo.display().to_string()]);
}

/// The fleet: release `hooks` of the chart with `options` and the values.
fn fleet(run: &str, url: &str, action: &str, options: &str, values: &str) -> String {
    let spec = format!(
        "  helmCharts:
  - repositoryURL: {url}
    repositoryName: local
    chartName: local/airlock-hooks
    chartVersion: 0.1.0
    releaseName: hooks
    releaseNamespace: {run}
    helmChartAction: {action}
    options: {options}
    values: |
      image: {image}
{values}",
        image = airlock_e2e::service_env("AIRLOCK_NODE_BUSYBOX")
    );
    // As ingest records the APIs a cluster reports (tests/pull_loop.rs shows a real report's).
    edge_fleet(run, run, "airlock.dev/api-versions: 'apps/v1,batch/v1,example.airlock.dev/v1,v1'", &spec)
}

fn sync(store: &str, cluster: &str, keyring: &str, state: &str) -> Output {
    Command::new(airlock_e2e::puller_bin())
        .args(["sync", "--source", store, "--cluster", cluster, "--state-namespace", state, "--keyring", keyring])
        .env("KUBECONFIG", airlock_e2e::service_env(NODE))
        .env("AIRLOCK_LOG", "warn")
        .output()
        .expect("airlock-puller runs")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `kind` `name` in `ns` as JSON, or None.
fn get(ns: &str, kind: &str, name: &str) -> Option<Value> {
    let out = airlock_e2e::publisher::kubectl(NODE, &["get", kind, name, "-n", ns, "-o", "json", "--ignore-not-found"], b"");
    let body = String::from_utf8_lossy(&out.stdout);
    (!body.trim().is_empty()).then(|| serde_json::from_str(&body).expect("kubectl prints JSON"))
}

fn field<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_else(|| panic!("{pointer} in {object}"))
}

/// Waits until the namespace's default ServiceAccount exists: the API server refuses pods
/// naming it before.
fn wait_for_account(ns: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(ns, "serviceaccount", "default").is_none() {
        assert!(Instant::now() < deadline, "no default ServiceAccount in {ns} after 30s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One test's loop: the chart served from 127.0.0.1, a fleet directory, keys, an OCI
/// layout store, and the release and state namespaces on the node.
struct Loop {
    run: String,
    helm: String,
    _repo_dir: tempfile::TempDir,
    repo: ChartRepo,
    fleet_dir: tempfile::TempDir,
    _out: tempfile::TempDir,
    keys: airlock_e2e::publisher::Keys,
    store: String,
    cluster: String,
    state: String,
}

impl Loop {
    fn new(name: &str) -> Loop {
        let run = airlock_e2e::publisher::unique(name);
        let helm = helm_paths()[0].clone();
        let repo_dir = tempfile::tempdir().expect("tempdir");
        make_chart(&helm, repo_dir.path());
        let repo = ChartRepo::serve(repo_dir.path(), None);
        let out = tempfile::tempdir().expect("tempdir");
        let store = format!("oci-layout:{}", out.path().join("layout").display());
        let (cluster, state) = (format!("{run}/edge"), format!("{run}-state"));
        for ns in [&run, &state] {
            airlock_e2e::publisher::kubectl_ok(NODE, &["create", "namespace", ns], b"");
        }
        wait_for_account(&run);
        let fleet_dir = tempfile::tempdir().expect("tempdir");
        let helm = helm.display().to_string();
        Loop {
            run,
            helm,
            _repo_dir: repo_dir,
            repo,
            fleet_dir,
            _out: out,
            keys: airlock_e2e::publisher::Keys::new(name),
            store,
            cluster,
            state,
        }
    }

    /// Publishes the release with `action`, `options` and the `values` lines.
    fn publish(&self, action: &str, options: &str, values: &str) {
        self.publish_fleet(&fleet(&self.run, &self.repo.url, action, options, values));
    }

    fn publish_fleet(&self, fleet: &str) {
        std::fs::write(self.fleet_dir.path().join("fleet.yaml"), fleet).unwrap();
        let dir = self.fleet_dir.path().display().to_string();
        let args = ["publish", "--from-dir", &dir, "--to", &self.store, "--key", &self.keys.key, "--helm", &self.helm, "--no-cache"];
        airlock_e2e::publisher::run_expect(&args, 0);
    }

    fn sync(&self) -> Output {
        sync(&self.store, &self.cluster, &self.keys.keyring_path, &self.state)
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = airlock_e2e::publisher::kubectl(NODE, &["delete", "namespace", &self.run, &self.state, "--wait=false"], b"");
    }
}

#[test]
fn hook_jobs_run_on_the_node_in_helms_phases_and_a_failing_one_stops_the_upgrade() {
    let l = Loop::new("hooks");
    let run = &l.run;
    let publish_as = |action: &str, value: &str, upgrade_exit: u8| {
        let values = format!("      value: '{value}'\n      upgradeExit: {upgrade_exit}\n");
        l.publish(action, "{runTests: true, timeout: 2m}", &values);
    };
    let publish = |value: &str, upgrade_exit: u8| publish_as("Install", value, upgrade_exit);

    publish("1", 0);
    let installed = l.sync();
    assert!(installed.status.success(), "install: {}", text(&installed));
    assert!(get(run, "job", "pre-early").is_none(), "hook-succeeded deleted the pre-install Job once it completed");
    let late = get(run, "job", "pre-late").expect("the pre-install Job is kept (before-hook-creation)");
    assert_eq!(late["status"]["succeeded"], 1, "{late}");
    let main = get(run, "configmap", "main").expect("the release's object");
    assert_eq!(main["data"]["value"], "1");
    assert!(
        field(&late, "/status/completionTime") <= field(&main, "/metadata/creationTimestamp"),
        "the release's objects after the pre-install hooks completed: {late} {main}"
    );
    let post = get(run, "job", "post").expect("the post-install Job");
    assert_eq!(post["status"]["succeeded"], 1, "{post}");
    assert!(field(&main, "/metadata/creationTimestamp") <= field(&post, "/metadata/creationTimestamp"));
    assert_eq!(get(run, "pod", "smoke").expect("the test Pod")["status"]["phase"], "Succeeded");
    assert_eq!(main["metadata"]["labels"]["airlock.dev/helm-release"], "hooks");
    assert!(get(run, "configmap", "capable").is_some(), "rendered against the APIs the cluster reported");

    let again = l.sync();
    assert!(again.status.success(), "an unchanged bundle: {}", text(&again));
    let unchanged = get(run, "job", "pre-late").expect("still there");
    assert_eq!(unchanged["metadata"]["uid"], late["metadata"]["uid"], "nothing fires for an unchanged release");

    publish("2", 3);
    let failed = l.sync();
    assert_eq!(failed.status.code(), Some(1), "a failing pre-upgrade hook fails the run: {}", text(&failed));
    assert!(text(&failed).contains("hook: Job failed: BackoffLimitExceeded"), "{}", text(&failed));
    assert_eq!(get(run, "configmap", "main").expect("main")["data"]["value"], "1", "the release did not change");

    publish("3", 0);
    let upgraded = l.sync();
    assert!(upgraded.status.success(), "the fixed upgrade: {}", text(&upgraded));
    assert_eq!(get(run, "configmap", "main").expect("main")["data"]["value"], "3");
    let rerun = get(run, "job", "pre-late").expect("the pre-upgrade Job");
    assert_ne!(rerun["metadata"]["uid"], late["metadata"]["uid"], "before-hook-creation made a new Job");
    assert_eq!(rerun["status"]["succeeded"], 1, "{rerun}");
    assert!(get(run, "job", "backup").is_none(), "delete hooks do not fire on install or upgrade");

    publish_as("Uninstall", "3", 0);
    let uninstalled = l.sync();
    assert!(uninstalled.status.success(), "the uninstall: {}", text(&uninstalled));
    assert!(get(run, "configmap", "main").is_none(), "the release's objects are pruned");
    for name in ["backup", "farewell"] {
        let job = get(run, "job", name).unwrap_or_else(|| panic!("the {name} delete hook ran"));
        assert_eq!(job["status"]["succeeded"], 1, "{job}");
    }
    assert!(get(run, "job", "post").is_some(), "hooks stay, as helm uninstall leaves them");
}

#[test]
fn with_wait_the_post_install_hook_runs_once_the_deployment_is_available() {
    let l = Loop::new("wait");
    let run = &l.run;
    l.publish("Install", "{wait: true, timeout: 2m, upgradeOptions: {cleanupOnFail: true}}", "      app: true\n");

    let installed = l.sync();
    assert!(installed.status.success(), "install: {}", text(&installed));
    let app = get(run, "deployment", "app").expect("the release's Deployment");
    assert_eq!(app["metadata"]["annotations"]["airlock.dev/helm-wait"], "ready", "{app}");
    assert_eq!(app["metadata"]["annotations"]["airlock.dev/helm-wait-timeout-seconds"], "120");
    assert_eq!(app["metadata"]["annotations"]["airlock.dev/helm-cleanup-on-fail"], "upgrade");
    assert_eq!(app["status"]["availableReplicas"], 1, "{app}");
    let conditions = app["status"]["conditions"].as_array().expect("conditions");
    let available = conditions.iter().find(|c| c["type"] == "Available" && c["status"] == "True").expect("Available");
    let post = get(run, "job", "post").expect("the post-install Job");
    assert!(
        field(available, "/lastTransitionTime") <= field(&post, "/metadata/creationTimestamp"),
        "the post-install hook only after the Deployment became available: {available} {post}"
    );
    assert_eq!(post["status"]["succeeded"], 1, "{post}");
}

#[test]
fn a_profile_that_stops_matching_uninstalls_its_release_with_the_delete_hooks_once() {
    let l = Loop::new("withdraw");
    let run = &l.run;
    let installed = fleet(run, &l.repo.url, "Install", "{}", "");
    l.publish_fleet(&installed);
    let first = l.sync();
    assert!(first.status.success(), "install: {}", text(&first));
    assert!(get(run, "configmap", "main").is_some(), "the release's object");
    assert!(get(run, "job", "backup").is_none(), "the delete hooks the bundle carries idle while installed");

    let selector = format!("matchLabels: {{site: {run}}}");
    let withdrawn = installed.replacen(&selector, "matchLabels: {site: elsewhere}", 1);
    assert_ne!(withdrawn, installed, "the profile's selector");
    l.publish_fleet(&withdrawn);
    let uninstalled = l.sync();
    assert!(uninstalled.status.success(), "the withdrawal: {}", text(&uninstalled));
    assert!(get(run, "configmap", "main").is_none(), "the release's objects are pruned");
    let ran: Vec<Value> = ["backup", "farewell"].iter().map(|n| get(run, "job", n).unwrap_or_else(|| panic!("{n} ran"))).collect();
    for job in &ran {
        assert_eq!(job["status"]["succeeded"], 1, "{job}");
    }
    assert!(
        field(&ran[0], "/status/completionTime") <= field(&ran[1], "/metadata/creationTimestamp"),
        "pre-delete before post-delete: {ran:?}"
    );
    assert!(get(run, "job", "post").is_some(), "hooks stay, as helm uninstall leaves them");

    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let cluster: airlock_bundle::ClusterId = l.cluster.parse().expect("a cluster id");
    let carried = runtime.block_on(airlock_e2e::publisher::read_back(&l.store, &cluster, &l.keys.keyring));
    let part = format!("ClusterProfile.{run}");
    let mut paths: Vec<&str> = carried.bundle().files().map(|(p, _)| p).filter(|p| p.starts_with(&part)).collect();
    paths.sort();
    let expected: Vec<String> = ["backup", "farewell"].iter().map(|n| format!("{part}/Job.{run}.{n}.yaml")).collect();
    assert_eq!(paths, expected, "the withdrawn part carries the delete hooks alone");

    l.publish_fleet(&withdrawn);
    let again = l.sync();
    assert!(again.status.success(), "the carried part again: {}", text(&again));
    let backup = get(run, "job", "backup").expect("backup");
    assert_eq!(backup["metadata"]["uid"], ran[0]["metadata"]["uid"], "a delete hook that fired does not fire again");

    let version = carried.predicate().version;
    let reported = withdrawn.replacen("annotations: {", &format!("annotations: {{airlock.dev/applied-version: '{version}', "), 1);
    l.publish_fleet(&reported);
    let dropped = runtime.block_on(airlock_e2e::publisher::read_back(&l.store, &cluster, &l.keys.keyring));
    assert!(!airlock_e2e::publisher::has_part(&dropped, &part), "the cluster reported applying the withdrawal: the part goes");
    let last = l.sync();
    assert!(last.status.success(), "after the part went: {}", text(&last));
    assert_eq!(get(run, "job", "backup").expect("backup")["metadata"]["uid"], ran[0]["metadata"]["uid"]);
}

#[test]
fn a_chart_dropped_from_a_matching_profile_uninstalls_with_its_delete_hooks() {
    let l = Loop::new("dropped");
    let run = &l.run;
    l.publish("Install", "{}", "");
    let first = l.sync();
    assert!(first.status.success(), "install: {}", text(&first));
    assert!(get(run, "configmap", "main").is_some(), "the release's object");

    let kept = "  policyRefs: []\n";
    l.publish_fleet(&edge_fleet(run, run, "airlock.dev/api-versions: 'apps/v1,batch/v1,v1'", kept));
    let dropped = l.sync();
    assert!(dropped.status.success(), "the chart dropped: {}", text(&dropped));
    assert!(get(run, "configmap", "main").is_none(), "the release's objects are pruned");
    for name in ["backup", "farewell"] {
        let job = get(run, "job", name).unwrap_or_else(|| panic!("the {name} delete hook ran"));
        assert_eq!(job["status"]["succeeded"], 1, "{job}");
    }
}
