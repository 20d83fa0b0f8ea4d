//! The harness of `puller.rs`: one test's cluster (`e2e/<unique>`, with its own state and
//! application namespaces, so tests run in parallel and reruns never collide), bundles
//! signed for it and published into OCI layout directories, the real `airlock-puller`
//! binary run against the managed API server (`AIRLOCK_KUBECONFIG_MANAGED`), and what the
//! cluster then holds, read through the typed readers of `kept`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};

use airlock_bundle::ClusterId;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::{PartSettings, Release, SignedBundle, SigningKey, SyncMode, sign};
use airlock_cli::install_crypto_provider;
use airlock_store::{RegistryCredentials, StoreRef};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use tokio::process::Command;

use crate::kept::{Kept, KeptReport, State, gunzip, gzip};
use crate::{Run, assert_exit, create_namespace, kube_client, managed_kubeconfig, puller_bin, service_env};

/// How a test bundle is signed, when not by the fixture key with the default settings.
#[derive(Default)]
pub struct Signing {
    pub keys: Option<Vec<SigningKey>>,
    pub keyring_chain: Option<Vec<u8>>,
    pub sync_mode: SyncMode,
    /// Every part's settings, `sync_mode` included, when given.
    pub settings: Option<PartSettings>,
    /// The settings of the parts named here, over `settings`.
    pub parts: BTreeMap<String, PartSettings>,
}

/// One test's cluster: its id, keys, namespaces, a layout to publish into, a client.
pub struct Site {
    pub dir: tempfile::TempDir,
    pub fixture: Fixture,
    pub cluster: ClusterId,
    /// The state namespace (`--state-namespace`).
    pub state_ns: String,
    /// The namespace the bundles fill.
    pub app_ns: String,
    pub client: kube::Client,
    /// What the puller keeps in the state namespace for this cluster.
    pub kept: Kept,
    /// The API server's kubeconfig: the managed cluster's, or the node's.
    pub kubeconfig: String,
}

impl Site {
    pub async fn new(test: &str) -> Site {
        Site::on(test, managed_kubeconfig()).await
    }

