//! What Sveltos's own tools read about a pull-mode cluster, written by `airlock-publisher
//! ingest` on the management apiserver of `hack/services.sh`: with Sveltos's
//! ClusterConfiguration CRD installed (`hack/sveltos-crds.sh status`), a registered cluster's
//! signed reports become its ClusterConfiguration (read back here into the table
//! `sveltosctl show addons` prints), its profiles' matchingClusters and failedClusters, and
//! a ClusterReport for a previewed profile (`show dryrun`); a failed profile leaves the
//! cluster ready and shows on that profile.

mod common;
#[path = "publisher_support/mod.rs"]
mod support;

use serde_json::{Value, json};
use support::reports::{report, report_key_of, sign_report};
use support::{Keys, install_crds, install_status_crds, kubectl_ok, run, unique};

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const T1: &str = "2026-03-01T10:00:00Z";
const T2: &str = "2026-03-02T10:00:00Z";
const T3: &str = "2026-03-03T10:00:00Z";

fn get(args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&kubectl_ok(MANAGEMENT, &all, b"")).expect("kubectl prints JSON")
}

fn object(part: &str, group: &str, kind: &str, namespace: Option<&str>, name: &str, action: &str) -> Value {
    json!({"id": {"group": group, "version": "v1", "kind": kind, "namespace": namespace, "name": name}, "profile": part, "action": action})
}

/// The rows `sveltosctl show addons` prints for the ClusterConfigurations of `ns`:
/// cluster, resource type, namespace, name, version, time, profiles.
fn addons_rows(ns: &str) -> Vec<[String; 7]> {
    let mut rows = Vec::new();
    for cc in get(&["clusterconfigurations", "-n", ns])["items"].as_array().expect("a list") {
        let cluster = format!("{ns}/{}", cc["metadata"]["labels"]["projectsveltos.io/cluster-name"].as_str().expect("cluster-name label"));
        let sections =
            [("clusterProfileResources", "clusterProfileName", "ClusterProfile"), ("profileResources", "profileName", "Profile")];
        for (list, name_field, kind) in sections {
            for section in cc["status"][list].as_array().into_iter().flatten() {
                let profile = format!("{kind}/{}", section[name_field].as_str().expect("profile name"));
                for feature in section["Features"].as_array().into_iter().flatten() {
                    for chart in feature["charts"].as_array().into_iter().flatten() {
                        let text = |k: &str| chart[k].as_str().unwrap_or_default().to_string();
                        let (namespace, name) = (text("namespace"), text("releaseName"));
                        rows.push([
                            cluster.clone(),
                            "helm chart".into(),
                            namespace,
                            name,
                            text("chartVersion"),
                            text("lastAppliedTime"),
                            profile.clone(),
                        ]);
                    }
                    for r in feature["resources"].as_array().into_iter().flatten() {
                        let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
                        let kind = format!("{}:{}", text("group"), text("kind"));
                        rows.push([
                            cluster.clone(),
                            kind,
                            text("namespace"),
                            text("name"),
                            "N/A".into(),
                            text("lastAppliedTime"),
                            profile.clone(),
                        ]);
                    }
                }
            }
        }
    }
    rows.sort();
    let header = ["CLUSTER", "RESOURCE TYPE", "NAMESPACE", "NAME", "VERSION", "TIME", "PROFILES"];
    println!("{}", header.join(" | "));
    for row in &rows {
        println!("{}", row.join(" | "));
    }
    rows
}

