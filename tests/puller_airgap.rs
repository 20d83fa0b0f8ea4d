//! The puller's side of the air gap end to end, with the real binaries and the
//! services of `hack/services.sh`: bundles of two clusters published into an OCI layout,
//! `airlock-publisher export`ed to an archive, `airlock-puller import`ed into the
//! "disconnected" registry (`AIRLOCK_REGISTRY_REMOTE`) and into a Git repository, twice;
//! `sync` and `verify` straight from the tarball against the managed apiserver; damaged and
//! out-of-order archives refused with nothing written; and `export-reports` of what the
//! syncs reported.
//!
//! Every test has its own clusters (`e2e/<unique>-a`, `-b`), namespaces, registry prefixes
//! and Git repository, so tests run in parallel and reruns never collide.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};

use airlock_bundle::envelope::{self, REPORT_PAYLOAD_TYPE};
use airlock_bundle::testkit::Fixture;
use airlock_bundle::{ClusterId, Limits};
use airlock_bundle::{Keyring, PartSettings, Release, SignedBundle, SigningKey, sign};
use airlock_cli::install_crypto_provider;
use airlock_e2e::{Run, assert_exit, managed_kubeconfig, publisher_bin, puller_bin};
use airlock_puller::reports::report::{Report, RunResult};
use airlock_store::{RegistryCredentials, StoreRef, open, open_oci};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::value::RawValue;
use tokio::process::Command;

const L: Limits = Limits::SPEC;

/// One test's two clusters, the layout they are published to, and where archives go.
struct Air {
    dir: tempfile::TempDir,
    id: String,
    clusters: [ClusterId; 2],
    client: kube::Client,
}

impl Air {
    async fn new(test: &str) -> Air {
        install_crypto_provider();
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!("air-{test}-{:x}-{:x}-{n}", Timestamp::now().as_second() % 0x100_0000, std::process::id());
        let clusters = ["a", "b"].map(|c| format!("e2e/{id}-{c}").parse::<ClusterId>().expect("valid cluster id"));
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("keyring.json"), Fixture::new(1).keyring.to_json()).expect("keyring written");
        let client = airlock_e2e::kube_client(&managed_kubeconfig()).await;
        let air = Air { dir, id, clusters, client };
        for cluster in &air.clusters {
            airlock_e2e::create_namespace(&air.client, &state_ns(cluster)).await;
        }
        air
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn keyring(&self) -> String {
        self.path("keyring.json").display().to_string()
    }

    /// `cluster`'s bundle `version`: its namespace and a ConfigMap holding `value`, signed
    /// by the fixture key, valid from now for an hour.
    fn signed(&self, cluster: &ClusterId, version: u64, value: &str) -> SignedBundle {
        let ns = app_ns(cluster);
        let files = vec![
            (format!("ClusterProfile.app/Namespace.{ns}.yaml"), format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n")),
            (
                format!("ClusterProfile.app/ConfigMap.{ns}.settings.yaml"),
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {ns}\ndata:\n  value: \"{value}\"\n"),
            ),
        ];
        let fixture = Fixture { cluster: cluster.clone(), ..Fixture::new(1) };
        let now = Timestamp::from_second(Timestamp::now().as_second()).expect("valid time");
        let release = Release { issued_at: now, expires: now + SignedDuration::from_hours(1), ..fixture.release(version) };
        let files = files.into_iter().map(|(p, y)| (p, y.into_bytes())).collect();
        sign::sign(Fixture::bundle(files), &release, &|_: &str| PartSettings::default(), &fixture.keys, None)
    }

    /// Publishes `bundles` into the test's layout `near`, the connected side.
    async fn publish(&self, bundles: &[SignedBundle]) {
        let store = open(&StoreRef::OciLayout(self.path("near")), &RegistryCredentials::default()).await.expect("layout");
        store.publish(bundles, &Default::default()).await.expect("published");
    }

    /// `airlock-publisher export` of every cluster of the layout into `archive`.
    async fn export(&self, archive: &str, since: Option<&str>) -> Run {
        let mut cmd = Command::new(publisher_bin());
        cmd.arg("export").arg(format!("--from=oci-layout:{}", self.path("near").display()));
        cmd.arg(format!("--to=oci-archive:{}", self.path(archive).display())).args(["--keyring", &self.keyring()]);
        if let Some(previous) = since {
            cmd.arg("--since").arg(self.path(previous));
        }
        output(cmd).await
    }