    /// A site on the API server of `kubeconfig`.
    pub async fn on(test: &str, kubeconfig: String) -> Site {
        install_crypto_provider();
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!("{test}-{:x}-{:x}-{n}", Timestamp::now().as_second() % 0x100_0000, std::process::id());
        let mut fixture = Fixture::new(1);
        let cluster: ClusterId = format!("e2e/{id}").parse().expect("valid cluster id");
        fixture.cluster = cluster.clone();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("keyring.json"), fixture.keyring.to_json()).expect("keyring written");
        let client = kube_client(&kubeconfig).await;
        let state_ns = format!("airlock-{id}");
        let kept = Kept::new(&client, &state_ns, &cluster);
        let site = Site { dir, fixture, cluster, state_ns, app_ns: format!("app-{id}"), client, kept, kubeconfig };
        create_namespace(&site.client, &site.state_ns).await;
        site
    }

    pub fn layout(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The application Namespace and `count` ConfigMaps holding `value`, in one profile.
    pub fn files(&self, count: usize, value: &str) -> Vec<(String, Vec<u8>)> {
        app_files(&self.app_ns, count, value)
    }

    /// `files` signed as `version` by the fixture key, valid from now for an hour unless
    /// `release` says else.
    pub fn signed(&self, version: u64, files: Vec<(String, Vec<u8>)>, release: impl FnOnce(&mut Release)) -> SignedBundle {
        self.signed_as(version, files, Signing::default(), release)
    }

    pub fn signed_as(&self, version: u64, files: Vec<(String, Vec<u8>)>, how: Signing, release: impl FnOnce(&mut Release)) -> SignedBundle {
        let now = Timestamp::from_second(Timestamp::now().as_second()).expect("valid time");
        let mut r = Release { issued_at: now, expires: now + SignedDuration::from_hours(1), ..self.fixture.release(version) };
        release(&mut r);
        let settings = |part: &str| {
            let all = || how.settings.clone().unwrap_or(PartSettings { sync_mode: how.sync_mode, ..PartSettings::default() });
            how.parts.get(part).cloned().unwrap_or_else(all)
        };
        let keys = how.keys.as_deref().unwrap_or(&self.fixture.keys);
        sign::sign(Fixture::bundle(files), &r, &settings, keys, how.keyring_chain)
    }

    pub async fn publish(&self, layout: &str, bundles: &[SignedBundle]) {
        publish_to(&StoreRef::OciLayout(self.layout(layout)), bundles).await;
    }

    /// `airlock-puller <command>` for this site reading `layout`, not yet started.
    pub fn command(&self, command: &str, layout: &str, extra: &[&str]) -> Command {
        self.command_from(&format!("oci-layout:{}", self.layout(layout).display()), command, extra)
    }

    /// `airlock-puller <command>` for this site reading the store `source`, not yet started.
    pub fn command_from(&self, source: &str, command: &str, extra: &[&str]) -> Command {
        let mut cmd = Command::new(puller_bin());
        cmd.arg(command)
            .args(["--source", source])
            .args(["--cluster", &self.cluster.to_string()])
            .arg("--keyring")
            .arg(self.dir.path().join("keyring.json"))
            .args(extra)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("AIRLOCK_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if command != "verify" && !extra.contains(&"--state-namespace") {
            cmd.args(["--state-namespace", &self.state_ns]);
        }
        cmd
    }

    pub async fn run(&self, command: &str, layout: &str, extra: &[&str]) -> Run {
        self.command(command, layout, extra).output().await.expect("airlock-puller runs").into()
    }

    pub async fn sync(&self, layout: &str) -> Run {
        self.run("sync", layout, &[]).await
    }

    /// A sync that logs every API request it makes (the kube client's own trace), and
    /// those requests as `METHOD /path`, query left out.
    pub async fn counted_sync(&self, layout: &str) -> (Run, Vec<String>) {
        let source = format!("oci-layout:{}", self.layout(layout).display());
        self.counted_sync_from(&source, &[]).await
    }

    /// [`Site::counted_sync`] from the store `source`, with `extra` arguments.
    pub async fn counted_sync_from(&self, source: &str, extra: &[&str]) -> (Run, Vec<String>) {
        let log = ["--log-format", "json", "--log", "warn,kube_client=debug"];
        let run: Run = self.command_from(source, "sync", &[&log[..], extra].concat()).output().await.expect("airlock-puller runs").into();
        let requests = run
            .stderr
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|event| event["message"] == "requesting")
            .map(|event| {
                let url = event["span"]["http.url"].as_str().unwrap_or_default();
                let path = url.split("://").nth(1).and_then(|rest| rest.find('/').map(|i| &rest[i..])).unwrap_or(url);
                format!("{} {}", event["span"]["http.method"].as_str().unwrap_or_default(), path.split('?').next().unwrap())
            })
            .collect();
        (run, requests)
    }

    /// The state, if there is a state Secret.
    pub async fn state(&self) -> Option<State> {
        self.kept.state().await
    }

    /// Rewrites the state Secret's value as whoever can write that Secret would: `edit`
    /// changes its JSON.
    pub async fn forge_state(&self, edit: impl FnOnce(&mut serde_json::Value)) {
        use base64::Engine as _;
        let mut state: serde_json::Value = serde_json::from_slice(&gunzip(&self.kept.state_bytes().await.expect("a state"))).expect("JSON");
        edit(&mut state);
        let data = base64::engine::general_purpose::STANDARD.encode(gzip(state.to_string().as_bytes()));
        let patch = serde_json::json!({"data": {"state.json.gz": data}});
        let secrets = Api::<Secret>::namespaced(self.client.clone(), &self.state_ns);
        secrets.patch(&self.kept.name("airlock-state-"), &PatchParams::default(), &Patch::Merge(&patch)).await.expect("state forged");
    }

    pub async fn state_version(&self) -> Option<u64> {
        self.state().await.map(|s| s.version)
    }

    /// The report kept in the cluster.
    pub async fn kept_report(&self) -> KeptReport {
        self.kept.report().await
    }

    /// The bundle's ConfigMaps (`cm-*`) in the application namespace.
    pub async fn config_maps(&self) -> BTreeMap<String, ConfigMap> {
        let list = Api::<ConfigMap>::namespaced(self.client.clone(), &self.app_ns).list(&ListParams::default()).await.expect("list");
        list.items.into_iter().filter_map(|cm| Some((cm.metadata.name.clone().filter(|n| n.starts_with("cm-"))?, cm))).collect()
    }

    /// resourceVersion of every object a sync could write: the namespace, its ConfigMaps
    /// and the state and inventory Secrets.
    pub async fn versions(&self) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> =
            self.config_maps().await.into_iter().map(|(n, cm)| (n, cm.metadata.resource_version.unwrap_or_default())).collect();
        if let Some(ns) = Api::<Namespace>::all(self.client.clone()).get_opt(&self.app_ns).await.expect("get namespace") {
            out.insert("namespace".into(), ns.metadata.resource_version.unwrap_or_default());
        }
        for what in ["state", "inventory"] {
            let secrets = Api::<Secret>::namespaced(self.client.clone(), &self.state_ns);
            if let Some(s) = secrets.get_opt(&self.kept.name(&format!("airlock-{what}-"))).await.expect("get Secret") {
                out.insert(what.into(), s.metadata.resource_version.unwrap_or_default());
            }
        }
        out
    }

    /// Nothing of a bundle was applied and no state was written.
    pub async fn assert_untouched(&self, what: &str) {
        let namespace = Api::<Namespace>::all(self.client.clone()).get_opt(&self.app_ns).await.expect("get namespace");
        assert!(namespace.is_none() && self.state().await.is_none(), "{what}");
    }
}

