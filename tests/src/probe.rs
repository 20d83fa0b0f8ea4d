//! The least-privilege and containment tests' tools: a registered puller's [`Site`] (registration YAML
//! applied, namespaces, a signed-bundle store, an impersonating kubeconfig), a client
//! acting as someone else ([`As`]), and the tally of what was allowed or refused
//! ([`Probe`]).

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use airlock_bundle::testkit::Fixture;
use airlock_bundle::{PartSettings, Release, sign};
use airlock_cli::install_crypto_provider;
use airlock_store::{RegistryCredentials, StoreRef};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::Run;
use crate::kept::Kept;
use crate::publisher::kubectl_ok;

const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";

/// What one request got: done, or the API server's error.
pub type Answer = Result<(), kube::Error>;

/// Requests that must pass authorization and requests that must get 403.
#[derive(Default)]
pub struct Probe {
    failures: Vec<String>,
    checked: usize,
}

impl Probe {
    /// Authorized: done, or 404 (authorization comes before the lookup).
    pub fn allowed(&mut self, what: &str, answer: Answer) {
        self.checked += 1;
        match answer {
            Ok(()) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => self.failures.push(format!("{what}: expected allowed, got {e}")),
        }
    }

    pub fn refused(&mut self, what: &str, answer: Answer) {
        self.checked += 1;
        match answer {
            Err(kube::Error::Api(e)) if e.code == 403 => {}
            other => self.failures.push(format!("{what}: expected 403, got {other:?}")),
        }
    }

    pub fn assert_all(&self) {
        assert!(self.failures.is_empty(), "{} of {} checks failed:\n{}", self.failures.len(), self.checked, self.failures.join("\n"));
    }
}

/// A client whose every request impersonates one user.
pub struct As(kube::Client);

