//! The Classifier example of Sveltos's documentation (`testdata/sveltos-docs/classifier/`),
//! end to end on the real API servers, with what Sveltos does beside it (`expected.yaml`):
//! `airlock-publisher publish` reads the Classifiers from the management apiserver and
//! carries them in the cluster's bundle; `airlock-puller sync` evaluates them on the
//! managed apiserver and signs the result into its report; `airlock-publisher ingest`
//! decides the matches, writes the ClassifierReports and labels the SveltosCluster; the
//! next publish brings the profile that selects on the label, and the puller applies it.
//! A Service labelled `sveltos=fv` is what classifies the cluster.

use std::collections::BTreeMap;

use airlock_e2e::publisher::reports::register_reporting;
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
