//! The helpers of the end-to-end tests (the one test binary `e2e.rs`, a module per area):
//! where `hack/services.sh` started the services, clients of its API servers, the binaries
//! under test (built once per test process), new Git repositories, and the output of a
//! finished process. The other modules are the harnesses more than one area uses: `kept`
//! reads what the puller keeps in the cluster, `puller` and `publisher` run the binaries
//! against the services, `oci` pushes artifacts, `chart_repo` serves Helm charts,
//! `login_servers` runs stores with logins of their own, `probe` checks a registered
//! puller's grant, `hostile_site` is the cluster the hostile and fault cases attack,
//! `fault_proxy` injects faults in front of a service, and `locks` guards what a few tests
//! must have to themselves. `src/bin` holds the helpers the tests run as processes.
#![forbid(unsafe_code)]

pub mod chart_repo;
pub mod fault_proxy;
pub mod hostile_site;
pub mod kept;
pub mod locks;
pub mod login_servers;
pub mod oci;
pub mod probe;
pub mod publisher;
pub mod puller;

use std::path::PathBuf;

/// `$AIRLOCK_STATE/services.env` (default `~/.cache/airlock/run/services.env`), written by
/// `hack/services.sh start`.
pub fn services_env_path() -> PathBuf {
    let state = std::env::var_os("AIRLOCK_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/airlock/run"));
    state.join("services.env")
}

/// The value of `key`: from the environment, else from [`services_env_path`]. Panics with
/// how to start the services when neither has it: these tests fail, they never skip.
pub fn service_env(key: &str) -> String {
    if let Some(value) = std::env::var(key).ok().filter(|v| !v.is_empty()) {
        return value;
    }
    let path = services_env_path();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let found = text.lines().find_map(|line| {
        let line = line.trim();
        let (k, v) = line.strip_prefix("export ").unwrap_or(line).split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
    });
    found.filter(|v| !v.is_empty()).unwrap_or_else(|| {
        panic!(
            "{key} is neither in the environment nor in {}: start the test services with \
             `hack/services.sh start` (then `source {}`)",
            path.display(),
            path.display()
        )
    })
}

/// The kubeconfig of the managed cluster's API server, which the pullers apply to.
pub fn managed_kubeconfig() -> String {
    service_env("AIRLOCK_KUBECONFIG_MANAGED")
}

/// A client of the API server `kubeconfig` names.
pub async fn kube_client(kubeconfig: &str) -> kube::Client {
    let config = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default()).await.expect("kube config");
    kube::Client::try_from(config).expect("kube client")
}

/// The workspace root.
pub fn root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/debug/<bin>`, a binary of the workspace. A test crate cannot depend on a
/// binary, so the first call builds every binary of the workspace with cargo, in one
/// invocation: with the workspace's own feature set its dependencies are those
/// `cargo test --workspace` has just built, where `cargo build -p` for each binary would
/// build them twice more with features of its own.
fn binary(bin: &str) -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status =
            std::process::Command::new(cargo).current_dir(root()).args(["build", "--workspace", "--bins"]).status().expect("cargo runs");
        assert!(status.success(), "cargo build --workspace --bins failed");
    });
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"));
    target.join("debug").join(bin)
}

/// `target/debug/airlock-puller`, built once per test process.
pub fn puller_bin() -> PathBuf {
    binary("airlock-puller")
}

/// `target/debug/airlock-publisher`, built once per test process.
pub fn publisher_bin() -> PathBuf {
    binary("airlock-publisher")
}

/// The kubectl kustomizations are built with: `$AIRLOCK_KUSTOMIZE_KUBECTL`, else the one
/// hack/helm.sh installs, so the builds do not depend on a kubectl the machine may lack.
pub fn kustomize_kubectl() -> PathBuf {
    let path = std::env::var_os("AIRLOCK_KUSTOMIZE_KUBECTL").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("AIRLOCK_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/airlock"));
        cache.join("kubectl/v1.32.3/kubectl")
    });
    assert!(path.is_file(), "no kubectl at {}: run hack/helm.sh", path.display());
    path
}

/// A new empty repository `name` on the test Git server (`hack/git-server.sh new-repo`);
/// its http URL.
pub fn new_git_repo(name: &str) -> String {
    service_env("AIRLOCK_GIT_HTTP");
    let script = root().join("hack/git-server.sh");
    let out = std::process::Command::new(&script).args(["new-repo", name]).output().expect("hack/git-server.sh runs");
    assert!(out.status.success(), "{} new-repo: {}", script.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("a UTF-8 URL").trim().to_string()
}

/// `git` in `dir` with a fixed identity; panics with git's stderr when it fails.
pub fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=airlock", "-c", "user.email=airlock@example.invalid"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
}

/// A finished process: exit code and output, printed whole when an assertion fails.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Run {
    fn from(o: std::process::Output) -> Run {
        Run {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// A run that exited with `code`; the whole run is printed when it did not.
pub fn assert_exit(run: &Run, code: i32) {
    assert_eq!(run.code, Some(code), "{run:?}");
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {:?}\n--- stdout\n{}--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

/// Creates the namespace `name` through `client`.
pub async fn create_namespace(client: &kube::Client, name: &str) {
    let ns = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta { name: Some(name.to_string()), ..Default::default() },
        ..Default::default()
    };
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .create(&kube::api::PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("namespace {name} not created: {e}"));
}
