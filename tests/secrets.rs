//! Secrets never reach logs or reports. One cluster goes through the whole
//! pipeline with every tool at `--log trace --log-format json`: `register cluster` (with
//! registry credentials, against the management apiserver), `publish --from-dir` of a
//! profile whose manifests are held in a Secret and carry a Secret with a distinctive
//! value, to the password-protected registry; `sync` with the registration's Docker
//! credentials and report key (a first apply, a hand-made drift corrected, a changed value
//! applied); `plan` of a further change; `export-reports`. Then every stdout and stderr,
//! every report file, the exported reports and the report ConfigMap are searched for the
//! Secret's values (plain and base64), the registry password, both kubeconfigs' tokens
//! and both private keys, with base64 runs decoded (report envelopes carry their payload
//! that way). None may appear.
//!
//! The publisher's refusal of a private key others can read, through the CLI, is pinned by
//! `tests/publisher.rs` (`publishes_from_dir_…`: exit 1, `permissions 0644 for '<file>'
//! are too open`).

mod haystack;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use airlock_cli::install_crypto_provider;
use airlock_e2e::publisher::{Keys, install_crds, kubectl_ok};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use jiff::Timestamp;

use haystack::Needles;

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";
/// Every tool logs everything it can, as JSON: the most a log collector could receive.
const LOUD: [&str; 4] = ["--log", "trace", "--log-format", "json"];
/// register's log, 8 runs' stdout and stderr, and a report file of each of the 3 syncs.
const SEARCHED_AT_LEAST: usize = 20;

