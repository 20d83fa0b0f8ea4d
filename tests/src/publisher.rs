//! What the publisher's end-to-end tests share: running the binary, the fixture
//! management set with a unique run id, keys made by `keygen`, the summary table, reading
//! bundles back verified, and kubectl against the test apiservers.

pub mod live;
pub mod reports;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::Once;
use std::sync::atomic::{AtomicU32, Ordering};

use airlock_bundle::{ClusterId, Limits};
use airlock_bundle::{Expectation, Floor, Keyring, VerifiedBundle};
use airlock_store::{Fetch, RegistryCredentials, StoreRef, fetch_verified};
use jiff::Timestamp;

use crate::locks::{self, AirlockCrds};
use crate::{publisher_bin, root};

/// Runs the publisher with `args`; logs only warnings and errors.
pub fn run(args: &[&str]) -> Output {
    Command::new(publisher_bin()).args(args).env("AIRLOCK_LOG", "warn").env_remove("KUBECONFIG").output().expect("airlock-publisher runs")
}

/// Runs the publisher and asserts its exit code; returns stdout.
pub fn run_expect(args: &[&str], code: i32) -> String {
    let out = run(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "airlock-publisher {args:?}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A run id no other test or earlier run has used: a DNS label, so it can be a namespace.
pub fn unique(test: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("pub-{test}-{}-{}-{n}", Timestamp::now().as_second() % 1_000_000, std::process::id())
}

/// The names of a test run that registers clusters: the run id, which is also the
/// clusters' namespace on the management side, and on the managed side the puller's
/// namespace and the application's.
pub struct Names {
    pub run: String,
}

impl Names {
    pub fn new(test: &str) -> Names {
        Names { run: unique(test) }
    }

    pub fn ns(&self) -> &str {
        &self.run
    }

    pub fn puller_ns(&self) -> String {
        format!("airlock-{}", self.run)
    }

    pub fn app_ns(&self) -> String {
        format!("app-{}", self.run)
    }

    pub fn cluster(&self, name: &str) -> String {
        format!("{}/{name}", self.run)
    }

    /// `register cluster NAME` against the management apiserver, labelled `run=RUN`,
    /// contained to the application namespace, for a 1.20 managed cluster, with `args`
    /// (the store and its login); the registration YAML.
    pub fn register(&self, keys: &Keys, name: &str, args: &[&str]) -> String {
        let out = Command::new(publisher_bin())
            .args(["register", "cluster", "--namespace", &self.run, "--cluster", name, "--pullmode"])
            .args(["--labels", &format!("run={}", self.run), "--keyring", &keys.keyring_path, "--cronjob-api", "batch/v1beta1"])
            .args(["--puller-namespace", &self.puller_ns(), "--watch-namespaces", &self.app_ns()])
            .args(["--kubeconfig", &crate::service_env("AIRLOCK_KUBECONFIG_MANAGEMENT")])
            .args(args)
            .env("AIRLOCK_LOG", "warn")
            .output()
            .expect("airlock-publisher runs");
        let run = crate::Run::from(out);
        assert_eq!(run.code, Some(0), "register {name}: {run:?}");
        run.stdout
    }
}

/// The fixture management set of `publisher/tests/fixtures/fleet` with `run-id` replaced.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub run: String,
}

impl Fixture {
    pub fn new(test: &str) -> Fixture {
        let run = unique(test);
        let dir = tempfile::tempdir().expect("tempdir");
        let src = root().join("publisher/tests/fixtures/fleet");
        for entry in std::fs::read_dir(&src).expect("fixtures exist") {
            let path = entry.expect("fixture entry").path();
            let text = std::fs::read_to_string(&path).expect("fixture reads");
            std::fs::write(dir.path().join(path.file_name().expect("a file name")), text.replace("run-id", &run)).expect("fixture writes");
        }
        Fixture { dir, run }
    }

    pub fn path(&self) -> &str {
        self.dir.path().to_str().expect("UTF-8 temp path")
    }

    /// Replaces `from` (which must occur) by `to` in one fixture file.
    pub fn edit(&self, file: &str, from: &str, to: &str) {
        let path = self.dir.path().join(file);
        let text = std::fs::read_to_string(&path).expect("fixture reads");
        assert!(text.contains(from), "{file} has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("fixture writes");
    }

    pub fn cluster(&self, name: &str) -> ClusterId {
        format!("{}/{name}", self.run).parse().expect("valid cluster id")
    }

    /// The three pull-mode, unpaused clusters of the fixture.
    pub fn clusters(&self) -> [ClusterId; 3] {
        ["edge-1", "edge-2", "edge-3"].map(|n| self.cluster(n))
    }

    pub fn part(&self, profile: &str) -> String {
        format!("ClusterProfile.{}-{profile}", self.run)
    }
}

/// A key pair and keyring made by `airlock-publisher keygen`.
pub struct Keys {
    pub dir: tempfile::TempDir,
    pub key: String,
    pub public: String,
    pub keyring_path: String,
    pub keyring: Keyring,
}

impl Keys {
    pub fn new(name: &str) -> Keys {
        let dir = tempfile::tempdir().expect("tempdir");
        let out_dir = dir.path().to_str().expect("UTF-8 temp path").to_string();
        run_expect(&["keygen", "--out-dir", &out_dir, "--name", name], 0);
        let keyring_path = format!("{out_dir}/keyring.json");
        let keyring = Keyring::parse(&std::fs::read(&keyring_path).expect("keyring written"), &Limits::SPEC).expect("valid keyring");
        Keys { key: format!("{out_dir}/{name}.key"), public: format!("{out_dir}/{name}.pub"), keyring_path, keyring, dir }
    }
}

/// The summary table's (cluster, version, status) per line.
pub fn summary(stdout: &str) -> Vec<(String, String, String)> {
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(header, ["CLUSTER", "VERSION", "DIGEST", "OBJECTS", "STATUS", "WARNINGS"], "{stdout}");
    lines
        .take_while(|l| !l.contains(": "))
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            let status = cells[4..cells.len() - 1].join(" ");
            (cells[0].to_string(), cells[1].to_string(), status)
        })
        .collect()
}