/// Deletes the test's namespaces (state, application, and the watch test's extra one),
/// also when the test failed, without waiting for namespace finalization.
impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::process::Command::new(service_env("AIRLOCK_KUBECTL"))
            .args(["--kubeconfig", &self.kubeconfig, "delete", "namespace", "--ignore-not-found", "--wait=false"])
            .args([&self.state_ns, &self.app_ns, &format!("{}-x", self.app_ns)])
            .output();
    }
}

/// The Namespace `ns` and `count` ConfigMaps `cm-<i>` in it holding `value`, in the
/// profile `ClusterProfile.app`.
pub fn app_files(ns: &str, count: usize, value: &str) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![(
        format!("ClusterProfile.app/Namespace.{ns}.yaml"),
        format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n").into_bytes(),
    )];
    files.extend((0..count).map(|i| config_map_file(&format!("cm-{i}"), ns, value)));
    files
}

/// One ConfigMap file of the profile `ClusterProfile.app`.
pub fn config_map_file(name: &str, namespace: &str, value: &str) -> (String, Vec<u8>) {
    (
        format!("ClusterProfile.app/ConfigMap.{namespace}.{name}.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  value: \"{value}\"\n")
            .into_bytes(),
    )
}

pub async fn publish_to(store: &StoreRef, bundles: &[SignedBundle]) {
    let store = airlock_store::open(store, &RegistryCredentials::default()).await.expect("store opens");
    store.publish(bundles, &Default::default()).await.expect("published");
}

/// A refusal (exit 3) whose message, on stderr, contains `why`.
pub fn assert_refused(run: &Run, why: &str) {
    assert_exit(run, 3);
    assert!(run.stderr.contains(why), "{why:?} missing in {run:?}");
}

/// `GET path` on the puller's metrics port; None while nothing listens.
pub async fn http_get(port: u16, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes()).await.ok()?;
    let mut out = String::new();
    stream.read_to_string(&mut out).await.ok()?;
    Some(out)
}
