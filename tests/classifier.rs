//! The Classifier example of Sveltos's documentation (`testdata/sveltos-docs/classifier/`),
//! end to end on the real API servers, with what Sveltos does beside it (`expected.yaml`):
//! `airlock-publisher publish` reads the Classifiers from the management apiserver and
//! carries them in the cluster's bundle; `airlock-puller sync` evaluates them on the
//! managed apiserver and signs the result into its report; `airlock-publisher ingest`
//! decides the matches, writes the ClassifierReports and labels the SveltosCluster; the
//! next publish brings the profile that selects on the label, and the puller applies it.
//! A Service labelled `sveltos=fv` is what classifies the cluster. The same round trip
//! through a management set kept as files (`register`, `ingest --to-dir`, `publish
//! --from-dir`) needs no service.

use std::collections::BTreeMap;

use airlock_e2e::publisher::reports::{register_reporting, report, report_key_of, sign_report};
use airlock_e2e::publisher::{Keys, install_crds, install_status_crds, kubectl_ok, management_get, run, sveltos_doc};
use airlock_e2e::puller::Site;
use airlock_e2e::{assert_exit, create_namespace};
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";

fn example(file: &str) -> String {
    sveltos_doc("classifier", file)
}

fn get(args: &[&str]) -> Value {
    management_get(args)
}

/// The labels of the SveltosCluster and what its ClassifierReports say, as `expected.yaml`
/// writes them.
fn classified(ns: &str, name: &str, classifiers: &[&str]) -> Value {
    let cluster = get(&["sveltoscluster", "-n", ns, name]);
    let labels: BTreeMap<String, Value> = ["k8s", "sveltos-service"]
        .iter()
        .filter_map(|k| cluster["metadata"]["labels"].get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    let mut reports = serde_json::Map::new();
    for classifier in classifiers {
        let report = get(&["classifierreports.lib.projectsveltos.io", "-n", ns, &format!("sveltos--{classifier}--{name}")]);
        assert_eq!(report["metadata"]["labels"]["classifier.projectsveltos.io/cluster-name"], name, "{report}");
        assert_eq!(report["metadata"]["labels"]["projectsveltos.io/classifier-name"], *classifier, "{report}");
        let managed = report["status"]["managedLabels"].as_array().cloned().unwrap_or_default();
        reports.insert(classifier.to_string(), json!({"match": report["spec"]["match"], "managedLabels": managed}));
    }
    json!({"labels": labels, "reports": reports})
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_classifier_labels_a_cluster_and_its_profile_follows() {
    let _alone = airlock_e2e::locks::shared_evaluations().await;
    let _crds = install_crds();
    install_status_crds();
    let site = Site::new("classify").await;
    let (ns, name) = (site.cluster.namespace().to_string(), site.cluster.name().to_string());
    let keys = Keys::new("classify");
    std::fs::copy(&keys.keyring_path, site.dir.path().join("keyring.json")).expect("the publisher's keyring for the puller");
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let (key_file, reports) = register_reporting(&site.cluster, &keys.keyring_path, site.dir.path());
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], b"apiVersion: v1\nkind: Namespace\nmetadata: {name: docs-mgmt}\n");
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], example("management.yaml").as_bytes());
    let expected: Value = serde_saphyr::from_str(&example("expected.yaml")).expect("expected.yaml is YAML");
    let classifiers = ["sveltos-service", "k8s-1-20"];

    let store = format!("oci-layout:{}", site.layout("store").display());
    let cluster = site.cluster.to_string();
    let publish = || {
        let out = run(&["publish", "--kubeconfig", &mgmt, "--cluster", &cluster, "--to", &store, "--key", &keys.key, "--no-cache"]);
        assert!(out.status.success(), "publish: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    };
    let report_args = ["--report-to", reports.to_str().expect("UTF-8 path"), "--report-key", key_file.to_str().expect("UTF-8 path")];
    let sync = || async {
        let done = site.run("sync", "store", &report_args).await;
        assert_exit(&done, 0);
    };
    let ingest = || {
        let out = run(&["ingest", "--from", reports.to_str().expect("UTF-8 path"), "--kubeconfig", &mgmt]);
        assert_eq!(out.status.code(), Some(0), "ingest: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    };
    let parts = |bundle: &airlock_bundle::VerifiedBundle| -> Vec<Value> {
        bundle.predicate().profiles.iter().map(|p| Value::String(p.name.clone())).collect()
    };

    // Nothing runs there yet: only the version classifier matches.
    publish();
    let bundle = airlock_e2e::publisher::try_read_back(&store, &site.cluster, &keys.keyring).await.expect("a bundle");
    let carried: Vec<&str> = bundle.predicate().settings.evaluations.iter().map(|e| e.name.as_str()).collect();
    assert!(carried.contains(&"sveltos-service") && carried.contains(&"k8s-1-20"), "{carried:?}");
    assert_eq!(Value::Array(parts(&bundle)), expected["without-service"]["parts"]);
    sync().await;
    ingest();
    let without = &expected["without-service"];
    assert_eq!(classified(&ns, &name, &classifiers), json!({"labels": without["labels"], "reports": without["reports"]}));

    // A Service labelled sveltos=fv: the next run's report classifies the cluster.
    create_namespace(&site.client, &site.app_ns).await;
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "fv", "labels": {"sveltos": "fv"}},
        "spec": {"ports": [{"port": 80}]},
    }))
    .expect("a Service");
    Api::<Service>::namespaced(site.client.clone(), &site.app_ns).create(&PostParams::default(), &service).await.expect("created");
    sync().await;
    ingest();
    let with = &expected["with-service"];
    assert_eq!(classified(&ns, &name, &classifiers), json!({"labels": with["labels"], "reports": with["reports"]}));

    // The profile follows the label at the next publish, and the puller applies it.
    publish();
    let bundle = airlock_e2e::publisher::try_read_back(&store, &site.cluster, &keys.keyring).await.expect("a bundle");
    assert_eq!(Value::Array(parts(&bundle)), with["parts"]);
    sync().await;
    for object in with["objects"].as_array().expect("objects") {
        let (namespace, object_name) = (object["namespace"].as_str().expect("namespace"), object["name"].as_str().expect("name"));
        Api::<ConfigMap>::namespaced(site.client.clone(), namespace).get(object_name).await.expect("deployed by the profile");
    }

    // The Service gone, the cluster is no longer a match: the label it was given goes.
    Api::<Service>::namespaced(site.client.clone(), &site.app_ns).delete("fv", &DeleteParams::default()).await.expect("deleted");
    sync().await;
    ingest();
    assert_eq!(classified(&ns, &name, &classifiers)["labels"], without["labels"]);

    for classifier in classifiers {
        kubectl_ok(MANAGEMENT, &["delete", "classifiers.lib.projectsveltos.io", classifier, "--ignore-not-found", "--wait=false"], b"");
    }
    kubectl_ok(MANAGEMENT, &["delete", "clusterprofile", "docs-classified", "--ignore-not-found", "--wait=false"], b"");
    kubectl_ok(MANAGEMENT, &["delete", "sveltoscluster", "-n", &ns, &name, "--wait=false"], b"");
    for classifier in classifiers {
        let report = format!("sveltos--{classifier}--{name}");
        kubectl_ok(
            MANAGEMENT,
            &["delete", "classifierreports.lib.projectsveltos.io", "-n", &ns, &report, "--ignore-not-found", "--wait=false"],
            b"",
        );
    }
    kubectl_ok(MANAGEMENT, &["delete", "configmap", "-n", "docs-mgmt", "docs-classified", "--ignore-not-found", "--wait=false"], b"");
    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(site.client.clone());
    for namespace in ["docs-classified", site.app_ns.as_str()] {
        let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
    }
}