/// The newest bundle of `cluster` in `store`, verified with `keyring` as a new puller would.
pub async fn read_back(store: &str, cluster: &ClusterId, keyring: &Keyring) -> VerifiedBundle {
    try_read_back(store, cluster, keyring).await.unwrap_or_else(|e| panic!("{cluster}: {e}"))
}

/// [`read_back`] that says why it found nothing.
pub async fn try_read_back(store: &str, cluster: &ClusterId, keyring: &Keyring) -> Result<VerifiedBundle, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let reference: StoreRef = store.parse().map_err(|e| format!("{e}"))?;
    let store = airlock_store::open(&reference, &RegistryCredentials::default()).await.map_err(|e| e.to_string())?;
    let floor = Floor::default();
    let expect = Expectation { cluster, keyring, floor: &floor, now: Timestamp::now() };
    match fetch_verified(store.as_ref(), &expect, &Limits::SPEC).await {
        Ok(Fetch::New(bundle)) => Ok(bundle),
        other => Err(format!("{other:?}")),
    }
}

/// The text of one bundle file.
pub fn file(bundle: &VerifiedBundle, path: &str) -> String {
    let (_, bytes) = bundle
        .bundle()
        .files()
        .find(|(p, _)| *p == path)
        .unwrap_or_else(|| panic!("no {path} in {:?}", bundle.bundle().files().map(|(p, _)| p).collect::<Vec<_>>()));
    String::from_utf8(bytes.to_vec()).expect("UTF-8 YAML")
}

pub fn has_part(bundle: &VerifiedBundle, part: &str) -> bool {
    bundle.predicate().profiles.iter().any(|p| p.name == part)
}