impl As {
    async fn apply<K>(&self, api: Api<K>, name: &str, object: serde_json::Value) -> Answer
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        api.patch(name, &PatchParams::apply("rbac-probe").force(), &Patch::Apply(object)).await.map(drop)
    }

    pub async fn apply_config_map(&self, ns: &str, name: &str) -> Answer {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"probe": "yes"}});
        self.apply(Api::<ConfigMap>::namespaced(self.0.clone(), ns), name, object).await
    }

    pub async fn apply_deployment(&self, ns: &str) -> Answer {
        let labels = json!({"app": "probe"});
        let object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "probe"},
            "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "probe", "image": "busybox"}]}}}
        });
        self.apply(Api::<Deployment>::namespaced(self.0.clone(), ns), "probe", object).await
    }

    pub async fn apply_secret(&self, ns: &str, name: &str) -> Answer {
        let object = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {"probe": "eWVz"}});
        self.apply(Api::<Secret>::namespaced(self.0.clone(), ns), name, object).await
    }

    pub async fn get_secret(&self, ns: &str, name: &str) -> Answer {
        Api::<Secret>::namespaced(self.0.clone(), ns).get(name).await.map(drop)
    }

    pub async fn list_secrets(&self, ns: &str) -> Answer {
        Api::<Secret>::namespaced(self.0.clone(), ns).list(&ListParams::default()).await.map(drop)
    }

    pub async fn apply_lease(&self, ns: &str) -> Answer {
        let object = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "airlock-probe"},
            "spec": {"holderIdentity": "probe", "leaseDurationSeconds": 30}});
        self.apply(Api::<Lease>::namespaced(self.0.clone(), ns), "airlock-probe", object).await
    }

    pub async fn list_namespaces(&self) -> Answer {
        Api::<Namespace>::all(self.0.clone()).list(&ListParams::default()).await.map(drop)
    }

    pub async fn apply_namespace(&self, name: &str) -> Answer {
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        self.apply(Api::<Namespace>::all(self.0.clone()), name, object).await
    }

    /// A server-side dry run: authorized like the real thing, deletes nothing.
    pub async fn delete_namespace(&self, name: &str) -> Answer {
        Api::<Namespace>::all(self.0.clone()).delete(name, &DeleteParams { dry_run: true, ..Default::default() }).await.map(drop)
    }

    /// `<run>-probe`, with no rules.
    pub async fn apply_cluster_role(&self, run: &str) -> Answer {
        let name = format!("{run}-probe");
        let object = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": []});
        self.apply(Api::<ClusterRole>::all(self.0.clone()), &name, object).await
    }

    /// `<run>-probe`, granting cluster-admin to the default ServiceAccount of `default`:
    /// the escalation a compromised puller would try.
    pub async fn apply_cluster_role_binding(&self, run: &str) -> Answer {
        let name = format!("{run}-probe");
        let object = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]});
        self.apply(Api::<ClusterRoleBinding>::all(self.0.clone()), &name, object).await
    }

    /// A RoleBinding `<run>-probe` in `ns` to cluster-admin for `ns`'s default ServiceAccount.
    pub async fn apply_role_binding_to_cluster_admin(&self, ns: &str, run: &str) -> Answer {
        let name = format!("{run}-probe");
        let object = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]});
        self.apply(Api::<RoleBinding>::namespaced(self.0.clone(), ns), &name, object).await
    }

    pub async fn apply_priority_class(&self, name: &str) -> Answer {
        let object = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": 1000});
        self.apply(Api::<PriorityClass>::all(self.0.clone()), name, object).await
    }

    /// A server-side dry run of a plain create (POST): authorized like the real thing.
    pub async fn post_priority_class(&self, name: &str) -> Answer {
        let object: PriorityClass = serde_json::from_value(json!({"metadata": {"name": name}, "value": 1000})).expect("a PriorityClass");
        let params = PostParams { dry_run: true, ..Default::default() };
        Api::<PriorityClass>::all(self.0.clone()).create(&params, &object).await.map(drop)
    }

    /// `<run>-probe`, a StorageClass with no provisioner to speak of.
    pub async fn apply_storage_class(&self, run: &str) -> Answer {
        let name = format!("{run}-probe");
        let object = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}, "provisioner": "example.com/none"});
        self.apply(Api::<StorageClass>::all(self.0.clone()), &name, object).await
    }

    /// `<run>-probe`, with no webhooks.
    pub async fn apply_webhook_configuration(&self, run: &str) -> Answer {
        let name = format!("{run}-probe");
        let object =
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": name}});
        self.apply(Api::<ValidatingWebhookConfiguration>::all(self.0.clone()), &name, object).await
    }

    /// A token for the ServiceAccount `name` of `ns` (the `serviceaccounts/token` subresource).
    pub async fn create_token(&self, ns: &str, name: &str) -> Answer {
        let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": []}});
        let api = Api::<ServiceAccount>::namespaced(self.0.clone(), ns);
        api.create_subresource::<_, serde_json::Value>("token", name, &PostParams::default(), &request).await.map(drop)
    }
}

/// One registered puller: its registration applied to the managed apiserver, a store of
/// signed bundles, and the namespaces the test uses.
pub struct Site {
    pub run: String,
    pub puller_ns: String,
    scoped: bool,
    dir: tempfile::TempDir,
    fixture: Fixture,
    registration: Vec<u8>,
    admin: kube::Client,
}

impl Site {
    /// Registers (`--watch-namespaces <run>-a,<run>-b` when `scoped`), applies the YAML,
    /// creates the unwatched namespace, and waits until the grant is in force.
    pub async fn new(test: &str, scoped: bool) -> Site {
        Site::registered(test, scoped, |_| Vec::new()).await
    }

