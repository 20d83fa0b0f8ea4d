//! A cluster leaving Airlock, end to end on the two 1.20 apiservers with the real binaries:
//! registered, published to and synced; then `deregister cluster --final-bundle` publishes
//! its final bundle (bundles-format.md 2.5.5), the next sync prunes what the puller applied
//! and records the cluster decommissioned, later syncs only say so, `ingest` records the
//! report, and `deregister cluster` removes the SveltosCluster and prints what the site
//! deletes; every step again changes nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use airlock_e2e::publisher::{Keys, Names, install_crds, kubectl, kubectl_ok, management_set, run_expect};
use airlock_e2e::{Run, puller_bin};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";

/// `airlock-puller sync` of `cluster` from `store`, writing signed reports to `reports`.
fn sync(names: &Names, keys: &Keys, store: &str, report_key: &Path, reports: &Path) -> Run {
    Command::new(puller_bin())
        .args(["sync", "--source", store, "--cluster", &names.cluster("edge-1"), "--keyring", &keys.keyring_path])
        .args(["--state-namespace", &names.puller_ns(), "--watch-namespaces", &names.app_ns()])
        .arg("--report-key")
        .arg(report_key)
        .arg("--report-to")
        .arg(reports)
        .env("KUBECONFIG", airlock_e2e::service_env(MANAGED))
        .env("AIRLOCK_LOG", "warn")
        .output()
        .expect("airlock-puller runs")
        .into()
}

fn annotation(ns: &str, key: &str) -> String {
    let path = format!("jsonpath={{.metadata.annotations.{}}}", key.replace('.', "\\."));
    kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", ns, "edge-1", "-o", &path], b"")
}