#[tokio::test(flavor = "multi_thread")]
async fn secret_values_passwords_tokens_and_keys_never_reach_logs_or_reports() {
    install_crypto_provider();
    let run = format!("sec-{:x}-{:x}", Timestamp::now().as_second() % 0x100_0000, std::process::id());
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str| dir.path().join(name).to_str().expect("UTF-8 temp path").to_string();
    let (user, password) =
        (airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH_USER"), airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH_PASSWORD"));
    let store = format!("oci+http://{}/{run}", airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH"));
    let cluster = format!("{run}/edge-1");
    let keys = Keys::new("secrets");
    let values = [1, 2, 3].map(|n| format!("s3cr3t-value-{n}-{run}"));
    let drifted = format!("s3cr3t-drift-{run}");

    let mut needles = Needles::default();
    for value in values.iter().chain([&drifted]) {
        needles.add(value, value);
        needles.add(&format!("{value} (base64)"), &B64.encode(value));
    }
    needles.add("registry password", &password);
    needles.add("registry auth (base64 user:password)", &B64.encode(format!("{user}:{password}")));
    for kubeconfig in [MANAGEMENT, MANAGED] {
        for token in haystack::kubeconfig_tokens(&airlock_e2e::service_env(kubeconfig)) {
            needles.add(&format!("{kubeconfig} token"), &token);
        }
    }
    let signing_key = haystack::pem_body(&std::fs::read_to_string(&keys.key).expect("key"));
    needles.add("publisher signing key", &signing_key);

    let (state_ns, app_ns) = (format!("{run}-state"), format!("{run}-app"));
    let _cleanup = Cleanup(vec![state_ns.clone(), app_ns.clone()], run.clone());

    // register: against the management apiserver; its YAML holds the credentials and the
    // report key by design (it is applied like a Secret), so only its log is searched.
    std::fs::write(path("password"), format!("{password}\n")).expect("password file");
    let _crds = install_crds();
    let registration = tool(
        airlock_e2e::publisher_bin(),
        &["register", "cluster", "--namespace", &run, "--cluster", "edge-1", "--pullmode", "--labels", "secrets=on"],
        &["--source", &store, "--keyring", &keys.keyring_path, "--cronjob-api", "batch/v1beta1"],
        &[
            "--registry-username",
            &user,
            "--registry-password-file",
            &path("password"),
            "--kubeconfig",
            &airlock_e2e::service_env(MANAGEMENT),
        ],
        &[],
    );
    let mut logs = vec![("register: stderr".to_string(), registration.stderr.clone())];
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&registration.stdout).expect("registration YAML");
    let secret_data = |name: &str, key: &str| {
        let doc = docs.iter().find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == name).expect(name);
        B64.decode(doc["data"][key].as_str().expect("base64 data")).expect("base64")
    };
    std::fs::create_dir(path("docker")).expect("docker dir");
    std::fs::write(dir.path().join("docker/config.json"), secret_data("airlock-store-credentials", ".dockerconfigjson"))
        .expect("config.json");
    let report_key = String::from_utf8(secret_data("airlock-report-key", "report.key")).expect("PEM");
    std::fs::write(path("report.key"), &report_key).expect("report key");
    std::fs::set_permissions(path("report.key"), std::fs::Permissions::from_mode(0o600)).expect("chmod");
    needles.add("report signing key", &haystack::pem_body(&report_key));
    for (what, plain) in [("registry password", password.as_str()), ("signing key", signing_key.as_str())] {
        assert!(!registration.stdout.contains(plain), "the registration YAML shows the {what} in plain text");
    }

    let client = managed_client().await;
    for ns in [&state_ns, &app_ns] {
        airlock_e2e::create_namespace(&client, ns).await;
    }
    for sub in ["management", "reports"] {
        std::fs::create_dir(path(sub)).expect("a directory in the temp dir");
    }
    let publish = |value: &str, step: &str, logs: &mut Vec<(String, String)>| {
        management_set(&dir.path().join("management"), &run, &app_ns, value);
        let out = tool(
            airlock_e2e::publisher_bin(),
            &["publish", "--from-dir", &path("management"), "--to", &store, "--key", &keys.key],
            &["--registry-username", &user, "--cache-dir", &path("cache")],
            &[],
            &[("AIRLOCK_REGISTRY_PASSWORD", &password)],
        );
        logs.push((format!("publish {step}: stdout"), out.stdout));
        logs.push((format!("publish {step}: stderr"), out.stderr));
    };
    let docker = path("docker");
    let puller = |command: &str, step: &str, logs: &mut Vec<(String, String)>| {
        let out = tool(
            airlock_e2e::puller_bin(),
            &[command, "--source", &store, "--cluster", &cluster, "--keyring", &keys.keyring_path],
            &["--state-namespace", &state_ns, "--report-to", &path("reports"), "--report-key", &path("report.key")],
            &["--kubeconfig", &airlock_e2e::service_env(MANAGED)],
            &[("DOCKER_CONFIG", &docker)],
        );
        logs.push((format!("{command} {step}: stdout"), out.stdout));
        logs.push((format!("{command} {step}: stderr"), out.stderr));
    };

    publish(&values[0], "v1", &mut logs);
    puller("sync", "v1 (created)", &mut logs);
    let live = kubectl_ok(MANAGED, &["get", "secret", "-n", &app_ns, "app-credentials", "-o", "jsonpath={.data.password}"], b"");
    assert_eq!(live, B64.encode(&values[0]), "the bundle's Secret was applied");
    let patch = format!(r#"{{"data":{{"password":"{}"}}}}"#, B64.encode(&drifted));
    kubectl_ok(MANAGED, &["patch", "secret", "-n", &app_ns, "app-credentials", "-p", &patch], b"");
    puller("sync", "v1 (drift corrected)", &mut logs);
    publish(&values[1], "v2", &mut logs);
    puller("sync", "v2 (configured)", &mut logs);
    let live = kubectl_ok(MANAGED, &["get", "secret", "-n", &app_ns, "app-credentials", "-o", "jsonpath={.data.password}"], b"");
    assert_eq!(live, B64.encode(&values[1]), "the changed Secret was applied");
    publish(&values[2], "v3", &mut logs);
    puller("plan", "v3", &mut logs);
    let out =
        tool(airlock_e2e::puller_bin(), &["export-reports", "--from", &path("reports"), "--to", &path("reports.json")], &[], &[], &[]);
    logs.push(("export-reports: stdout".into(), out.stdout));
    logs.push(("export-reports: stderr".into(), out.stderr));

    let mut searched = logs;
    for entry in std::fs::read_dir(path("reports")).expect("reports written") {
        let file = entry.expect("report entry").path();
        searched.push((file.display().to_string(), std::fs::read_to_string(&file).expect("report reads")));
    }
    assert!(searched.len() >= SEARCHED_AT_LEAST, "{} texts searched", searched.len());
    searched.push(("exported reports".into(), std::fs::read_to_string(path("reports.json")).expect("exported")));
    let report_cm = format!("airlock-report-{}", "edge-1");
    searched.push((
        format!("ConfigMap {state_ns}/{report_cm}"),
        kubectl_ok(MANAGED, &["get", "configmap", "-n", &state_ns, &report_cm, "-o", "json"], b""),
    ));
    assert!(searched.iter().any(|(_, text)| text.contains("app-credentials")), "the logs and reports name the Secret");
    // The search finds what is there: the live Secret holds the value (base64, in JSON).
    let live = kubectl_ok(MANAGED, &["get", "secret", "-n", &app_ns, "app-credentials", "-o", "json"], b"");
    assert!(needles.found_in(&live).contains(&values[1]), "the search missed the value in the live Secret");
    let leaks: Vec<String> =
        searched.iter().flat_map(|(what, text)| needles.found_in(text).into_iter().map(move |n| format!("{n} in {what}"))).collect();
    assert!(leaks.is_empty(), "secret material found:\n{}", leaks.join("\n"));
    eprintln!(
        "secrets: {} needles, {} texts ({} bytes) searched, none found",
        needles.len(),
        searched.len(),
        searched.iter().map(|(_, t)| t.len()).sum::<usize>()
    );
}