    /// As [`Site::new`], with the registration flags `extra` makes of the run id.
    pub async fn registered(test: &str, scoped: bool, extra: impl FnOnce(&str) -> Vec<String>) -> Site {
        let run = unique(test);
        let dir = tempfile::tempdir().expect("temp dir");
        let mut fixture = Fixture::new(1);
        fixture.cluster = format!("{run}/edge-1").parse().expect("valid cluster id");
        std::fs::write(dir.path().join("keyring.json"), fixture.keyring.to_json()).expect("keyring written");
        let puller_ns = format!("{run}-puller");
        let watch = format!("{run}-a,{run}-b");
        let registration = registration(dir.path(), &run, &puller_ns, scoped.then_some(watch.as_str()), &extra(&run));
        let admin = client(None).await;
        let site = Site { run, puller_ns, scoped, dir, fixture, registration, admin };
        kubectl_ok(MANAGED, &["apply", "-f", "-"], &site.registration);
        crate::create_namespace(&site.admin, &site.unwatched()).await;
        site.write_kubeconfig();
        let puller = site.client_as(&site.service_account()).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while puller.list_namespaces().await.is_err() {
            assert!(Instant::now() < deadline, "the puller's grant was not in force after 20 s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        site
    }

    pub fn service_account(&self) -> String {
        format!("system:serviceaccount:{}:airlock-puller", self.puller_ns)
    }

    pub async fn client_as(&self, user: &str) -> As {
        As(client(Some(user)).await)
    }

    pub fn watched(&self) -> [String; 2] {
        assert!(self.scoped, "only the scoped registration watches namespaces");
        [format!("{}-a", self.run), format!("{}-b", self.run)]
    }

    pub fn watch_list(&self) -> String {
        self.watched().join(",")
    }

    pub fn unwatched(&self) -> String {
        format!("{}-x", self.run)
    }

    /// ConfigMap `cfg` (`value: v1`) in each namespace, in one profile.
    pub fn config_maps(&self, namespaces: &[&str]) -> Vec<(String, Vec<u8>)> {
        let cm = |ns: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: {ns}\ndata:\n  value: v1\n");
        namespaces.iter().map(|ns| (format!("ClusterProfile.app/ConfigMap.{ns}.cfg.yaml"), cm(ns).into_bytes())).collect()
    }

    /// ClusterRole `<run>-bundle`: a kind the scoped grant leaves out.
    pub fn cluster_role_file(&self) -> (String, Vec<u8>) {
        let name = format!("{}-bundle", self.run);
        let yaml = format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\nrules: []\n");
        (format!("ClusterProfile.app/ClusterRole.{name}.yaml"), yaml.into_bytes())
    }

    /// Publishes `files` as `version` and runs `airlock-puller sync` as the ServiceAccount.
    pub async fn sync(&self, version: u64, files: &[(String, Vec<u8>)], extra: &[&str]) -> Run {
        self.sync_released(version, files, extra, |_| {}, &|_| PartSettings::default()).await
    }

    /// As [`Site::sync`], with the release as `release` leaves it and each part's settings
    /// as `parts` gives them.
    pub async fn sync_released(
        &self,
        version: u64,
        files: &[(String, Vec<u8>)],
        extra: &[&str],
        release: impl FnOnce(&mut Release),
        parts: &dyn Fn(&str) -> PartSettings,
    ) -> Run {
        let now = Timestamp::from_second(Timestamp::now().as_second()).expect("valid time");
        let mut release_ = Release { issued_at: now, expires: now + SignedDuration::from_hours(1), ..self.fixture.release(version) };
        release(&mut release_);
        let release = release_;
        let bundle = Fixture::bundle(files.to_vec());
        let signed = sign::sign(bundle, &release, parts, &self.fixture.keys, None);
        let store =
            airlock_store::open(&StoreRef::OciLayout(self.path("store")), &RegistryCredentials::default()).await.expect("store opens");
        store.publish(&[signed], &Default::default()).await.expect("published");
        tokio::process::Command::new(crate::puller_bin())
            .arg("sync")
            .arg("--source")
            .arg(format!("oci-layout:{}", self.path("store").display()))
            .args(["--cluster", &self.fixture.cluster.to_string(), "--state-namespace", &self.puller_ns])
            .arg("--keyring")
            .arg(self.path("keyring.json"))
            .arg("--kubeconfig")
            .arg(self.path("kubeconfig.json"))
            .args(extra)
            .env_remove("KUBECONFIG")
            .env("AIRLOCK_LOG", "warn")
            .output()
            .await
            .expect("airlock-puller runs")
            .into()
    }

    pub async fn config_map_value(&self, ns: &str) -> Option<String> {
        self.value(ns, "cfg").await
    }

    /// The `value` of the ConfigMap `ns/name`, as the admin reads it.
    pub async fn value(&self, ns: &str, name: &str) -> Option<String> {
        let cm = Api::<ConfigMap>::namespaced(self.admin.clone(), ns).get_opt(name).await.expect("get ConfigMap")?;
        cm.data?.remove("value")
    }

    pub async fn cluster_role_exists(&self) -> bool {
        let name = format!("{}-bundle", self.run);
        Api::<ClusterRole>::all(self.admin.clone()).get_opt(&name).await.expect("get ClusterRole").is_some()
    }

    /// Whether the API server's authorizer lets the puller's ServiceAccount `verb` the
    /// `resource` of `group` in `namespace` (a SubjectAccessReview, asked by the admin).
    pub async fn authorizes(&self, verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> bool {
        let attributes = ResourceAttributes {
            verb: Some(verb.into()),
            group: Some(group.into()),
            resource: Some(resource.into()),
            namespace: namespace.map(str::to_string),
            ..Default::default()
        };
        service_account_may(&self.admin, (&self.puller_ns, "airlock-puller"), attributes).await
    }

    /// Whether the cluster holds the object of `resource` (as kubectl names it) `name`.
    pub fn holds(&self, resource: &str, namespace: Option<&str>, name: &str) -> bool {
        let mut args = vec!["get", resource, name, "--ignore-not-found", "-o", "name"];
        args.extend(namespace.map(|ns| ["-n", ns]).into_iter().flatten());
        !kubectl_ok(MANAGED, &args, b"").trim().is_empty()
    }

    /// The data of the Secret `ns/name`, as the admin reads it.
    pub async fn secret_data(&self, ns: &str, name: &str) -> Option<std::collections::BTreeMap<String, k8s_openapi::ByteString>> {
        Api::<Secret>::namespaced(self.admin.clone(), ns).get_opt(name).await.expect("get Secret").and_then(|s| s.data)
    }

    /// The version the state Secret records.
    pub async fn state_version(&self) -> Option<u64> {
        Kept::new(&self.admin, &self.puller_ns, &self.fixture.cluster).state().await.map(|s| s.version)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The admin kubeconfig with `as: <ServiceAccount>` on every user: the puller then
    /// holds exactly the generated grant.
    fn write_kubeconfig(&self) {
        let path = crate::service_env(MANAGED);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut config: serde_json::Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        for user in config["users"].as_array_mut().expect("kubeconfig users") {
            user["user"]["as"] = self.service_account().into();
        }
        std::fs::write(self.path("kubeconfig.json"), config.to_string()).expect("kubeconfig written");
    }
}

impl Site {
    /// Makes the puller authenticate with its ServiceAccount's own token instead of the
    /// admin impersonating it: requests the puller itself impersonates (a tenant's) are then
    /// authorized against the puller's grant, which an admin's impersonation would replace.
    pub async fn authenticate_with_token(&self) {
        let accounts = Api::<ServiceAccount>::namespaced(self.admin.clone(), &self.puller_ns);
        let deadline = Instant::now() + Duration::from_secs(20);
        let secret = loop {
            let account = accounts.get("airlock-puller").await.expect("the puller's ServiceAccount");
            if let Some(name) = account.secrets.into_iter().flatten().find_map(|s| s.name) {
                break name;
            }
            assert!(Instant::now() < deadline, "no token Secret for the puller's ServiceAccount after 20 s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let data = self.secret_data(&self.puller_ns, &secret).await.expect("the token Secret");
        let token = String::from_utf8(data["token"].0.clone()).expect("a UTF-8 token");
        let path = crate::service_env(MANAGED);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut config: serde_json::Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        for user in config["users"].as_array_mut().expect("kubeconfig users") {
            user["user"] = json!({"token": token});
        }
        std::fs::write(self.path("kubeconfig.json"), config.to_string()).expect("kubeconfig written");
    }
}

/// Deletes what the registration and the test created, also when the test failed.
impl Drop for Site {
    fn drop(&mut self) {
        let kubectl = |args: &[&str], stdin: &[u8]| {
            let _ = crate::publisher::kubectl(MANAGED, args, stdin);
        };
        kubectl(&["delete", "--wait=false", "--ignore-not-found", "-f", "-"], &self.registration);
        kubectl(&["delete", "namespace", "--wait=false", "--ignore-not-found", &self.unwatched()], b"");
        for kind in ["clusterrole", "clusterrolebinding", "priorityclass", "storageclass", "validatingwebhookconfiguration"] {
            let names = [format!("{}-probe", self.run), format!("{}-bundle", self.run)];
            kubectl(&["delete", kind, "--ignore-not-found", &names[0], &names[1]], b"");
        }
    }
}

/// A run id no other test or earlier run has used.
fn unique(test: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("rbac-{test}-{:x}-{:x}-{n}", Timestamp::now().as_second() % 0x100_0000, std::process::id())
}

/// `register cluster --to-dir` (no management cluster needed): the registration YAML.
fn registration(dir: &std::path::Path, run: &str, puller_ns: &str, watch: Option<&str>, extra: &[String]) -> Vec<u8> {
    install_crypto_provider();
    let keyring = dir.join("keyring.json");
    let out_dir = dir.join("management");
    let mut command = Command::new(crate::publisher_bin());
    command
        .args(["register", "cluster", "--namespace", run, "--cluster", "edge-1", "--pullmode"])
        .args(["--source", "oci-layout:/var/lib/airlock/store", "--cronjob-api", "batch/v1beta1"])
        .args(["--keyring", keyring.to_str().expect("UTF-8 path"), "--to-dir", out_dir.to_str().expect("UTF-8 path")])
        // Never due in a test's lifetime: the controller-manager creates no Jobs.
        .args(["--schedule", "0 0 1 1 *", "--puller-namespace", puller_ns])
        .args(watch.map(|w| ["--watch-namespaces", w]).into_iter().flatten())
        .args(extra)
        .env("AIRLOCK_LOG", "warn");
    let out = command.output().expect("airlock-publisher runs");
    assert!(out.status.success(), "register cluster: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// A client of the managed apiserver with the admin token, impersonating `user` if given.
async fn client(user: Option<&str>) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(crate::service_env(MANAGED)).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("kube config");
    config.auth_info.impersonate = user.map(str::to_string);
    kube::Client::try_from(config).expect("kube client")
}

/// Whether the authorizer of `admin`'s API server lets the ServiceAccount `(namespace,
/// name)`, with the groups every ServiceAccount has, do what `attributes` say: a
/// SubjectAccessReview.
pub async fn service_account_may(admin: &kube::Client, (namespace, name): (&str, &str), attributes: ResourceAttributes) -> bool {
    let groups = vec!["system:serviceaccounts".to_string(), format!("system:serviceaccounts:{namespace}"), "system:authenticated".into()];
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(format!("system:serviceaccount:{namespace}:{name}")),
            groups: Some(groups),
            resource_attributes: Some(attributes),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(admin.clone()).create(&PostParams::default(), &review).await.expect("SubjectAccessReview");
    answer.status.expect("a review answers").allowed
}
