//! The cluster the hostile cases attack: a unique cluster id with a 2-of-3 keyring, a state
//! namespace, an application namespace filled by a first good sync, and the snapshot that
//! proves a refused run changed nothing.
//!
//! The snapshot covers every object the puller could write for this cluster: all objects
//! labelled with its `airlock.dev/cluster` label in any namespace or none, all objects of
//! the application namespaces, and the state and inventory Secrets. The Lease and the report ConfigMap
//! are left out on purpose: every run, refused or not, renews the one and rewrites the other.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use airlock_bundle::ClusterId;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::{PartSettings, Release, SignedBundle, SigningKey, sign};
use airlock_cli::{KubeArgs, install_crypto_provider};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::{ApiCapabilities, Discovery, Scope, verbs};
use tokio::process::Command;

use crate::{Run, puller_bin};

/// The version the baseline runs at; hostile bundles claim the next one unless they
/// are about rollback.
pub const BASELINE: u64 = 10;
/// Kinds whose objects come and go on their own and say nothing about the puller.
const NOISE: [&str; 1] = ["Event"];

/// `Kind[.group] namespace/name` → resourceVersion.
pub type Snapshot = BTreeMap<String, String>;

pub struct Site {
    dir: tempfile::TempDir,
    /// Three keys, threshold 2; bundles are signed by the first two.
    pub fixture: Fixture,
    pub cluster: ClusterId,
    pub state_ns: String,
    pub app_ns: String,
    pub client: kube::Client,
    /// The API server's kubeconfig, for the test's client and the puller's.
    kubeconfig: String,
    /// Every kind the API server lists, with whether it is namespaced.
    kinds: Vec<(ApiResource, bool)>,
    /// The value of the cluster label on the objects the puller applied.
    label: String,
}

impl Site {
    /// A site on the shared managed API server.
    pub async fn new() -> Site {
        Site::on(kubeconfig()).await
    }

