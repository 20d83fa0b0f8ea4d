//! What Sveltos's own tools read about a pull-mode cluster, written by `airlock-publisher
//! ingest` on the management apiserver of `hack/services.sh`: with Sveltos's
//! ClusterConfiguration CRD installed (`hack/sveltos-crds.sh status`), a registered cluster's
//! signed reports become its ClusterConfiguration (read back here into the table
//! `sveltosctl show addons` prints), its profiles' matchingClusters and failedClusters, and
//! a ClusterReport for a previewed profile (`show dryrun`); a failed profile leaves the
//! cluster ready and shows on that profile. Drift: a real puller on the managed apiserver
//! corrects what was changed by hand, leaves alone what Sveltos's
//! `projectsveltos.io/driftDetectionIgnore` keeps out of drift detection, and its signed
//! report becomes the per-profile drift on the ClusterConfiguration.

use airlock_bundle::SyncMode;
use airlock_e2e::publisher::reports::{register_reporting, report, report_key_of, sign_report};
use airlock_e2e::publisher::{Keys, install_crds, install_status_crds, kubectl_ok, run, unique};
use airlock_e2e::puller::{Signing, Site, config_map_file};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

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
pub(crate) fn addons_rows(ns: &str) -> Vec<[String; 7]> {
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
    let _crds = install_crds();
    install_status_crds();
    let ns = unique("svstatus");
    let keys = Keys::new("ops");
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let source = format!("oci+http://{}/airlock-e2e/{ns}", airlock_e2e::service_env("AIRLOCK_REGISTRY"));
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
    applied["releases"] = json!([{"profile": web_part, "name": "ingress", "namespace": "edge", "chartVersion": "4.0.2",
                                  "appVersion": "1.1.0", "repoURL": "https://charts.example", "operation": "install"}]);
    ingest("report-1.json", &applied);
    let helm = [&cluster, "helm chart", "edge", "ingress", "4.0.2", T1, &format!("ClusterProfile/{web}")].map(str::to_string);
    let expected = [
        row(&cluster, ":ConfigMap", "apps", "settings", T1, &format!("ClusterProfile/{web}")),
        row(&cluster, ":Namespace", "", "apps", T1, &format!("ClusterProfile/{web}")),
        row(&cluster, "apps:Deployment", "mon", "agent", T1, "Profile/monitoring"),
        helm.clone(),
    ];
    assert_eq!(addons_rows(&ns), expected);
    let chart = &get(&["clusterconfiguration", "-n", &ns, "sveltos--edge-1"])["status"]["clusterProfileResources"][0]["Features"][0];
    assert_eq!((chart["featureID"].as_str(), chart["charts"][0]["appVersion"].as_str()), (Some("Helm"), Some("1.1.0")), "{chart}");
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
    previewed["releases"] = json!([{"profile": web_part, "name": "ingress", "namespace": "edge", "chartVersion": "4.0.2",
                                    "appVersion": "1.1.0", "repoURL": "https://charts.example", "operation": "none"}]);
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

/// `name` in `namespace` holding `value`, of part `part`, with `annotations` (YAML flow).
fn config_map(part: &str, name: &str, namespace: &str, value: &str, annotations: &str) -> (String, Vec<u8>) {
    let (path, text) = config_map_file(name, namespace, value);
    let text = String::from_utf8(text)
        .expect("UTF-8")
        .replace(&format!("  namespace: {namespace}\n"), &format!("  namespace: {namespace}\n  annotations: {{{annotations}}}\n"));
    (path.replacen("ClusterProfile.app/", &format!("{part}/"), 1), text.into_bytes())
}

#[tokio::test(flavor = "multi_thread")]
async fn drift_corrected_at_the_edge_shows_per_profile_and_an_object_sveltos_ignores_is_left_alone() {
    let _crds = install_crds();
    install_status_crds();
    let site = Site::new("svdrift").await;
    let (ns, name) = (site.cluster.namespace().to_string(), site.cluster.name().to_string());
    let keys = Keys::new("ops");
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let (key_file, reports) = register_reporting(&site.cluster, &keys.keyring_path, site.dir.path());
    let web = unique("drift");
    let part = format!("ClusterProfile.{web}");

    // One profile under drift detection: a namespace, two ConfigMaps, and a third that
    // carries Sveltos's annotation.
    let app = site.app_ns.clone();
    let mut files =
        vec![(format!("{part}/Namespace.{app}.yaml"), format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {app}\n").into_bytes())];
    files.push(config_map(&part, "cm-0", &app, "one", "note: plain"));
    files.push(config_map(&part, "cm-1", &app, "one", "note: plain"));
    files.push(config_map(&part, "cm-ignored", &app, "one", "projectsveltos.io/driftDetectionIgnore: \"\""));
    let how = Signing { sync_mode: SyncMode::ContinuousWithDriftDetection, ..Signing::default() };
    site.publish("store", &[site.signed_as(1, files, how, |_| {})]).await;
    let report_args = ["--report-to", reports.to_str().expect("UTF-8 path"), "--report-key", key_file.to_str().expect("UTF-8 path")];
    let sync = || async { site.run("sync", "store", &report_args).await };
    let ingest = || {
        let out = run(&["ingest", "--from", reports.to_str().expect("UTF-8 path"), "--kubeconfig", &mgmt]);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{text}");
    };
    let first = sync().await;
    airlock_e2e::assert_exit(&first, 0);
    ingest();
    let cluster = site.cluster.to_string();
    let time_of = |rows: &[[String; 7]], object: &str| {
        let row = rows.iter().find(|r| r[0] == cluster && r[3] == object);
        row.unwrap_or_else(|| panic!("{object} listed: {rows:?}"))[5].clone()
    };
    let applied_at = time_of(&addons_rows(&ns), "cm-ignored");

    // Changed and deleted by hand at the edge; the ignored one changed too.
    let api = Api::<ConfigMap>::namespaced(site.client.clone(), &app);
    let edit = json!({"data": {"value": "edited by hand"}});
    api.patch("cm-0", &PatchParams::default(), &Patch::Merge(&edit)).await.expect("edited");
    api.patch("cm-ignored", &PatchParams::default(), &Patch::Merge(&edit)).await.expect("edited");
    api.delete("cm-1", &DeleteParams::default()).await.expect("deleted");
    // Reports are named to the millisecond; the next run's must be later than the first's.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let second = sync().await;
    airlock_e2e::assert_exit(&second, 0);
    assert!(second.stdout.contains("(drift: 2 found, 2 corrected)"), "{second:?}");
    let value = |cm: &ConfigMap| cm.data.as_ref().expect("data")["value"].clone();
    let cms = site.config_maps().await;
    assert_eq!((value(&cms["cm-0"]), value(&cms["cm-1"])), ("one".into(), "one".into()), "corrected");
    assert_eq!(value(&api.get("cm-ignored").await.expect("still there")), "edited by hand", "left alone");
    let kept = serde_json::to_value(site.kept_report().await.report.drift).expect("JSON");
    assert_eq!(kept["profiles"], json!([{"name": part, "found": 2, "corrected": 2}]), "{kept}");

    // On the management side: the ClusterConfiguration's drift per profile, and the
    // corrected objects' new time in what `show addons` prints.
    ingest();
    let cc = get(&["clusterconfiguration", "-n", &ns, &format!("sveltos--{name}")]);
    let drift: Value = serde_json::from_str(cc["metadata"]["annotations"]["airlock.dev/drift"].as_str().expect("drift annotation"))
        .expect("drift is JSON");
    let entry = &drift["profiles"][format!("ClusterProfile/{web}")];
    println!(
        "PROFILE | FOUND | CORRECTED | LAST DRIFT | OBJECTS\nClusterProfile/{web} | {} | {} | {} | {}",
        entry["found"], entry["corrected"], entry["lastDriftTime"], entry["objects"]
    );
    assert_eq!((entry["found"].as_u64(), entry["corrected"].as_u64()), (Some(2), Some(2)), "{drift}");
    assert_eq!(entry["objects"], json!([format!("ConfigMap {app}/cm-0"), format!("ConfigMap {app}/cm-1")]), "{drift}");
    let rows = addons_rows(&ns);
    assert_eq!(time_of(&rows, "cm-0"), text(&entry["lastDriftTime"]), "re-applied by the correction");
    assert_eq!(time_of(&rows, "cm-ignored"), applied_at, "not re-applied");

    // Ingesting the same report again counts nothing twice.
    ingest();
    let again = get(&["clusterconfiguration", "-n", &ns, &format!("sveltos--{name}")]);
    assert_eq!(again["metadata"]["annotations"]["airlock.dev/drift"], cc["metadata"]["annotations"]["airlock.dev/drift"]);
    kubectl_ok(MANAGEMENT, &["delete", "sveltoscluster", "-n", &ns, &name, "--wait=false"], b"");
    kubectl_ok(
        MANAGEMENT,
        &["delete", "clusterconfiguration", "-n", &ns, &format!("sveltos--{name}"), "--ignore-not-found", "--wait=false"],
        b"",
    );
}