/// kubectl against the apiserver whose kubeconfig is the service variable `kubeconfig`
/// (`AIRLOCK_KUBECONFIG_MANAGEMENT` or `_MANAGED`), with `stdin` piped in.
pub fn kubectl(kubeconfig: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(crate::service_env("AIRLOCK_KUBECTL"))
        .arg("--kubeconfig")
        .arg(crate::service_env(kubeconfig))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child.stdin.take().expect("stdin").write_all(stdin).expect("kubectl reads stdin");
    child.wait_with_output().expect("kubectl finishes")
}

/// kubectl that must succeed; its stdout.
pub fn kubectl_ok(kubeconfig: &str, args: &[&str], stdin: &[u8]) -> String {
    let out = kubectl(kubeconfig, args, stdin);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("kubectl prints UTF-8")
}

/// `kubectl get ARGS -o json` on the management apiserver, parsed.
pub fn management_get(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&kubectl_ok("AIRLOCK_KUBECONFIG_MANAGEMENT", &all, b"")).expect("kubectl prints JSON")
}

/// The file `file` of the Sveltos documentation example `example` (a directory of
/// `testdata/sveltos-docs/`).
pub fn sveltos_doc(example: &str, file: &str) -> String {
    let path = root().join("testdata/sveltos-docs").join(example).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Deletes namespaces of the managed apiserver when dropped, also when the test failed.
pub struct ManagedNamespaces(pub Vec<String>);

impl Drop for ManagedNamespaces {
    fn drop(&mut self) {
        let _ = Command::new(crate::service_env("AIRLOCK_KUBECTL"))
            .args(["--kubeconfig", &crate::service_env("AIRLOCK_KUBECONFIG_MANAGED"), "delete", "namespace"])
            .args(["--ignore-not-found", "--wait=false"])
            .args(&self.0)
            .output();
    }
}

/// Installs the Sveltos CRDs of hack/crds/ into the management apiserver, and those of the
/// objects `ingest` and `status` write and read ([`install_status_crds`]); the test keeps
/// the guard for as long as it uses that apiserver.
pub fn install_crds() -> AirlockCrds {
    install_status_crds();
    let guard = locks::airlock_crds();
    let crds = root().join("hack/crds");
    let crds = crds.to_str().expect("UTF-8 path");
    kubectl_ok("AIRLOCK_KUBECONFIG_MANAGEMENT", &["apply", "--server-side", "-f", crds], b"");
    kubectl_ok("AIRLOCK_KUBECONFIG_MANAGEMENT", &["wait", "--for", "condition=established", "--timeout=60s", "-f", crds], b"");
    guard
}

/// The CRDs of Sveltos's objects beyond the profiles that `ingest` writes or reads
/// (ClusterConfiguration, ClusterReport, ConfigurationGroup), as 1.20 accepts them.
/// Once per test binary: no test removes them, and a fresh apiserver has none.
pub fn install_status_crds() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let out = Command::new(root().join("hack/sveltos-crds.sh"))
            .args(["status", &crate::service_env("AIRLOCK_KUBECONFIG_MANAGEMENT")])
            .env("AIRLOCK_KUBECTL", crate::service_env("AIRLOCK_KUBECTL"))
            .output()
            .expect("hack/sveltos-crds.sh runs");
        assert!(out.status.success(), "hack/sveltos-crds.sh status: {}", String::from_utf8_lossy(&out.stderr));
    });
}

/// A ClusterProfile every cluster labelled `run=RUN` matches, and its ConfigMap: one
/// ConfigMap `settings` (`color: COLOR`) in the application namespace.
pub fn management_set(run: &str, app_ns: &str, color: &str) -> String {
    format!(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: {run}-web}}\n\
         spec:\n  clusterSelector: {{matchLabels: {{run: {run}}}}}\n  policyRefs: [{{kind: ConfigMap, namespace: {run}, name: web}}]\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web, namespace: {run}}}\ndata:\n  web.yaml: |\n\
         \x20   apiVersion: v1\n    kind: ConfigMap\n    metadata: {{name: settings, namespace: {app_ns}}}\n    data: {{color: {color}}}\n"
    )
}
