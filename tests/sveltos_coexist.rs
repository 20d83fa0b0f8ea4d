//! Sveltos's controllers beside Airlock on the management apiserver of `hack/services.sh`:
//! a ConfigurationGroup written as Sveltos's addon-controller stages one for its pull-mode
//! clusters, for a cluster `register` enrolled, is found by `ingest` (a warning, the
//! annotation airlock.dev/sveltos-staged and a Warning Event on the SveltosCluster) and shown
//! by `status`; one for a cluster Airlock does not serve changes nothing; the annotation goes
//! once the group is gone.

use airlock_e2e::publisher::{Keys, install_crds, install_status_crds, kubectl, kubectl_ok, run, unique};
use serde_json::Value;

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const STAGED: &str = "airlock.dev/sveltos-staged";

/// A ConfigurationGroup as Sveltos's pull-mode library writes it for `cluster`'s ClusterSummary
/// of ClusterProfile `profile`: the cluster's name as a label, the requestor's kind and
/// feature as labels, its name as an annotation, one item pointing at a ConfigurationBundle.
fn configuration_group(ns: &str, name: &str, cluster: &str, profile: &str) -> String {
    format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: ConfigurationGroup\n\
         metadata:\n  name: {name}\n  namespace: {ns}\n  labels:\n\
         \x20   pullmode.projectsveltos.io/clustername: {cluster}\n\
         \x20   pullmode.projectsveltos.io/requestorkind: ClusterSummary\n\
         \x20   pullmode.projectsveltos.io/requestorfeature: Resources\n\
         \x20 annotations:\n    pullmode.projectsveltos.io/requestorname: {profile}-sveltos-{cluster}\n\
         spec:\n  action: Deploy\n  updatePhase: Ready\n  configurationItem:\n\
         \x20 - contentRef: {{apiVersion: lib.projectsveltos.io/v1beta1, kind: ConfigurationBundle, namespace: {ns}, name: {name}-1}}\n\
         \x20   hash: c3ZlbHRvcw==\n"
    )
}

fn annotations(ns: &str, cluster: &str) -> Value {
    let text = kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", ns, cluster, "-o", "json"], b"");
    serde_json::from_str::<Value>(&text).expect("kubectl prints JSON")["metadata"]["annotations"].clone()
}

/// The Events of `ns` with the publisher's reason, as `involved object: message`.
fn events(ns: &str) -> Vec<(String, String)> {
    let text =
        kubectl_ok(MANAGEMENT, &["get", "events", "-n", ns, "--field-selector", "reason=SveltosStagesConfiguration", "-o", "json"], b"");
    let list: Value = serde_json::from_str(&text).expect("kubectl prints JSON");
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    list["items"].as_array().expect("a list").iter().map(|e| (text(&e["involvedObject"]["name"]), text(&e["message"]))).collect()
}

#[tokio::test]
async fn ingest_and_status_report_sveltos_staging_configuration_groups_for_an_airlock_cluster() {
    let _crds = install_crds();
    install_status_crds();
    let ns = unique("coexist");
    let keys = Keys::new("ops");
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let source = format!("oci+http://{}/airlock-e2e/{ns}", airlock_e2e::service_env("AIRLOCK_REGISTRY"));
    for cluster in ["edge-1", "edge-2"] {
        let args = ["register", "cluster", "--namespace", &ns, "--cluster", cluster, "--pullmode", "--source", &source];
        let out = run(&[&args[..], &["--keyring", &keys.keyring_path, "--kubeconfig", &mgmt]].concat());
        assert!(out.status.success(), "register {cluster}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // addon-controller staging for edge-1, and for a cluster of its own that Airlock does
    // not serve (same namespace, no SveltosCluster registered by Airlock).
    let groups = [configuration_group(&ns, "cg-web", "edge-1", "web"), configuration_group(&ns, "cg-own", "sveltos-own", "web")];
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], groups.join("---\n").as_bytes());
    let reports = tempfile::tempdir().expect("tempdir");
    let ingest = || {
        let out = run(&["ingest", "--from", reports.path().to_str().expect("UTF-8 path"), "--kubeconfig", &mgmt]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "ingest: {stderr}");
        stderr
    };
    let status = || {
        let (one, two) = (format!("{ns}/edge-1"), format!("{ns}/edge-2"));
        let out = run(&["status", "--from", &source, "--kubeconfig", &mgmt, "--cluster", &one, "--cluster", &two]);
        assert_eq!(out.status.code(), Some(0), "status: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8")
    };

    let logged = ingest();
    let warned =
        format!("{ns}/edge-1: Sveltos stages ConfigurationGroups for this Airlock cluster (ClusterSummary/web-sveltos-edge-1 (Resources))");
    assert!(logged.contains(&warned), "ingest warns: {logged}");
    assert!(!logged.contains(&format!("{ns}/edge-2")) && !logged.contains("sveltos-own"), "only edge-1: {logged}");
    assert_eq!(annotations(&ns, "edge-1")[STAGED], "ClusterSummary/web-sveltos-edge-1 (Resources)");
    assert!(annotations(&ns, "edge-2")[STAGED].is_null(), "no ConfigurationGroup for edge-2");
    let recorded = events(&ns);
    assert_eq!(recorded.len(), 1, "one Warning Event: {recorded:?}");
    assert_eq!(recorded[0].0, "edge-1");
    assert!(recorded[0].1.contains("sharding.projectsveltos.io/key"), "the Event says what to do: {}", recorded[0].1);
    let shown = status();
    println!("{shown}");
    let warnings: Vec<&str> = shown.lines().filter(|l| l.starts_with("WARNING")).collect();
    assert_eq!(warnings.len(), 1, "{shown}");
    assert!(warnings[0].starts_with(&format!("WARNING {warned}")), "{shown}");

    // Nothing new: the annotation stands and no second Event is made.
    ingest();
    assert_eq!(events(&ns).len(), 1, "an Event when the finding changes, not on every ingest");

    // Sveltos withdraws its group: the next ingest removes the annotation, status is clean.
    kubectl_ok(MANAGEMENT, &["delete", "configurationgroup", "-n", &ns, "cg-web"], b"");
    let logged = ingest();
    assert!(!logged.contains("Sveltos stages"), "{logged}");
    assert!(annotations(&ns, "edge-1")[STAGED].is_null(), "the annotation goes with the groups");
    assert!(!status().contains("WARNING"), "status clean again");

    let _ = kubectl(MANAGEMENT, &["delete", "namespace", &ns, "--wait=false"], b"");
}
