//! The Kubernetes 1.20 test apiservers of `hack/kube.sh` against what Airlock puts in them:
//! the Sveltos CRDs of `hack/crds/` and the management set of `examples/` (with kubectl, as
//! the README does), and kube-rs 5 doing server-side apply of a CRD, an instance and its
//! status (as the puller and the publisher do).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use airlock_cli::{KubeArgs, install_crypto_provider};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::json;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// `kubectl --kubeconfig KUBECONFIG args...`; its stdout, or a panic with its stderr.
fn kubectl(kubeconfig: &str, args: &[&str]) -> String {
    let out = Command::new(airlock_e2e::service_env("AIRLOCK_KUBECTL"))
        .arg("--kubeconfig")
        .arg(airlock_e2e::service_env(kubeconfig))
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("kubectl prints UTF-8")
}

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";

#[test]
fn crds_and_examples_apply_to_the_management_apiserver() {
    let _crds = airlock_e2e::locks::airlock_crds();
    let (crds, examples) = (repo("hack/crds"), repo("examples"));
    let (crds, examples) = (crds.to_str().unwrap(), examples.to_str().unwrap());
    kubectl(MANAGEMENT, &["apply", "--server-side", "-f", crds]);
    kubectl(MANAGEMENT, &["wait", "--for", "condition=established", "--timeout=60s", "-f", crds]);
    kubectl(MANAGEMENT, &["apply", "--server-side", "-f", examples]);

    let table = kubectl(MANAGEMENT, &["get", "sveltoscluster", "-A"]);
    let header: Vec<&str> = table.lines().next().expect("a header line").split_whitespace().collect();
    assert_eq!(header, ["NAMESPACE", "NAME", "READY", "VERSION", "AGE"], "{table}");
    for cluster in ["eu-prod-1", "eu-staging-1", "us-prod-1", "us-staging-1", "us-prod-legacy"] {
        assert!(table.lines().any(|l| l.split_whitespace().take(2).eq(["fleet", cluster])), "{cluster} missing:\n{table}");
    }
    let profiles = kubectl(MANAGEMENT, &["get", "clusterprofiles", "-o", "name"]);
    for profile in ["base", "eu-prod-cluster-info", "eu-network-policy", "monitoring", "staging-debug"] {
        assert!(profiles.contains(&format!("clusterprofile.config.projectsveltos.io/{profile}\n")), "{profiles}");
    }
    let profile = kubectl(MANAGEMENT, &["get", "profile", "-n", "fleet", "web-frontend", "-o", "jsonpath={.spec.clusterRefs[*].name}"]);
    assert_eq!(profile, "eu-prod-1 us-prod-1");
    // The structural schemas let the apiserver fill in Sveltos's defaults.
    let defaults = kubectl(
        MANAGEMENT,
        &[
            "get",
            "clusterprofile",
            "eu-network-policy",
            "-o",
            "jsonpath={.spec.syncMode} {.spec.tier} {.spec.stopMatchingBehavior} {.spec.policyRefs[0].deploymentType}",
        ],
    );
    assert_eq!(defaults, "Continuous 100 WithdrawPolicies Remote");
    let watch = kubectl(
        MANAGEMENT,
        &[
            "get",
            "sveltoscluster",
            "-n",
            "fleet",
            "eu-prod-1",
            "-o",
            r"jsonpath={.metadata.annotations.agent\.projectsveltos\.io/watch-namespaces}",
        ],
    );
    assert_eq!(watch, "web,monitoring");
    let secret_type = kubectl(MANAGEMENT, &["get", "secret", "-n", "fleet", "eu-network-policy", "-o", "jsonpath={.type}"]);
    assert_eq!(secret_type, "addons.projectsveltos.io/cluster-profile");
}

/// Waits until the apiserver reports the CRD Established, as `kubectl wait` does.
async fn wait_established(crds: &Api<CustomResourceDefinition>, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let crd = crds.get(name).await.expect("CRD readable");
        let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
        if conditions.iter().any(|c| c.type_ == "Established" && c.status == "True") {
            return;
        }
        assert!(Instant::now() < deadline, "{name} not Established after 60s: {conditions:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn kube_client_applies_a_crd_an_instance_and_its_status_on_the_managed_apiserver() {
    install_crypto_provider();
    let kube = KubeArgs { kubeconfig: Some(airlock_e2e::service_env(MANAGED).into()), context: None };
    let client = kube.client().await.expect("client for the managed apiserver");
    let apply = PatchParams::apply("airlock-e2e").force();

    let text = std::fs::read_to_string(repo("hack/crds/sveltoscluster.yaml")).expect("CRD file");
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&text).expect("the CRD file is a CustomResourceDefinition");
    let name = crd.metadata.name.clone().expect("CRD has a name");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(&name, &apply, &Patch::Apply(&crd)).await.expect("server-side apply of the CRD");
    wait_established(&crds, &name).await;

    let ns = format!("airlock-smoke-{}", std::process::id());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    namespaces.patch(&ns, &apply, &Patch::Apply(&namespace)).await.expect("apply namespace");

    let gvk = GroupVersionKind::gvk("lib.projectsveltos.io", "v1beta1", "SveltosCluster");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "sveltosclusters");
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
    let object = json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "metadata": {"name": "edge-1", "labels": {"region": "eu"}},
        "spec": {"pullMode": true},
    });
    clusters.patch("edge-1", &apply, &Patch::Apply(&object)).await.expect("server-side apply of the instance");
    let status = json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
        "status": {"ready": true, "version": "v1.20.2"},
    });
    clusters.patch_status("edge-1", &apply, &Patch::Apply(&status)).await.expect("server-side apply of the status");

    let back = clusters.get("edge-1").await.expect("read back");
    assert_eq!(back.metadata.labels.unwrap_or_default().get("region").map(String::as_str), Some("eu"));
    assert_eq!(back.data["spec"], json!({"pullMode": true}));
    assert_eq!(back.data["status"], json!({"ready": true, "version": "v1.20.2"}));
    let table = kubectl(MANAGED, &["get", "sveltoscluster", "-n", &ns]);
    let row: Vec<&str> = table.lines().nth(1).expect("one row").split_whitespace().collect();
    assert_eq!(row[..3], ["edge-1", "true", "v1.20.2"], "{table}");

    namespaces.delete(&ns, &DeleteParams::default()).await.expect("delete the test namespace");
}