fn row(cluster: &str, kind: &str, namespace: &str, name: &str, time: &str, profile: &str) -> [String; 7] {
    [cluster, kind, namespace, name, "N/A", time, profile].map(str::to_string)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn refs(list: &Value) -> Vec<String> {
    let name = |r: &Value| format!("{}/{}", r["namespace"].as_str().unwrap_or_default(), r["name"].as_str().unwrap_or_default());
    list.as_array().into_iter().flatten().map(|r| if r["clusterRef"].is_object() { name(&r["clusterRef"]) } else { name(r) }).collect()
}

#[tokio::test]
async fn ingest_writes_what_show_addons_usage_and_dryrun_read_and_a_failed_profile_keeps_the_cluster_ready() {
    install_crds();
    install_status_crds();
    let ns = unique("svstatus");
    let keys = Keys::new("ops");
    let mgmt = common::service_env(MANAGEMENT);
    let source = format!("oci+http://{}/airlock-e2e/{ns}", common::service_env("AIRLOCK_REGISTRY"));
    let args = ["register", "cluster", "--namespace", &ns, "--cluster", "edge-1", "--pullmode", "--labels", "site=a"];
    let out = run(&[&args[..], &["--source", &source, "--keyring", &keys.keyring_path, "--kubeconfig", &mgmt]].concat());
    assert!(out.status.success(), "register: {}", String::from_utf8_lossy(&out.stderr));
    let key = report_key_of(&out.stdout);
    let web = format!("{ns}-web");
    let profiles = format!(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: {web}}}\n\
         spec: {{clusterSelector: {{matchLabels: {{site: a}}}}}}\n---\n\
         apiVersion: config.projectsveltos.io/v1beta1\nkind: Profile\nmetadata: {{name: monitoring, namespace: {ns}}}\n\
         spec: {{clusterSelector: {{matchLabels: {{site: a}}}}}}\n"
    );
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], profiles.as_bytes());
    let cluster = format!("{ns}/edge-1");
    let (web_part, monitoring_part) = (format!("ClusterProfile.{web}"), format!("Profile.{ns}.monitoring"));
    let reports = tempfile::tempdir().expect("tempdir");
    let ingest = |name: &str, report: &Value| {
        std::fs::write(reports.path().join(name), sign_report(report, &key)).expect("write report");
        let out = run(&["ingest", "--from", reports.path().to_str().expect("UTF-8 path"), "--kubeconfig", &mgmt]);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{text}");
    };

    // A run that applied bundle 4: two objects of the ClusterProfile, one of the Profile.
    let mut applied = report(&cluster, T1, "applied", "v1.20.2", 4);
    applied["objects"] = json!([
        object(&web_part, "", "Namespace", None, "apps", "created"),
        object(&web_part, "", "ConfigMap", Some("apps"), "settings", "created"),
        object(&monitoring_part, "apps", "Deployment", Some("mon"), "agent", "created"),
    ]);
    ingest("report-1.json", &applied);
    let expected = [
        row(&cluster, ":ConfigMap", "apps", "settings", T1, &format!("ClusterProfile/{web}")),
        row(&cluster, ":Namespace", "", "apps", T1, &format!("ClusterProfile/{web}")),
        row(&cluster, "apps:Deployment", "mon", "agent", T1, "Profile/monitoring"),
    ];
    assert_eq!(addons_rows(&ns), expected);
    let cc = get(&["clusterconfiguration", "-n", &ns, "sveltos--edge-1"]);
    assert_eq!(cc["metadata"]["labels"]["projectsveltos.io/cluster-type"], "Sveltos");
    let managers: Vec<&str> =
        cc["metadata"]["managedFields"].as_array().expect("managed fields").iter().filter_map(|m| m["manager"].as_str()).collect();
    assert!(managers.iter().all(|m| *m == "airlock-publisher"), "{managers:?}");
    let web_status = &get(&["clusterprofile", &web])["status"];
    assert_eq!(refs(&web_status["matchingClusters"]), [cluster.as_str()], "show usage: {web_status}");
    assert_eq!(refs(&get(&["profile", "-n", &ns, "monitoring"])["status"]["matchingClusters"]), [cluster.as_str()]);

    // The next run fails on the ClusterProfile's ConfigMap: the cluster stays ready, the
    // ClusterProfile lists it as failed, the Profile does not.
    let mut failed = report(&cluster, T2, "error", "v1.20.2", 4);
    let mut settings = object(&web_part, "", "ConfigMap", Some("apps"), "settings", "failed");
    settings["detail"] = "admission webhook denied the request".into();
    failed["objects"] = json!([settings, object(&monitoring_part, "apps", "Deployment", Some("mon"), "agent", "unchanged")]);
    ingest("report-2.json", &failed);
    let sveltos_cluster = get(&["sveltoscluster", "-n", &ns, "edge-1"]);
    assert_eq!(sveltos_cluster["status"]["ready"], true, "{sveltos_cluster}");
    assert_eq!(sveltos_cluster["metadata"]["annotations"]["airlock.dev/last-error"], "apiserver unreachable");
    let web_status = &get(&["clusterprofile", &web])["status"];
    assert_eq!(refs(&web_status["failedClusters"]), [cluster.as_str()], "{web_status}");
    assert_eq!(web_status["failedClusters"][0]["failureMessage"], "ConfigMap apps/settings: admission webhook denied the request");
    assert_eq!(web_status["failedClusters"][0]["lastFailureTime"], T2);
    assert_eq!(refs(&web_status["matchingClusters"]), [cluster.as_str()], "a failed profile still matches");
    let monitoring = &get(&["profile", "-n", &ns, "monitoring"])["status"];
    assert!(refs(&monitoring["failedClusters"]).is_empty(), "{monitoring}");
    assert_eq!(addons_rows(&ns), expected, "what failed to change stays as last applied");

    // Then a bundle whose Profile is in DryRun: its preview becomes the ClusterReport
    // `show dryrun` reads, owned by the Profile; the ClusterProfile applied and recovered.
    let mut previewed = report(&cluster, T3, "applied", "v1.20.2", 5);
    let mut agent = object(&monitoring_part, "apps", "Deployment", Some("mon"), "agent", "wouldConfigure");
    agent["detail"] = "spec.replicas: 1 -> 2".into();
    previewed["objects"] = json!([
        object(&web_part, "", "Namespace", None, "apps", "unchanged"),
        object(&web_part, "", "ConfigMap", Some("apps"), "settings", "configured"),
        agent,
        object(&monitoring_part, "", "ServiceAccount", Some("mon"), "agent", "wouldCreate"),
    ]);
    ingest("report-3.json", &previewed);
    let dry = get(&["clusterreport", "-n", &ns, "p--monitoring--sveltos--edge-1"]);
    assert_eq!(dry["metadata"]["ownerReferences"][0]["kind"], "Profile", "show dryrun finds the profile here: {dry}");
    assert_eq!((dry["spec"]["clusterNamespace"].as_str(), dry["spec"]["clusterName"].as_str()), (Some(ns.as_str()), Some("edge-1")));
    let dry_rows: Vec<[&str; 4]> = dry["status"]["resourceReports"]
        .as_array()
        .expect("resource reports")
        .iter()
        .map(|r| [text(&r["resource"]["kind"]), text(&r["resource"]["name"]), text(&r["action"]), text(&r["message"])])
        .collect();
    assert_eq!(dry_rows, [["Deployment", "agent", "Update", "spec.replicas: 1 -> 2"], ["ServiceAccount", "agent", "Create", ""]]);
    let web_status = &get(&["clusterprofile", &web])["status"];
    assert!(refs(&web_status["failedClusters"]).is_empty(), "recovered: {web_status}");
    let after = addons_rows(&ns);
    assert_eq!(after[0], row(&cluster, ":ConfigMap", "apps", "settings", T3, &format!("ClusterProfile/{web}")));
    assert_eq!(after[1..], expected[1..], "unchanged and previewed objects keep their time");

    kubectl_ok(MANAGEMENT, &["delete", "clusterprofile", &web, "--wait=false"], b"");
    kubectl_ok(MANAGEMENT, &["delete", "namespace", &ns, "--wait=false"], b"");
}
