//! `airlock-publisher register cluster` end to end, as an operator runs it: the real binary
//! creates the SveltosCluster in the management apiserver, its YAML is applied with kubectl
//! to the managed Kubernetes 1.20 apiserver, and `kubectl auth can-i` shows what the puller's
//! ServiceAccount may then do. Each test uses namespaces of its own (puller namespace
//! included), so tests and the quickstart can share the apiservers.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use airlock_bundle::Limits;
use airlock_bundle::{Keyring, SigningKey};
use airlock_e2e::publisher::{install_crds, kubectl, kubectl_ok};

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";

/// `kubectl auth can-i VERB RESOURCE -n NS` as the puller's ServiceAccount.
fn puller_can(puller_ns: &str, verb: &str, resource: &str, ns: &str) -> bool {
    let sa = format!("system:serviceaccount:{puller_ns}:airlock-puller");
    let out = kubectl(MANAGED, &["auth", "can-i", verb, resource, "-n", ns, "--as", &sa], b"");
    match String::from_utf8_lossy(&out.stdout).trim() {
        "yes" => true,
        "no" => false,
        other => panic!("kubectl auth can-i {verb} {resource} -n {ns}: {other:?} {}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// A directory with a keyring file, a registry password file and a report key (mode 0600).
fn inputs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let keyring = Keyring::new(1, 1, vec![SigningKey::from_seed([3; 32]).public()], &Limits::SPEC).expect("keyring");
    std::fs::write(dir.path().join("keyring.json"), keyring.to_json()).expect("write keyring");
    std::fs::write(dir.path().join("password"), "airlock-test-pw\n").expect("write password");
    let report_key = dir.path().join("report.key");
    std::fs::write(&report_key, SigningKey::from_seed([6; 32]).to_pkcs8_pem()).expect("write report key");
    std::fs::set_permissions(&report_key, std::fs::Permissions::from_mode(0o600)).expect("chmod report key");
    dir
}

/// Runs `register cluster` with the common flags and `extra`; its output.
fn register(inputs: &Path, namespace: &str, cluster: &str, extra: &[&str]) -> Output {
    let keyring = inputs.join("keyring.json");
    let source = format!("oci+http://{}/airlock", airlock_e2e::service_env("AIRLOCK_REGISTRY"));
    Command::new(airlock_e2e::publisher_bin())
        .args(["register", "cluster", "--namespace", namespace, "--cluster", cluster, "--pullmode"])
        .args(["--source", &source, "--keyring", keyring.to_str().expect("UTF-8 path")])
        .args(["--cronjob-api", "batch/v1beta1"])
        .args(extra)
        .output()
        .expect("airlock-publisher runs")
}

/// Registers `cluster` against the management apiserver and applies its YAML to the managed
/// one; returns the YAML. Panics with the tool's stderr when either step fails. The caller
/// holds the guard of [`install_crds`].
fn register_and_apply(inputs: &Path, namespace: &str, cluster: &str, extra: &[&str]) -> Vec<u8> {
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let mut args = vec!["--kubeconfig", mgmt.as_str()];
    args.extend_from_slice(extra);
    let out = register(inputs, namespace, cluster, &args);
    assert!(out.status.success(), "register cluster: {}", String::from_utf8_lossy(&out.stderr));
    kubectl_ok(MANAGED, &["apply", "-f", "-"], &out.stdout);
    out.stdout
}

fn cleanup(management_namespace: &str, yaml: &[u8]) {
    kubectl_ok(MANAGED, &["delete", "--wait=false", "--ignore-not-found", "-f", "-"], yaml);
    kubectl_ok(MANAGEMENT, &["delete", "namespace", management_namespace, "--wait=false"], b"");
}

#[test]
fn scoped_registration_creates_the_cluster_and_confines_the_puller() {
    let _crds = install_crds();
    let pid = std::process::id();
    let (ns, puller_ns, web, monitoring) =
        (format!("reg-scoped-{pid}"), format!("airlock-scoped-{pid}"), format!("web-{pid}"), format!("monitoring-{pid}"));
    let inputs = inputs();
    let password = inputs.path().join("password");
    let report_key = inputs.path().join("report.key");
    let age_identity = inputs.path().join("age-identity.txt");
    let keygen = std::process::Command::new("age-keygen").arg("-o").arg(&age_identity).output().expect("age-keygen runs");
    assert!(keygen.status.success(), "age-keygen: {}", String::from_utf8_lossy(&keygen.stderr));
    let watch = format!("{web},{monitoring}");
    // The same report key and age identity both times, so that registering again is a no-op.
    let extra = [
        "--labels",
        "region=eu,tier=prod",
        "--watch-namespaces",
        &watch,
        "--puller-namespace",
        &puller_ns,
        "--registry-username",
        "airlock",
        "--registry-password-file",
        password.to_str().unwrap(),
        "--report-key-file",
        report_key.to_str().unwrap(),
        "--age-identity-file",
        age_identity.to_str().unwrap(),
    ];
    let yaml = register_and_apply(inputs.path(), &ns, "edge-1", &extra);

    let jsonpath = r"jsonpath={.spec.pullMode} {.metadata.labels.region} {.metadata.labels.tier} {.metadata.annotations.agent\.projectsveltos\.io/watch-namespaces}";
    let cluster = kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", &ns, "edge-1", "-o", jsonpath], b"");
    assert_eq!(cluster, format!("true eu prod {watch}"));
    let managers =
        kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", &ns, "edge-1", "-o", "jsonpath={.metadata.managedFields[*].manager}"], b"");
    assert_eq!(managers, "airlock-publisher");

    let cron = kubectl_ok(
        MANAGED,
        &["get", "cronjob", "-n", &puller_ns, "airlock-puller", "-o", "jsonpath={.apiVersion} {.spec.concurrencyPolicy}"],
        b"",
    );
    assert_eq!(cron, "batch/v1beta1 Forbid");
    let secret = kubectl_ok(MANAGED, &["get", "secret", "-n", &puller_ns, "airlock-store-credentials", "-o", "jsonpath={.type}"], b"");
    assert_eq!(secret, "kubernetes.io/dockerconfigjson");
    let report_key =
        kubectl_ok(MANAGED, &["get", "secret", "-n", &puller_ns, "airlock-report-key", "-o", "jsonpath={.data.report\\.key}"], b"");
    assert!(!report_key.is_empty(), "the report key Secret is applied");
    let public = kubectl_ok(
        MANAGEMENT,
        &["get", "sveltoscluster", "-n", &ns, "edge-1", "-o", r"jsonpath={.metadata.annotations.airlock\.dev/report-key}"],
        b"",
    );
    assert_eq!(public, SigningKey::from_seed([6; 32]).public().to_openssh(&format!("{ns}/edge-1")));

    assert!(puller_can(&puller_ns, "create", "configmaps", &web));
    assert!(puller_can(&puller_ns, "delete", "deployments.apps", &monitoring));
    assert!(!puller_can(&puller_ns, "create", "configmaps", "default"));
    assert!(!puller_can(&puller_ns, "get", "secrets", "kube-system"));
    assert!(!puller_can(&puller_ns, "create", "clusterroles.rbac.authorization.k8s.io", "default"));
    // Contained: CRDs are cluster-scoped, so only those an allow-list names are writable.
    assert!(!puller_can(&puller_ns, "create", "customresourcedefinitions.apiextensions.k8s.io", "default"));
    assert!(puller_can(&puller_ns, "list", "customresourcedefinitions.apiextensions.k8s.io", "default"));
    assert!(puller_can(&puller_ns, "list", "namespaces", "default"));
    for own in ["secrets", "configmaps", "leases.coordination.k8s.io"] {
        assert!(puller_can(&puller_ns, "update", own, &puller_ns), "{own} in the puller's namespace");
    }

    // Registering again changes nothing: same YAML, and the server-side apply is a no-op.
    let again = register_and_apply(inputs.path(), &ns, "edge-1", &extra);
    assert_eq!(String::from_utf8_lossy(&again), String::from_utf8_lossy(&yaml));
    cleanup(&ns, &yaml);
}

#[test]
fn cluster_wide_registration_lets_the_puller_write_everywhere() {
    let _crds = install_crds();
    let pid = std::process::id();
    let (ns, puller_ns) = (format!("reg-wide-{pid}"), format!("airlock-wide-{pid}"));
    let inputs = inputs();
    let yaml = register_and_apply(inputs.path(), &ns, "edge-2", &["--labels", "region=us", "--puller-namespace", &puller_ns]);

    let annotations =
        kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", &ns, "edge-2", "-o", "jsonpath={.metadata.annotations}"], b"");
    assert!(!annotations.contains("watch-namespaces"), "{annotations}");
    for namespace in ["default", "kube-system", &puller_ns] {
        assert!(puller_can(&puller_ns, "create", "configmaps", namespace), "{namespace}");
    }
    assert!(puller_can(&puller_ns, "create", "clusterroles.rbac.authorization.k8s.io", "default"));
    let secret = kubectl(MANAGED, &["get", "secret", "-n", &puller_ns, "airlock-store-credentials"], b"");
    assert!(!secret.status.success(), "no credentials given, so no Secret");
    cleanup(&ns, &yaml);
}

#[test]
fn to_dir_writes_the_sveltoscluster_without_contacting_a_cluster() {
    let inputs = inputs();
    let dir = inputs.path().join("management");
    let out = register(
        inputs.path(),
        "fleet",
        "edge-3",
        &["--labels", "tier=staging", "--to-dir", dir.to_str().unwrap(), "--kubeconfig", "/nonexistent/kubeconfig"],
    );
    assert!(out.status.success(), "register --to-dir: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("kind: CronJob"));
    let file = dir.join("fleet.edge-3.sveltoscluster.yaml");
    let object: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&file).expect("file written")).expect("YAML");
    assert_eq!(object["spec"]["pullMode"], true);
    assert_eq!(object["metadata"]["labels"]["tier"], "staging");

    let _crds = install_crds();
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fleet\n");
    let check = kubectl_ok(MANAGEMENT, &["apply", "--server-side", "--dry-run=server", "-f", file.to_str().unwrap()], b"");
    assert!(check.contains("sveltoscluster.lib.projectsveltos.io/edge-3"), "{check}");
}

#[test]
fn bad_input_exits_1_naming_the_flag_and_prints_nothing() {
    let inputs = inputs();
    let out_dir = inputs.path().join("out");
    let out = register(inputs.path(), "fleet", "edge-4", &["--labels", "region", "--to-dir", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--labels \"region\": expected KEY=VALUE"));
    assert!(!out_dir.exists());

    let keyring = inputs.path().join("keyring.json");
    std::fs::write(&keyring, "{}").unwrap();
    let out = register(inputs.path(), "fleet", "edge-4", &["--to-dir", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("keyring {}", keyring.display())));
    assert!(!out_dir.exists());
}
