//! The render worker on a real publisher: `watch` from the management apiserver to the
//! registry keeps one worker across its runs, a child of its own. The worker holds none of
//! the publisher's environment (a planted variable, `KUBECONFIG`, the registry password),
//! runs with `no_new_privs`, holds no descriptor of the key file or the kubeconfig, and
//! the bundles it rendered and the publisher signed verify with the publisher's keyring.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use airlock_e2e::publisher::live::{Applied, kubeconfig, kubectl};
use airlock_e2e::publisher::{Keys, try_read_back, unique};
use airlock_e2e::publisher_bin;

/// The publisher, killed when the test ends however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The children of `parent` whose command line has `word`.
fn children(parent: u32, word: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc lists") {
        let Some(pid) = entry.expect("a /proc entry").file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:")).map(str::trim);
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(&parent.to_string()) && String::from_utf8_lossy(&cmdline).split('\0').any(|a| a == word) {
            found.push(pid);
        }
    }
    found
}

fn environ(pid: u32) -> Vec<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/environ")).expect("the environment of a process of ours reads");
    bytes.split(|b| *b == 0).filter(|v| !v.is_empty()).map(|v| String::from_utf8_lossy(v).into_owned()).collect()
}

fn descriptors(pid: u32) -> Vec<PathBuf> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).expect("the descriptors of a process of ours list");
    dir.filter_map(|e| std::fs::read_link(e.expect("a descriptor").path()).ok()).collect()
}

#[tokio::test]
async fn the_render_worker_holds_nothing_of_the_publishers_and_comes_back_when_killed() {
    let applied = Applied::new("worker");
    let fx = &applied.0;
    let keys = Keys::new("ops");
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = format!("oci+http://{}/airlock-e2e/{}", airlock_e2e::service_env("AIRLOCK_REGISTRY"), unique("worker"));
    let edge1 = fx.cluster("edge-1");
    let canary = format!("canary-{}", fx.run);
    let cache = tmp.path().join("cache");
    let log = tmp.path().join("watch.log");
    let publisher = Running(
        // Through a shell that leaves the key file open as descriptor 3, as a careless
        // wrapper script would: the publisher inherits it, the worker must not.
        Command::new("sh")
            .args(["-c", r#"exec "$0" "$@" 3<"$AIRLOCK_E2E_OPEN_FILE""#])
            .arg(publisher_bin())
            .env("AIRLOCK_E2E_OPEN_FILE", &keys.key)
            .args(["watch", "--to", &store, "--key", &keys.key, "--cluster", &edge1.to_string(), "--no-reports"])
            .args(["--lease-namespace", &fx.run, "--cache-dir", cache.to_str().expect("UTF-8 temp path")])
            .env("KUBECONFIG", kubeconfig())
            .env("AIRLOCK_E2E_CANARY", &canary)
            .env("AIRLOCK_REGISTRY_USERNAME", "canary-user")
            .env("AIRLOCK_REGISTRY_PASSWORD", &canary)
            .env("AIRLOCK_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("airlock-publisher watch starts"),
    );
    let parent = publisher.0.id();

    let published = |version: u64| {
        let (store, edge1, keys, log) = (&store, &edge1, &keys, &log);
        async move {
            let deadline = Instant::now() + Duration::from_secs(90);
            loop {
                let seen = match try_read_back(store, edge1, &keys.keyring).await {
                    Ok(bundle) if bundle.predicate().version == version => return,
                    Ok(bundle) => format!("version {}", bundle.predicate().version),
                    Err(e) => e,
                };
                let log = std::fs::read_to_string(log).unwrap_or_default();
                assert!(Instant::now() < deadline, "{edge1}: no version {version} after 90s ({seen}); the log:\n{log}");
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    };
    // Verified with the publisher's keyring: rendered by the worker, signed by the publisher.
    published(1).await;

    let workers = children(parent, "render-worker");
    assert_eq!(workers.len(), 1, "one worker, kept across runs: {workers:?}");
    let worker = workers[0];
    assert!(environ(parent).contains(&format!("AIRLOCK_E2E_CANARY={canary}")), "the planted variable is the publisher's");
    let env = environ(worker);
    let leaked: Vec<&String> =
        env.iter().filter(|v| v.contains(&canary) || v.starts_with("KUBECONFIG=") || v.starts_with("AIRLOCK_REGISTRY")).collect();
    assert!(leaked.is_empty(), "the worker's environment holds {leaked:?}");
    assert!(env.contains(&"MIMALLOC_PURGE_DELAY=10000".to_string()), "the worker's allocator keeps freed memory: {env:?}");
    let home = env.iter().find_map(|v| v.strip_prefix("HOME=")).expect("the worker has a HOME");
    assert_ne!(Some(home), std::env::var("HOME").ok().as_deref(), "the worker's HOME is its scratch directory");
    let status = std::fs::read_to_string(format!("/proc/{worker}/status")).expect("the worker's status reads");
    assert!(status.lines().any(|l| l.split_whitespace().eq(["NoNewPrivs:", "1"])), "{status}");
    let key = std::fs::canonicalize(&keys.key).expect("the key file exists");
    let config = std::fs::canonicalize(kubeconfig()).expect("the kubeconfig exists");
    assert!(descriptors(parent).contains(&key), "the publisher inherited the key file as a descriptor");
    let held = descriptors(worker);
    assert!(!held.is_empty(), "the worker's descriptors list");
    for path in &held {
        assert!(path != &key && path != &config && !path.starts_with(keys.dir.path()), "the worker holds {}", path.display());
    }

    // A worker that dies is replaced at the next run, which publishes as before.
    Command::new("kill").args(["-KILL", &worker.to_string()]).status().expect("kill runs");
    kubectl(&["label", "sveltoscluster", "-n", &fx.run, "edge-1", "e2e.airlock.dev/canary=true"]);
    published(2).await;
    let again = children(parent, "render-worker");
    assert!(again.len() == 1 && again[0] != worker, "a new worker: {again:?}, the killed one {worker}");
}