/// The management set: the cluster, one profile in drift-detection mode, and the Secret
/// of type `addons.projectsveltos.io/cluster-profile` holding its manifest, a Secret
/// whose `password` is `value`.
fn management_set(dir: &Path, run: &str, app_ns: &str, value: &str) {
    let manifest = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\n  namespace: {app_ns}\ntype: Opaque\ndata:\n  password: {}\n",
        B64.encode(value)
    );
    let text = format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata:\n  name: edge-1\n  namespace: {run}\n  \
         labels: {{secrets: \"on\"}}\n  annotations: {{airlock.dev/plaintext-secrets: allow}}\nspec: {{pullMode: true}}\n---\n\
         apiVersion: config.projectsveltos.io/v1beta1\n\
         kind: ClusterProfile\nmetadata:\n  name: {run}-secrets\nspec:\n  clusterSelector:\n    matchLabels: {{secrets: \"on\"}}\n  \
         syncMode: ContinuousWithDriftDetection\n  policyRefs:\n    - {{kind: Secret, namespace: {run}, name: app-manifests}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: app-manifests, namespace: {run}}}\n\
         type: addons.projectsveltos.io/cluster-profile\ndata:\n  credentials.yaml: {}\n",
        B64.encode(manifest)
    );
    std::fs::write(dir.join("management.yaml"), text).expect("management set written");
}

/// Runs a tool loudly with `args` (in groups) and `env`; asserts exit 0.
fn tool(bin: std::path::PathBuf, a: &[&str], b: &[&str], c: &[&str], env: &[(&str, &str)]) -> airlock_e2e::Run {
    let mut command = Command::new(&bin);
    command.args(a).args(b).args(c).args(LOUD).env_remove("KUBECONFIG").env_remove("AIRLOCK_LOG");
    for (k, v) in env {
        command.env(k, v);
    }
    let run: airlock_e2e::Run = command.output().expect("tool runs").into();
    assert_eq!(run.code, Some(0), "{} {a:?} {b:?}: {run:?}", bin.display());
    run
}

async fn managed_client() -> kube::Client {
    let config = kube::config::Kubeconfig::read_from(airlock_e2e::service_env(MANAGED)).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default()).await.expect("kube config");
    kube::Client::try_from(config).expect("kube client")
}

/// Deletes the test's namespaces on both apiservers, also when it failed.
struct Cleanup(Vec<String>, String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let kubectl = airlock_e2e::service_env("AIRLOCK_KUBECTL");
        let delete = |kubeconfig: &str, namespaces: &[String]| {
            let _ = Command::new(&kubectl)
                .args(["--kubeconfig", &airlock_e2e::service_env(kubeconfig), "delete", "namespace", "--ignore-not-found", "--wait=false"])
                .args(namespaces)
                .output();
        };
        delete(MANAGED, &self.0);
        delete(MANAGEMENT, std::slice::from_ref(&self.1));
    }
}