    async fn import(&self, archive: &str, to: &str) -> Run {
        let mut cmd = Command::new(puller_bin());
        cmd.arg("import").arg(format!("--from=oci-archive:{}", self.path(archive).display()));
        cmd.args(["--to", to, "--keyring", &self.keyring()]);
        output(cmd).await
    }

    /// A registry reference on the disconnected registry no other test or run uses.
    fn remote(&self, name: &str) -> String {
        format!("oci+http://{}/{}/{name}", airlock_e2e::service_env("AIRLOCK_REGISTRY_REMOTE"), self.id)
    }
}

impl Drop for Air {
    fn drop(&mut self) {
        let namespaces = self.clusters.iter().flat_map(|c| [state_ns(c), app_ns(c)]);
        let _ = std::process::Command::new(airlock_e2e::service_env("AIRLOCK_KUBECTL"))
            .args(["--kubeconfig", &managed_kubeconfig(), "delete", "namespace", "--ignore-not-found", "--wait=false"])
            .args(namespaces)
            .output();
    }
}

fn state_ns(cluster: &ClusterId) -> String {
    format!("airlock-{}", cluster.name())
}

fn app_ns(cluster: &ClusterId) -> String {
    format!("app-{}", cluster.name())
}

async fn output(mut cmd: Command) -> Run {
    cmd.env("AIRLOCK_LOG", "warn").env("KUBECONFIG", managed_kubeconfig()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.output().await.expect("the binary runs").into()
}

/// The clusters a store holds, as `NS/NAME` strings.
async fn held(reference: &str) -> Vec<String> {
    let store = open_oci(&reference.parse().expect("a store reference"), &RegistryCredentials::default()).await;
    let clusters = store.expect("store opens").clusters(&L).await.expect("catalog");
    clusters.iter().map(ClusterId::to_string).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_archive_imports_twice_into_registry_and_git_then_syncs_verifies_and_reports_from_the_tarball() {
    let air = Air::new("round").await;
    let [a, b] = &air.clusters;
    air.publish(&[air.signed(a, 1, "one"), air.signed(b, 1, "one")]).await;
    assert_exit(&air.export("full.tar", None).await, 0);

    let registry = air.remote("site");
    let git = format!("git+{}", airlock_e2e::new_git_repo(&air.id));
    for to in [&registry, &git] {
        let first = air.import("full.tar", to).await;
        assert_exit(&first, 0);
        for c in [a, b] {
            assert!(first.stdout.contains(&format!("{c}: version 1 written")), "{first:?}");
        }
        let again = air.import("full.tar", to).await;
        assert_exit(&again, 0);
        assert!(again.stdout.contains(&format!("{a}: version 1 already present")), "{again:?}");
        assert!(again.stdout.contains("0 written, 2 already present"), "{again:?}");
        // What was imported verifies where it now lives.
        let verified = output(verify(to, &air.keyring())).await;
        assert_exit(&verified, 0);
        assert!(verified.stdout.contains(&format!("cluster {b}: OK")), "{verified:?}");
    }
    assert_eq!(held(&registry).await, [a.to_string(), b.to_string()]);

    let archive = format!("oci-archive:{}", air.path("full.tar").display());
    let verified = output(verify(&archive, &air.keyring())).await;
    assert_exit(&verified, 0);
    for c in [a, b] {
        assert!(verified.stdout.contains(&format!("cluster {c}: OK")), "{verified:?}");
    }

    // A site with no registry at all syncs straight from the tarball and reports.
    let reports = air.path("reports");
    std::fs::create_dir(&reports).expect("reports dir");
    let key = SigningKey::from_seed([8; 32]);
    std::fs::write(air.path("report.key"), key.to_pkcs8_pem()).expect("report key");
    for c in [a, b] {
        let mut cmd = Command::new(puller_bin());
        cmd.args(["sync", "--source", &archive, "--cluster", &c.to_string(), "--keyring", &air.keyring()]);
        cmd.args(["--state-namespace", &state_ns(c), "--report-to", reports.to_str().expect("UTF-8")]);
        cmd.arg("--report-key").arg(air.path("report.key"));
        let synced = output(cmd).await;
        assert_exit(&synced, 0);
        assert!(synced.stdout.contains("applied version 1"), "{synced:?}");
        let cm = Api::<ConfigMap>::namespaced(air.client.clone(), &app_ns(c)).get("settings").await.expect("applied");
        assert_eq!(cm.data.expect("data")["value"], "one");
    }

    let carried = air.path("reports.json");
    let mut cmd = Command::new(puller_bin());
    cmd.arg("export-reports").arg("--from").arg(&reports).arg("--to").arg(&carried);
    let exported = output(cmd).await;
    assert_exit(&exported, 0);
    assert!(exported.stdout.starts_with("wrote 2 report(s)"), "{exported:?}");
    assert_reports_file(&carried, &key, [a, b]);
}

fn verify(source: &str, keyring: &str) -> Command {
    let mut cmd = Command::new(puller_bin());
    cmd.args(["verify", "--source", source, "--keyring", keyring]);
    cmd
}

/// `file` is the reports file of spec 14.6: a JSON array of report envelopes, signed by
/// `key`, one applied report per cluster in file-name order.
fn assert_reports_file(file: &Path, key: &SigningKey, clusters: [&ClusterId; 2]) {
    let items: Vec<Box<RawValue>> = serde_json::from_slice(&std::fs::read(file).expect("reports file")).expect("a JSON array");
    let keyring = Keyring::new(1, 1, vec![key.public()], &L).expect("keyring");
    let mut seen = Vec::new();
    for item in &items {
        let decoded = envelope::decode(item.get().as_bytes(), REPORT_PAYLOAD_TYPE, &L).expect("a report envelope");
        assert_eq!(keyring.check(&decoded).expect("signed by the report key"), [key.public().key_id()]);
        let report: Report = serde_json::from_slice(&decoded.payload).expect("a report");
        assert_eq!((report.result, report.applied_version), (RunResult::Applied, Some(1)));
        seen.push(report.cluster);
    }
    assert_eq!(seen, clusters.map(ClusterId::to_string));
}

#[tokio::test(flavor = "multi_thread")]
async fn damaged_and_out_of_order_archives_import_nothing() {
    let air = Air::new("refuse").await;
    let [a, b] = &air.clusters;
    air.publish(&[air.signed(a, 1, "one"), air.signed(b, 1, "one")]).await;
    assert_exit(&air.export("full.tar", None).await, 0);
    air.publish(&[air.signed(a, 2, "two")]).await;
    let delta = air.export("delta.tar", Some("full.tar")).await;
    assert_exit(&delta, 0);
    assert!(delta.stdout.contains("1 exported, 1 unchanged"), "{delta:?}");

    let full = std::fs::read(air.path("full.tar")).expect("archive");
    std::fs::write(air.path("truncated.tar"), &full[..full.len() / 2]).expect("truncated copy");
    let empty = air.remote("empty");
    let truncated = air.import("truncated.tar", &empty).await;
    assert_exit(&truncated, 1);
    assert!(truncated.stderr.contains("truncated.tar") && truncated.stderr.contains("is truncated"), "{truncated:?}");

    let out_of_order = air.import("delta.tar", &empty).await;
    assert_exit(&out_of_order, 1);
    let named = |what: &str| out_of_order.stderr.contains(what);
    assert!(named("the archive is a delta") && named("sha256:") && named(&format!("({a})")), "{out_of_order:?}");
    assert_eq!(held(&empty).await, Vec::<String>::new(), "nothing imported");

    // In order, the delta lands on top of the full archive; going back is refused (exit 3).
    let site = air.remote("site");
    assert_exit(&air.import("full.tar", &site).await, 0);
    let on_top = air.import("delta.tar", &site).await;
    assert_exit(&on_top, 0);
    assert!(on_top.stdout.contains(&format!("{a}: version 2 written")), "{on_top:?}");
    let back = air.import("full.tar", &site).await;
    assert_exit(&back, 3);
    assert!(back.stderr.contains("newer than the archive's v1"), "{back:?}");
    let verified = output(verify(&site, &air.keyring())).await;
    assert!(verified.stdout.contains(&format!("cluster {a}: OK")) && verified.stdout.contains("version:   2"), "{verified:?}");
}