    /// A site on the API server `kubeconfig` names.
    pub async fn on(kubeconfig: String) -> Site {
        install_crypto_provider();
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!("hostile-{:x}-{:x}-{n}", Timestamp::now().as_second() % 0x100_0000, std::process::id());
        let mut fixture = Fixture::with_keys(&[1, 2, 3], 2);
        let cluster: ClusterId = format!("e2e/{id}").parse().expect("valid cluster id");
        fixture.cluster = cluster.clone();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("keyring.json"), fixture.keyring.to_json()).expect("keyring written");
        let kube = KubeArgs { kubeconfig: Some(kubeconfig.clone().into()), context: None };
        let client = kube.client().await.expect("client for the apiserver");
        let discovery = discover(&client).await;
        let kinds = discovery
            .groups()
            .flat_map(|g| g.recommended_resources())
            .filter(|(ar, caps): &(ApiResource, ApiCapabilities)| {
                caps.supports_operation(verbs::LIST) && !NOISE.contains(&ar.kind.as_str())
            })
            .map(|(ar, caps)| (ar, caps.scope == Scope::Namespaced))
            .collect();
        let site = Site {
            dir,
            fixture,
            cluster,
            state_ns: format!("airlock-{id}"),
            app_ns: format!("app-{id}"),
            client,
            kubeconfig,
            kinds,
            label: String::new(),
        };
        crate::create_namespace(&site.client, &site.state_ns).await;
        site
    }

    /// A namespace the watch-namespaces cases write to; cleaned up with the site.
    pub fn outside_ns(&self) -> String {
        format!("{}-x", self.app_ns)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The application Namespace and `count` ConfigMaps holding `value`, in one profile.
    pub fn files(&self, count: usize, value: &str) -> Vec<(String, Vec<u8>)> {
        crate::puller::app_files(&self.app_ns, count, value)
    }

    /// One ConfigMap file of the `app` profile.
    pub fn config_map(&self, name: &str, namespace: &str, value: &str) -> (String, Vec<u8>) {
        crate::puller::config_map_file(name, namespace, value)
    }

    /// What a bundle is signed as unless a case says else: this cluster, issued now,
    /// valid for an hour, keyring version 1.
    pub fn release(&self, version: u64) -> Release {
        let now = Timestamp::from_second(Timestamp::now().as_second()).expect("valid time");
        Release { issued_at: now, expires: now + SignedDuration::from_hours(1), ..self.fixture.release(version) }
    }

    /// `files` signed by the first two fixture keys as `release` says.
    pub fn signed(&self, files: Vec<(String, Vec<u8>)>, release: &Release) -> SignedBundle {
        self.signed_by(files, release, &self.fixture.keys[..2], None)
    }

    pub fn signed_by(
        &self,
        files: Vec<(String, Vec<u8>)>,
        release: &Release,
        keys: &[SigningKey],
        keyring_chain: Option<Vec<u8>>,
    ) -> SignedBundle {
        sign::sign(Fixture::bundle(files), release, &|_| PartSettings::default(), keys, keyring_chain)
    }

    /// `airlock-puller sync` of this cluster from `source`.
    pub async fn sync(&self, source: &str, extra: &[String]) -> Run {
        self.sync_command(source, extra).output().await.expect("airlock-puller runs").into()
    }

    /// The command [`Site::sync`] runs, not yet started, for callers that add to it.
    pub fn sync_command(&self, source: &str, extra: &[String]) -> Command {
        let mut cmd = Command::new(puller_bin());
        cmd.arg("sync")
            .arg(format!("--source={source}"))
            .arg(format!("--cluster={}", self.cluster))
            .arg("--keyring")
            .arg(self.path("keyring.json"))
            .arg(format!("--state-namespace={}", self.state_ns))
            .args(extra)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("AIRLOCK_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Applies the baseline bundle from `source` and waits until the cluster is quiet
    /// (the token controller fills the new namespace's ServiceAccount a moment later).
    pub async fn apply_baseline(&mut self, source: &str) -> Snapshot {
        let run = self.sync(source, &[]).await;
        assert!(run.code == Some(0) && run.stdout.contains(&format!("applied version {BASELINE}")), "{run:?}");
        let ns = Api::<Namespace>::all(self.client.clone()).get(&self.app_ns).await.expect("baseline namespace");
        self.label = ns.metadata.labels.unwrap_or_default().remove("airlock.dev/cluster").expect("cluster label");
        let mut last = self.snapshot().await;
        for _ in 0..60 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = self.snapshot().await;
            if now == last {
                return now;
            }
            last = now;
        }
        panic!("the cluster never settled after the baseline sync: {last:#?}");
    }

    /// resourceVersion of every object a sync of this cluster could have written.
    pub async fn snapshot(&self) -> Snapshot {
        let mut out = Snapshot::new();
        let labelled = ListParams::default().labels(&format!("airlock.dev/cluster={}", self.label));
        for (ar, namespaced) in &self.kinds {
            let api = Api::<DynamicObject>::all_with(self.client.clone(), ar);
            add(&mut out, ar, api.list_metadata(&labelled).await);
            if *namespaced {
                for ns in [self.app_ns.clone(), self.outside_ns()] {
                    let api = Api::<DynamicObject>::namespaced_with(self.client.clone(), &ns, ar);
                    add(&mut out, ar, api.list_metadata(&ListParams::default()).await);
                }
            }
        }
        let secrets = Api::<Secret>::namespaced(self.client.clone(), &self.state_ns);
        for prefix in ["airlock-state-", "airlock-inventory-"] {
            let name = format!("{prefix}{}", self.cluster.name());
            let secret = secrets.get_opt(&name).await.expect("read the puller's Secret");
            let secret = secret.unwrap_or_else(|| panic!("the baseline wrote the Secret {name}"));
            out.insert(format!("Secret {}/{name}", self.state_ns), secret.metadata.resource_version.unwrap_or_default());
        }
        out
    }
}

/// Every API group the server serves. Other tests on the same API server add and remove
/// CRDs: a group that goes away between listing groups and reading one answers 404, and
/// asking again no longer sees it.
async fn discover(client: &kube::Client) -> Discovery {
    let mut tries = 0;
    loop {
        match Discovery::new(client.clone()).run().await {
            Ok(discovery) => return discovery,
            Err(e) if airlock_cli::status_code(&e) == Some(404) && tries < 5 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(e) => panic!("discovery: {e}"),
        }
    }
}

fn add(out: &mut Snapshot, ar: &ApiResource, list: kube::Result<kube::core::ObjectList<kube::core::PartialObjectMeta<DynamicObject>>>) {
    let list = match list {
        Ok(list) => list,
        // Other tests on the same API server add and remove CRDs: a kind that went away
        // since discovery holds nothing.
        Err(e) if airlock_cli::status_code(&e) == Some(404) => return,
        Err(e) => panic!("list {}/{}: {e}", ar.group, ar.plural),
    };
    for item in list.items {
        let m = item.metadata;
        let kind = if ar.group.is_empty() { ar.kind.clone() } else { format!("{}.{}", ar.kind, ar.group) };
        let key = format!("{kind} {}/{}", m.namespace.unwrap_or_default(), m.name.unwrap_or_default());
        out.insert(key, m.resource_version.unwrap_or_default());
    }
}

/// Deletes the site's namespaces without waiting for their finalization, also when the
/// test failed.
impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::process::Command::new(crate::service_env("AIRLOCK_KUBECTL"))
            .args(["--kubeconfig", &self.kubeconfig, "delete", "namespace", "--ignore-not-found", "--wait=false"])
            .args([&self.state_ns, &self.app_ns, &self.outside_ns()])
            .output();
    }
}

fn kubeconfig() -> String {
    crate::service_env("AIRLOCK_KUBECONFIG_MANAGED")
}
