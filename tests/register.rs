//! `airlock-publisher register cluster` end to end, as an operator runs it: the real binary
//! creates the SveltosCluster in the management apiserver, its YAML is applied with kubectl
//! to the managed Kubernetes 1.20 apiserver, and `kubectl auth can-i` shows what the puller's
//! ServiceAccount may then do. Each test uses namespaces of its own (puller namespace
//! included), so tests and the quickstart can share the apiservers.

mod common;
#[path = "publisher_support/mod.rs"]
mod publisher_support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use airlock::Limits;
use airlock::bundle::{Keyring, SigningKey};

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";

/// kubectl against one of the two apiservers, with `stdin` piped in.
fn kubectl(kubeconfig: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(common::service_env("AIRLOCK_KUBECTL"))
        .arg("--kubeconfig")
        .arg(common::service_env(kubeconfig))
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
fn kubectl_ok(kubeconfig: &str, args: &[&str], stdin: &[u8]) -> String {
    let out = kubectl(kubeconfig, args, stdin);
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("kubectl prints UTF-8")
}

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

/// A directory with a keyring file and a registry password file.
fn inputs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let keyring = Keyring::new(1, 1, vec![SigningKey::from_seed([3; 32]).public()], &Limits::SPEC).expect("keyring");
    std::fs::write(dir.path().join("keyring.json"), keyring.to_json()).expect("write keyring");
    std::fs::write(dir.path().join("password"), "airlock-test-pw\n").expect("write password");
    dir
}

/// Runs `register cluster` with the common flags and `extra`; its output.
fn register(inputs: &Path, namespace: &str, cluster: &str, extra: &[&str]) -> Output {
    let keyring = inputs.join("keyring.json");
    let source = format!("oci+http://{}/airlock", common::service_env("AIRLOCK_REGISTRY"));
    Command::new(publisher_support::bin())
        .args(["register", "cluster", "--namespace", namespace, "--cluster", cluster, "--pullmode"])
        .args(["--source", &source, "--keyring", keyring.to_str().expect("UTF-8 path")])
        .args(["--cronjob-api", "batch/v1beta1"])
        .args(extra)
        .output()
        .expect("airlock-publisher runs")
}

fn install_crds() {
    let crds = publisher_support::root().join("hack/crds");
    let crds = crds.to_str().expect("UTF-8 path");
    kubectl_ok(MANAGEMENT, &["apply", "--server-side", "-f", crds], b"");
    kubectl_ok(MANAGEMENT, &["wait", "--for", "condition=established", "--timeout=60s", "-f", crds], b"");
}

/// Registers `cluster` against the management apiserver and applies its YAML to the managed
/// one; returns the YAML. Panics with the tool's stderr when either step fails.
fn register_and_apply(inputs: &Path, namespace: &str, cluster: &str, extra: &[&str]) -> Vec<u8> {
    install_crds();
    let mgmt = common::service_env(MANAGEMENT);
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
    let pid = std::process::id();
    let (ns, puller_ns, web, monitoring) =
        (format!("reg-scoped-{pid}"), format!("airlock-scoped-{pid}"), format!("web-{pid}"), format!("monitoring-{pid}"));
    let inputs = inputs();
    let password = inputs.path().join("password");
    let watch = format!("{web},{monitoring}");
    let extra = [
        "--labels", "region=eu,tier=prod", "--watch-namespaces", &watch, "--puller-namespace", &puller_ns,
        "--registry-username", "airlock", "--registry-password-file", password.to_str().unwrap(),
    ];
    let yaml = register_and_apply(inputs.path(), &ns, "edge-1", &extra);

    let jsonpath = r"jsonpath={.spec.pullMode} {.metadata.labels.region} {.metadata.labels.tier} {.metadata.annotations.agent\.projectsveltos\.io/watch-namespaces}";
    let cluster = kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", &ns, "edge-1", "-o", jsonpath], b"");
    assert_eq!(cluster, format!("true eu prod {watch}"));
    let managers = kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", &ns, "edge-1", "-o", "jsonpath={.metadata.managedFields[*].manager}"], b"");
    assert_eq!(managers, "airlock-publisher");

    let cron = kubectl_ok(MANAGED, &["get", "cronjob", "-n", &puller_ns, "airlock-puller", "-o", "jsonpath={.apiVersion} {.spec.concurrencyPolicy}"], b"");
    assert_eq!(cron, "batch/v1beta1 Forbid");
    let secret = kubectl_ok(MANAGED, &["get", "secret", "-n", &puller_ns, "airlock-store-credentials", "-o", "jsonpath={.type}"], b"");
    assert_eq!(secret, "kubernetes.io/dockerconfigjson");

    assert!(puller_can(&puller_ns, "create", "configmaps", &web));
    assert!(puller_can(&puller_ns, "delete", "deployments.apps", &monitoring));
    assert!(!puller_can(&puller_ns, "create", "configmaps", "default"));
    assert!(!puller_can(&puller_ns, "get", "secrets", "kube-system"));
    assert!(!puller_can(&puller_ns, "create", "clusterroles.rbac.authorization.k8s.io", "default"));
    assert!(puller_can(&puller_ns, "create", "customresourcedefinitions.apiextensions.k8s.io", "default"));
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
    let pid = std::process::id();
    let (ns, puller_ns) = (format!("reg-wide-{pid}"), format!("airlock-wide-{pid}"));
    let inputs = inputs();
    let yaml = register_and_apply(inputs.path(), &ns, "edge-2", &["--labels", "region=us", "--puller-namespace", &puller_ns]);

    let annotations = kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", &ns, "edge-2", "-o", "jsonpath={.metadata.annotations}"], b"");
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
    let object: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&file).expect("file written")).expect("YAML");
    assert_eq!(object["spec"]["pullMode"], true);
    assert_eq!(object["metadata"]["labels"]["tier"], "staging");

    install_crds();
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