/// The same Classifiers in a management set kept as files: `register cluster --to-dir`
/// writes the SveltosCluster, a report whose `sveltos-service` result matched is ingested
/// with `--to-dir`, and the next `publish --from-dir` brings the profile selecting on the
/// label. No service is involved: the store is an OCI layout, the report signed here.
#[tokio::test(flavor = "multi_thread")]
async fn a_report_ingested_to_a_directory_labels_its_cluster_file_for_the_next_publish() {
    let keys = Keys::new("classify-dir");
    let work = tempfile::tempdir().expect("tempdir");
    let path = |p: &str| work.path().join(p).to_str().expect("UTF-8 path").to_string();
    let (management, clusters) = (path("management"), path("management/clusters"));
    std::fs::create_dir_all(&clusters).expect("management/clusters");
    std::fs::write(work.path().join("management/classifier.yaml"), example("management.yaml")).expect("the documented example");
    let cluster: airlock_bundle::ClusterId = "docs-dir/edge".parse().expect("a cluster id");
    let register =
        ["register", "cluster", "--namespace", "docs-dir", "--cluster", "edge", "--pullmode", "--source", "oci+http://127.0.0.1:1/x"];
    let out = run(&[&register[..], &["--keyring", &keys.keyring_path, "--to-dir", &clusters]].concat());
    assert!(out.status.success(), "register --to-dir: {}", String::from_utf8_lossy(&out.stderr));
    let report_key = report_key_of(&out.stdout);

    let store = format!("oci-layout:{}", path("store"));
    let publish = || async {
        let out = run(&["publish", "--from-dir", &management, "--to", &store, "--key", &keys.key, "--no-cache"]);
        assert!(out.status.success(), "publish: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        airlock_e2e::publisher::try_read_back(&store, &cluster, &keys.keyring).await.expect("a bundle")
    };
    let bundle = publish().await;
    assert!(bundle.predicate().profiles.iter().all(|p| p.name != "docs-classified"), "not classified yet");
    let service = bundle.predicate().settings.evaluations.iter().find(|e| e.name == "sveltos-service").expect("carried");

    let mut signed = report(&cluster.to_string(), "2026-03-01T10:00:00Z", "applied", "v1.20.2", 1);
    let matched = airlock_bundle::report::Evaluated::of(service, Ok((true, String::new())));
    signed["evaluations"] = json!([matched]);
    std::fs::create_dir(work.path().join("reports")).expect("reports");
    std::fs::write(work.path().join("reports/report-edge.json"), sign_report(&signed, &report_key)).expect("report written");
    let out = run(&["ingest", "--from", &path("reports"), "--to-dir", &clusters, "--classifiers-from", &management]);
    assert_eq!(out.status.code(), Some(0), "ingest: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let file = std::fs::read_to_string(work.path().join("management/clusters/docs-dir.edge.sveltoscluster.yaml")).expect("cluster file");
    let object: Value = serde_saphyr::from_str(&file).expect("YAML");
    assert_eq!(object["metadata"]["labels"]["sveltos-service"], "present", "{file}");
    assert_eq!(object["metadata"]["labels"]["k8s"], "v1-20", "{file}");
    let kept = work.path().join("management/clusters/docs-dir.sveltos--sveltos-service--edge.classifierreport.yaml");
    let kept: Value = serde_saphyr::from_str(&std::fs::read_to_string(kept).expect("report kept")).expect("YAML");
    assert_eq!(kept["status"]["managedLabels"], json!(["sveltos-service"]));

    let bundle = publish().await;
    assert!(bundle.predicate().profiles.iter().any(|p| p.name.contains("docs-classified")), "{:?}", bundle.predicate().profiles);
}
