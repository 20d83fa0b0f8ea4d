//! `airlock-publisher watch --scale-out`: three replicas share the fleet of the management
//! apiserver of `hack/services.sh`, publishing to the registry through a proxy that makes
//! every request slow enough for a publish to take seconds. Each cluster's first version
//! is written by the replica the hash assigns it to; then one replica is killed (SIGKILL)
//! while it writes the second versions, and the others take its clusters over once its
//! Lease expired: every cluster ends at exactly one new version, written by one replica.
//! The replicas serve the run's own Sveltos shard key, so the clusters of other tests are
//! none of theirs; a cluster of the run without the key is published by none of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use airlock_e2e::fault_proxy::Proxy;
use airlock_e2e::publisher::live::{kubeconfig, kubectl};
use airlock_e2e::publisher::{Keys, install_crds, try_read_back, unique};
use airlock_e2e::{publisher_bin, service_env};
use airlock_publisher::shard::owner;

/// Enough clusters that one replica's share takes seconds to write through the proxy.
const CLUSTERS: usize = 60;
const LEASE: Duration = Duration::from_secs(6);
const SETTLED: &str = "every publisher works under the new view; publishing its clusters";

/// A `watch --scale-out` replica with its log in a file.
struct Replica {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Replica {
    fn start(name: &str, store: &str, keys: &Keys, namespace: &str, dir: &Path) -> Replica {
        let log = dir.join(format!("{name}.log"));
        let cache = dir.join(format!("{name}-cache"));
        let child = Command::new(publisher_bin())
            .args(["watch", "--kubeconfig", &kubeconfig(), "--to", store, "--key", &keys.key, "--scale-out", "--shard-key", namespace])
            .args(["--lease-namespace", namespace, "--lease-duration", &format!("{}s", LEASE.as_secs()), "--identity", name])
            .args(["--debounce", "1s", "--no-reports", "--log-format", "json"])
            .arg("--cache-dir")
            .arg(&cache)
            .env_remove("KUBECONFIG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("airlock-publisher watch starts");
        Replica { name: name.into(), child, log }
    }

    fn lines(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// The clusters this replica wrote to the store at `version`, each as often as written.
    fn wrote(&self, version: u64) -> Vec<String> {
        self.lines()
            .iter()
            .map(|l| l.get("fields").unwrap_or(l))
            .filter(|f| f["message"] == "published" && f.get("store").is_some() && f["version"] == version)
            .filter_map(|f| f["cluster"].as_str().map(str::to_string))
            .collect()
    }

    /// Whether it settled on a view of exactly `members`.
    fn settled_on(&self, members: &[&str]) -> bool {
        // The view as the replica logs it, a Debug list of the identities.
        let want = format!("{members:?}");
        self.lines().iter().map(|l| l.get("fields").unwrap_or(l)).any(|f| f["message"] == SETTLED && f["members"] == want.as_str())
    }

    fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            eprintln!("--- the last lines of {}'s log:\n{}", self.name, tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The management objects: `CLUSTERS` pull-mode clusters of shard key `run`, one without
/// a key, and one profile deploying a ConfigMap whose value the test changes.
fn management(run: &str, value: &str) -> String {
    let mut yaml = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: fleet-manifests, namespace: {run}}}\ndata:\n  settings.yaml: |\n    \
         apiVersion: v1\n    kind: ConfigMap\n    metadata: {{name: settings, namespace: apps}}\n    data: {{value: \"{value}\"}}\n---\n\
         apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: {run}-fleet}}\nspec:\n  \
         clusterSelector: {{matchLabels: {{e2e.airlock.dev/run: {run}}}}}\n  policyRefs: [{{kind: ConfigMap, namespace: {run}, name: fleet-manifests}}]\n"
    );
    for i in 0..=CLUSTERS {
        let name = if i == CLUSTERS { "unkeyed".to_string() } else { format!("edge-{i}") };
        let key = if i == CLUSTERS { String::new() } else { format!("\n  annotations: {{sharding.projectsveltos.io/key: {run}}}") };
        yaml.push_str(&format!(
            "---\napiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata:\n  name: {name}\n  namespace: {run}\n  \
             labels: {{e2e.airlock.dev/run: {run}}}{key}\nspec: {{pullMode: true}}\n"
        ));
    }
    yaml
}

fn apply(dir: &Path, run: &str, value: &str) {
    let file = dir.join("management.yaml");
    std::fs::write(&file, management(run, value)).expect("management set written");
    kubectl(&["apply", "--server-side", "-f", &file.display().to_string()]);
}

/// The namespace and profile of a run, removed on drop.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let profile = format!("{}-fleet", self.0);
        let _ =
            std::panic::catch_unwind(|| kubectl(&["delete", "clusterprofiles.config.projectsveltos.io", "--ignore-not-found", &profile]));
        let _ = std::panic::catch_unwind(|| kubectl(&["delete", "namespace", &self.0, "--wait=false"]));
    }
}

async fn until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every cluster written at `version` by `replicas`, with who wrote it.
fn writers(replicas: &[&Replica], version: u64) -> BTreeMap<String, Vec<String>> {
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in replicas {
        for cluster in r.wrote(version) {
            by.entry(cluster).or_default().push(r.name.clone());
        }
    }
    by
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_the_fleet_and_take_over_a_killed_ones_clusters() {
    let _crds = install_crds();
    let names = ["replica-a", "replica-b", "replica-c"];
    let view: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let b_takes = |run: &str| (0..CLUSTERS).filter(|i| owner(&view, &format!("{run}/edge-{i}")) == Some("replica-b")).count();
    // The names hash anew each run: one that left replica-b a few clusters would let it
    // finish before it is killed, and test nothing.
    let run = std::iter::repeat_with(|| unique("shards")).find(|run| b_takes(run) >= CLUSTERS / 5).expect("an endless supply of names");
    kubectl(&["create", "namespace", &run]);
    let _cleanup = Cleanup(run.clone());
    let tmp = tempfile::tempdir().expect("tempdir");
    let keys = Keys::new("ops");
    let registry = service_env("AIRLOCK_REGISTRY");
    let proxy = Proxy::http(&registry).await;
    proxy.delay(Duration::from_millis(60));
    let store = format!("oci+http://{}/airlock-e2e/{run}", proxy.addr());
    let direct = format!("oci+http://{registry}/airlock-e2e/{run}");
    let mut replicas: Vec<Replica> = names.iter().map(|n| Replica::start(n, &store, &keys, &run, tmp.path())).collect();
    until("the three replicas agree on who publishes what", Duration::from_secs(60), || replicas.iter().all(|r| r.settled_on(&names)))
        .await;

    // First versions: every cluster once, by the replica the hash assigns it to.
    apply(tmp.path(), &run, "one");
    let clusters: Vec<String> = (0..CLUSTERS).map(|i| format!("{run}/edge-{i}")).collect();
    until("every cluster has its first version", Duration::from_secs(120), || {
        writers(&replicas.iter().collect::<Vec<_>>(), 1).len() == CLUSTERS
    })
    .await;
    let first = writers(&replicas.iter().collect::<Vec<_>>(), 1);
    for cluster in &clusters {
        let expected = owner(&view, cluster).expect("three members");
        assert_eq!(first.get(cluster), Some(&vec![expected.to_string()]), "{cluster}: first version written by");
    }
    let share_b: BTreeSet<&String> = clusters.iter().filter(|c| owner(&view, c) == Some("replica-b")).collect();

    // Second versions: replica-b is killed as soon as it wrote its first one.
    apply(tmp.path(), &run, "two");
    until("replica-b writes a second version", Duration::from_secs(60), || !replicas[1].wrote(2).is_empty()).await;
    replicas[1].kill();
    let killed = Instant::now();
    let by_b_before: BTreeSet<String> = replicas[1].wrote(2).into_iter().collect();
    assert!(by_b_before.len() < share_b.len(), "replica-b finished its {} clusters before it was killed", share_b.len());
    let (a, c) = (&replicas[0], &replicas[2]);
    until("the survivors take replica-b's clusters", LEASE + Duration::from_secs(4), || {
        a.settled_on(&["replica-a", "replica-c"]) && c.settled_on(&["replica-a", "replica-c"])
    })
    .await;
    let took_over = killed.elapsed();
    until("every cluster has its second version", Duration::from_secs(120), || writers(&[a, c], 2).len() + by_b_before.len() >= CLUSTERS)
        .await;
    let published = killed.elapsed();

    let mut second = writers(&[a, c], 2);
    for cluster in &by_b_before {
        second.entry(cluster.clone()).or_default().push("replica-b".into());
    }
    for cluster in &clusters {
        assert_eq!(second.get(cluster).map(Vec::len), Some(1), "{cluster}: second version written by {:?}", second.get(cluster));
    }
    // Nothing more is written, and the store holds version 2 for every cluster.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for cluster in &clusters {
        let id = cluster.parse().expect("cluster id");
        let bundle = try_read_back(&direct, &id, &keys.keyring).await.unwrap_or_else(|e| panic!("{cluster}: {e}"));
        assert_eq!(bundle.predicate().version, 2, "{cluster}");
    }
    assert!(a.wrote(3).is_empty() && c.wrote(3).is_empty(), "a third version was written");
    let unkeyed = format!("{run}/unkeyed").parse().expect("cluster id");
    assert!(try_read_back(&direct, &unkeyed, &keys.keyring).await.is_err(), "a cluster of no shard key was published");
    eprintln!(
        "replica-b held {} clusters and wrote {} before it was killed; the survivors settled {:.1}s and published all {:.1}s after the kill",
        share_b.len(),
        by_b_before.len(),
        took_over.as_secs_f64(),
        published.as_secs_f64()
    );
}