#[test]
fn a_final_bundle_prunes_the_site_and_deregister_removes_the_registration() {
    let _crds = install_crds();
    let (names, keys, scratch) = (Names::new("dereg"), Keys::new("dereg"), tempfile::tempdir().expect("tempdir"));
    let (ns, app_ns, cluster) = (names.ns().to_string(), names.app_ns(), names.cluster("edge-1"));
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let store = format!("oci-layout:{}", scratch.path().join("store").display());
    let reports = scratch.path().join("reports");
    std::fs::create_dir_all(&reports).expect("reports dir");
    kubectl_ok(MANAGEMENT, &["create", "namespace", &ns], b"");
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], management_set(&ns, &app_ns, "blue").as_bytes());
    let yaml = names.register(&keys, "edge-1", &["--source", &store, "--no-encryption"]);
    kubectl_ok(MANAGED, &["apply", "-f", "-"], yaml.as_bytes());
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&yaml).expect("registration YAML");
    let key = docs.iter().find(|d| d["metadata"]["name"] == "airlock-report-key").expect("report key Secret");
    let report_key = scratch.path().join("report.key");
    std::fs::write(&report_key, STANDARD.decode(key["data"]["report.key"].as_str().expect("report.key")).expect("base64")).expect("write");
    std::fs::set_permissions(&report_key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let publish = ["publish", "--kubeconfig", &mgmt, "--to", &store, "--no-cache", "--key", &keys.key, "--keyring", &keys.keyring_path];
    run_expect(&[&publish[..], &["--cluster", &cluster]].concat(), 0);
    let first = sync(&names, &keys, &store, &report_key, &reports);
    assert_eq!(first.code, Some(0), "{first:?}");
    let color = ["get", "configmap", "-n", app_ns.as_str(), "settings", "-o", "jsonpath={.data.color}"];
    assert_eq!(kubectl_ok(MANAGED, &color, b""), "blue");

    // The final bundle: a dry run publishes nothing and marks nothing.
    let final_bundle = ["deregister", "cluster", &cluster, "--final-bundle", "--to", &store, "--key", &keys.key];
    let final_bundle = [&final_bundle[..], &["--keyring", &keys.keyring_path, "--kubeconfig", &mgmt]].concat();
    let out = run_expect(&[&final_bundle[..], &["--dry-run"]].concat(), 0);
    assert!(out.contains("would publish the final bundle, version 2"), "{out}");
    assert_eq!(annotation(&ns, "airlock.dev/decommission"), "");
    let out = run_expect(&final_bundle, 0);
    assert!(out.contains(&format!("{cluster}: final bundle version 2 published")), "{out}");
    assert_eq!(annotation(&ns, "airlock.dev/decommission"), "2");
    let again = run_expect(&final_bundle, 0);
    assert!(again.contains("the final bundle, version 2, is already published"), "{again}");
    // publish puts nothing above it.
    run_expect(&[&publish[..], &["--cluster", &cluster]].concat(), 0);
    let status = run_expect(&["status", "--from", &store, "--kubeconfig", &mgmt, "--cluster", &cluster], 0);
    assert_eq!(status.lines().nth(1).and_then(|l| l.split_whitespace().nth(1)), Some("2"), "{status}");

    // The site applies it: the ConfigMap is pruned, the run says the cluster is decommissioned.
    let second = sync(&names, &keys, &store, &report_key, &reports);
    assert_eq!(second.code, Some(0), "{second:?}");
    assert!(second.stdout.contains("applied its final bundle, version 2") && second.stdout.contains("decommissioned at"), "{second:?}");
    let gone = kubectl(MANAGED, &color, b"");
    assert!(!gone.status.success() && String::from_utf8_lossy(&gone.stderr).contains("NotFound"), "pruned: {gone:?}");
    let third = sync(&names, &keys, &store, &report_key, &reports);
    assert_eq!(third.code, Some(0), "{third:?}");
    assert!(third.stdout.contains("was decommissioned at") && third.stdout.contains("nothing to do"), "{third:?}");
    assert!(third.stderr.contains("kubectl delete namespace"), "says what to delete at the site: {third:?}");

    // The report reaches the management side.
    run_expect(&["ingest", "--from", reports.to_str().expect("UTF-8 path"), "--kubeconfig", &mgmt], 0);
    assert!(!annotation(&ns, "airlock.dev/decommissioned").is_empty(), "ingest records the decommission");

    // Deregistration: a server dry run deletes nothing; then the SveltosCluster goes.
    // Registered without --token, the SveltosCluster does not name the puller's namespace.
    let puller_ns = names.puller_ns();
    let deregister = ["deregister", "cluster", cluster.as_str(), "--kubeconfig", mgmt.as_str(), "--puller-namespace", puller_ns.as_str()];
    let out = run_expect(&[&deregister[..], &["--dry-run"]].concat(), 0);
    assert!(out.contains("sveltoscluster.lib.projectsveltos.io/edge-1 deleted (server dry run)"), "{out}");
    assert!(kubectl(MANAGEMENT, &["get", "sveltoscluster", "-n", &ns, "edge-1"], b"").status.success(), "still there");
    let out = run_expect(&deregister, 0);
    println!("{out}");
    assert!(out.contains("sveltoscluster.lib.projectsveltos.io/edge-1 deleted\n"), "{out}");
    assert!(out.contains(&format!("kubectl delete namespace {puller_ns}\n")), "{out}");
    assert!(out.contains(&format!("kubectl delete namespace {app_ns}\n")), "names the watched namespace: {out}");
    let gone = kubectl(MANAGEMENT, &["get", "sveltoscluster", "-n", &ns, "edge-1"], b"");
    assert!(String::from_utf8_lossy(&gone.stderr).contains("NotFound"), "{gone:?}");
    let again = run_expect(&deregister, 0);
    assert!(again.contains("sveltoscluster.lib.projectsveltos.io/edge-1 not found (already gone)"), "{again}");
    run_expect(&final_bundle, 1);

    // The printed commands select every Airlock object of a site; this shared apiserver holds
    // other tests' pullers, so the registration YAML is deleted by name instead.
    kubectl_ok(MANAGED, &["delete", "--wait=false", "--ignore-not-found", "-f", "-"], yaml.as_bytes());
    kubectl_ok(MANAGEMENT, &["delete", "namespace", &ns, "--wait=false"], b"");
}
