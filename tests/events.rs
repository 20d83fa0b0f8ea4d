//! The event-driven example of Sveltos's documentation (`testdata/sveltos-docs/events/`),
//! end to end on the real API servers, with what Sveltos does beside it (`expected.yaml`):
//! `airlock-publisher publish` carries the EventSource the EventTrigger names in the bundle
//! of the cluster it watches; `airlock-puller sync` evaluates it and signs the matching
//! Services into its report; `airlock-publisher ingest` writes the EventReport; the next
//! publish instantiates the trigger's NetworkPolicy for the Service, and the puller
//! applies it. Both ways back: the report pushed to the store and ingested from there,
//! and the report carried as an `export-reports` file. Removing the Service withdraws the
//! NetworkPolicy after the next round.

use airlock_bundle::statement::EvaluationKind;
use airlock_e2e::publisher::reports::register_reporting;
use airlock_e2e::publisher::{Keys, install_crds, install_status_crds, kubectl_ok, run};
use airlock_e2e::puller::Site;
use airlock_e2e::{assert_exit, create_namespace, puller_bin, root};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";

fn example(file: &str) -> String {
    let path = root().join("testdata/sveltos-docs/events").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The cluster's EventReport as `expected.yaml` writes it, or null when there is none.
fn event_report(ns: &str, name: &str) -> Value {
    let report = format!("sveltos--docs-load-balancer-service--{name}");
    let listed = kubectl_ok(MANAGEMENT, &["get", "eventreports.lib.projectsveltos.io", "-n", ns, "-o", "json"], b"");
    let listed: Value = serde_json::from_str(&listed).expect("kubectl prints JSON");
    let Some(found) = listed["items"].as_array().expect("items").iter().find(|r| r["metadata"]["name"] == report.as_str()).cloned() else {
        return Value::Null;
    };
    let spec = &found["spec"];
    let matching: Vec<Value> = spec["matchingResources"]
        .as_array()
        .expect("matchingResources")
        .iter()
        .map(|r| json!({"apiVersion": r["apiVersion"], "kind": r["kind"], "namespace": r["namespace"], "name": r["name"]}))
        .collect();
    assert_eq!(spec["clusterNamespace"], ns, "{found}");
    assert!(spec["resources"].as_str().is_some_and(|r| !r.is_empty()), "the Service is collected: {found}");
    json!({
        "name": found["metadata"]["name"],
        "labels": found["metadata"]["labels"],
        "spec": {"eventSourceName": spec["eventSourceName"], "clusterName": spec["clusterName"],
                 "clusterType": spec["clusterType"], "matchingResources": matching},
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_event_trigger_deploys_a_network_policy_per_load_balancer() {
    let _alone = airlock_e2e::locks::shared_evaluations().await;
    let _crds = install_crds();
    install_status_crds();
    let site = Site::new("events").await;
    let (ns, name) = (site.cluster.namespace().to_string(), site.cluster.name().to_string());
    let keys = Keys::new("events");
    std::fs::copy(&keys.keyring_path, site.dir.path().join("keyring.json")).expect("the publisher's keyring for the puller");
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let (key_file, reports) = register_reporting(&site.cluster, &keys.keyring_path, site.dir.path());
    kubectl_ok(MANAGEMENT, &["label", "sveltoscluster", "-n", &ns, &name, "docs-events=fv", "--overwrite"], b"");
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], b"apiVersion: v1\nkind: Namespace\nmetadata: {name: docs-mgmt}\n");
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], example("management.yaml").as_bytes());
    let expected = example("expected.yaml").replace("CLUSTER", &name).replace("APP", &site.app_ns);
    let expected: Value = serde_saphyr::from_str(&expected).expect("expected.yaml is YAML");
    let (without, with) = (&expected["without-service"], &expected["with-service"]);

    let store = format!("oci-layout:{}", site.layout("store").display());
    let cluster = site.cluster.to_string();
    let publish = || {
        let out = run(&["publish", "--kubeconfig", &mgmt, "--cluster", &cluster, "--to", &store, "--key", &keys.key, "--no-cache"]);
        assert!(out.status.success(), "publish: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    };
    let key = key_file.to_str().expect("UTF-8 path");
    let dir = reports.to_str().expect("UTF-8 path");
    let ingest = |from: &str| {
        let out = run(&["ingest", "--from", from, "--kubeconfig", &mgmt]);
        assert_eq!(out.status.code(), Some(0), "ingest: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    };
    // Online: the puller pushes its report to the store, ingest reads it there.
    let online = || async {
        assert_exit(&site.run("sync", "store", &["--push-reports", "--report-key", key]).await, 0);
        ingest(&store);
    };
    // Carried: the report written beside the puller, exported to a file, ingested from it.
    let carried = || async {
        assert_exit(&site.run("sync", "store", &["--report-to", dir, "--report-key", key]).await, 0);
        let file = site.dir.path().join("reports.json");
        let out = std::process::Command::new(puller_bin())
            .args(["export-reports", "--from", dir, "--to", file.to_str().expect("UTF-8 path")])
            .output()
            .expect("airlock-puller runs");
        assert!(out.status.success(), "export-reports: {}", String::from_utf8_lossy(&out.stderr));
        ingest(file.to_str().expect("UTF-8 path"));
    };
    let applied = || async {
        publish();
        let bundle = airlock_e2e::publisher::try_read_back(&store, &site.cluster, &keys.keyring).await.expect("a bundle");
        assert_exit(&site.run("sync", "store", &[]).await, 0);
        bundle
    };
    let policies = Api::<NetworkPolicy>::namespaced(site.client.clone(), &site.app_ns);
    let services = Api::<Service>::namespaced(site.client.clone(), &site.app_ns);
    let front: Service = serde_json::from_value(json!({
        "metadata": {"name": "front"},
        "spec": {"type": "LoadBalancer", "selector": {"app": "front"}, "ports": [{"port": 80}]},
    }))
    .expect("a Service");
    let policy_of = |p: NetworkPolicy| {
        let spec = serde_json::to_value(p.spec).expect("a spec");
        json!({"name": p.metadata.name, "podSelector": spec["podSelector"], "ingress": spec["ingress"]})
    };

    // No Service yet: the EventSource is carried, nothing matches, no add-on.
    let bundle = applied().await;
    let evaluations = &bundle.predicate().settings.evaluations;
    let sources: Vec<&str> = evaluations.iter().filter(|e| e.kind == EvaluationKind::EventSource).map(|e| e.name.as_str()).collect();
    assert_eq!(sources, ["docs-load-balancer-service"], "the EventSource the trigger names, and no other");
    assert_eq!(Value::from(bundle.predicate().profiles.len()), without["parts"]);
    create_namespace(&site.client, &site.app_ns).await;
    online().await;
    assert_eq!(event_report(&ns, &name), without["eventReport"]);

    // Each way back, the Service appears, and after one round its NetworkPolicy runs on
    // the cluster; then it goes, and the next round withdraws the NetworkPolicy.
    for (way, carry) in [("online", false), ("carried", true)] {
        for present in [true, false] {
            if present {
                services.create(&PostParams::default(), &front).await.expect("created");
            } else {
                services.delete("front", &DeleteParams::default()).await.expect("deleted");
            }
            if carry {
                carried().await
            } else {
                online().await
            }
            let expected = if present { with } else { without };
            assert_eq!(event_report(&ns, &name), expected["eventReport"], "{way}, present {present}");
            let bundle = applied().await;
            assert_eq!(Value::from(bundle.predicate().profiles.len()), expected["parts"], "{way}, present {present}");
            let policy = policies.get_opt("front-front").await.expect("a read");
            assert_eq!(policy.map(policy_of), expected.get("networkPolicy").cloned(), "{way}, present {present}");
        }
    }

    kubectl_ok(MANAGEMENT, &["delete", "eventtriggers.lib.projectsveltos.io", "docs-service-network-policy", "--ignore-not-found"], b"");
    kubectl_ok(MANAGEMENT, &["delete", "eventsources.lib.projectsveltos.io", "docs-load-balancer-service", "--ignore-not-found"], b"");
    kubectl_ok(MANAGEMENT, &["delete", "configmap", "-n", "docs-mgmt", "docs-network-policy", "--ignore-not-found"], b"");
    kubectl_ok(MANAGEMENT, &["delete", "sveltoscluster", "-n", &ns, &name, "--wait=false"], b"");
    let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(site.client.clone()).delete(&site.app_ns, &DeleteParams::default()).await;
}
