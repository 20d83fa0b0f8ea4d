//! `airlock-publisher` reading a live management cluster: the Kubernetes 1.20 apiserver of
//! `hack/services.sh` with the Sveltos CRDs of `hack/crds/`, and the fixture management set
//! applied with kubectl in a namespace of its own. `publish` from it, and `watch` following
//! a label change on a SveltosCluster while two replicas share the Lease.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use airlock_bundle::ClusterId;
use airlock_bundle::{Keyring, VerifiedBundle};
use airlock_e2e::publisher::live::{Applied, kubeconfig, kubectl};
use airlock_e2e::publisher::{Keys, file, has_part, read_back, run_expect, summary, try_read_back};
use airlock_e2e::publisher_bin;

#[tokio::test]
async fn publishes_from_the_management_cluster() {
    let applied = Applied::new("live");
    let fx = &applied.0;
    let keys = Keys::new("ops");
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = format!("oci-layout:{}", tmp.path().join("layout").display());
    let [e1, e2, e3] = fx.clusters().map(|c| c.to_string());
    let kc = kubeconfig();
    let publish =
        ["publish", "--kubeconfig", &kc, "--to", &store, "--key", &keys.key, "--cluster", &e1, "--cluster", &e2, "--cluster", &e3];

    let rows = summary(&run_expect(&publish, 0));
    assert_eq!(
        rows.iter().map(|(c, v, s)| (c.as_str(), v.as_str(), s.as_str())).collect::<Vec<_>>(),
        [(e1.as_str(), "1", "published"), (e2.as_str(), "1", "published"), (e3.as_str(), "1", "published")]
    );
    let b1 = read_back(&store, &fx.cluster("edge-1"), &keys.keyring).await;
    let info = file(&b1, &format!("{}/ConfigMap.apps.cluster-info.yaml", fx.part("base")));
    assert!(info.contains("zone: NORTH") && info.contains("owner: platform"), "{info}");
    assert!(file(&b1, &format!("{}/Secret.apps.registry-credentials.yaml", fx.part("secret"))).contains("token: not-a-real-token"));
    assert_eq!(b1.predicate().settings.watch_namespaces, Some(vec!["apps".to_string(), "kube-public".to_string()]));

    // The same objects read from files render the same bundles.
    let from_dir = ["publish", "--from-dir", fx.path(), "--to", &store, "--key", &keys.key, "--dry-run"];
    let rows = summary(&run_expect(&from_dir, 0));
    assert!(rows.len() == 3 && rows.iter().all(|(_, v, s)| v == "1" && s == "unchanged"), "{rows:?}");

    fx.edit("configmaps.yaml", "replicas: \"3\"", "replicas: \"7\"");
    kubectl(&["apply", "--server-side", "-f", &fx.dir.path().join("configmaps.yaml").display().to_string()]);
    let rows = summary(&run_expect(&publish, 0));
    let versions: Vec<(&str, &str)> = rows.iter().map(|(c, v, _)| (c.as_str(), v.as_str())).collect();
    assert_eq!(versions, [(e1.as_str(), "2"), (e2.as_str(), "2"), (e3.as_str(), "1")]);
    let b2 = read_back(&store, &fx.cluster("edge-2"), &keys.keyring).await;
    assert!(file(&b2, &format!("{}/ConfigMap.apps.zone-settings.yaml", fx.part("north"))).contains("replicas: \"7\""));
}

/// A `watch` replica with its log in a file.
struct Replica {
    child: Child,
    log: std::path::PathBuf,
}

impl Replica {
    fn start(identity: &str, store: &str, keys: &Keys, cluster: &ClusterId, lease_namespace: &str, dir: &Path) -> Replica {
        let log = dir.join(format!("{identity}.log"));
        let child = Command::new(publisher_bin())
            .args(["watch", "--kubeconfig", &kubeconfig(), "--to", store, "--key", &keys.key, "--cluster", &cluster.to_string()])
            .args(["--lease-namespace", lease_namespace, "--debounce", "1s", "--identity", identity, "--log-format", "json"])
            .env_remove("KUBECONFIG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("airlock-publisher watch starts");
        Replica { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_log(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.log().contains(needle) {
            assert!(Instant::now() < deadline, "no {needle:?} in the log after 60s:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM, then the exit code.
    fn stop(mut self) -> Option<i32> {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("kill runs");
        self.child.wait().expect("watch exits").code()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// Waits until the store holds a bundle for `cluster` that `done` accepts.
async fn wait_bundle(store: &str, cluster: &ClusterId, keyring: &Keyring, done: impl Fn(&VerifiedBundle) -> bool) -> VerifiedBundle {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let last = match try_read_back(store, cluster, keyring).await {
            Ok(b) if done(&b) => return b,
            Ok(b) => format!("version {}", b.predicate().version),
            Err(e) => e,
        };
        assert!(Instant::now() < deadline, "{cluster}: not there after 60s; last seen: {last}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
async fn watch_follows_a_label_change_and_hands_over_the_lease() {
    let applied = Applied::new("watch");
    let fx = &applied.0;
    let keys = Keys::new("ops");
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = format!("oci-layout:{}", tmp.path().join("layout").display());
    let edge3 = fx.cluster("edge-3");
    let canary = fx.part("canary");
    let canary_file = format!("{canary}/ConfigMap.apps.canary.yaml");

    let a = Replica::start("replica-a", &store, &keys, &edge3, &fx.run, tmp.path());
    let first = wait_bundle(&store, &edge3, &keys.keyring, |_| true).await;
    assert_eq!(first.predicate().version, 1);
    assert!(!has_part(&first, &canary));
    let b = Replica::start("replica-b", &store, &keys, &edge3, &fx.run, tmp.path());
    b.wait_log("standing by");
    let holder = kubectl(&["get", "lease", "-n", &fx.run, "airlock-publisher", "-o", "jsonpath={.spec.holderIdentity}"]);
    assert_eq!(holder, "replica-a");

    kubectl(&["label", "sveltoscluster", "-n", &fx.run, "edge-3", "e2e.airlock.dev/canary=true"]);
    let added = wait_bundle(&store, &edge3, &keys.keyring, |b| b.predicate().version == 2).await;
    assert!(file(&added, &canary_file).contains("canary: \"true\""));
    a.wait_log(r#""version":2"#);
    assert!(!b.log().contains(r#""message":"published""#), "the standby published:\n{}", b.log());

    assert_eq!(a.stop(), Some(0), "SIGTERM ends watch cleanly");
    b.wait_log("lease acquired");
    kubectl(&["label", "sveltoscluster", "-n", &fx.run, "edge-3", "e2e.airlock.dev/canary-"]);
    let withdrawn = wait_bundle(&store, &edge3, &keys.keyring, |b| b.predicate().version == 3).await;
    assert!(!has_part(&withdrawn, &canary), "the canary part is withdrawn");
    b.wait_log(r#""version":3"#);
    assert_eq!(b.stop(), Some(0));
}
