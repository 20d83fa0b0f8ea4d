//! The HealthCheck example of Sveltos's documentation (`testdata/sveltos-docs/healthcheck/`),
//! end to end on the real API servers and the single node, with what Sveltos does beside
//! it (`expected.yaml`): `airlock-publisher publish` carries the HealthCheck that the
//! ClusterHealthCheck selecting the cluster names; `airlock-puller sync` judges the node's
//! Deployment with its script and signs the statuses into its report; `airlock-publisher
//! ingest` writes the HealthCheckReport, judges the liveness check and notifies: a Teams
//! message to a receiver this test runs on 127.0.0.1 and an Event, exactly once when the
//! Deployment cannot run and once more when it recovers, over several report rounds, each
//! ingest a new process that knows what was sent only from the ClusterHealthCheck's status.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use airlock_e2e::publisher::reports::register_reporting;
use airlock_e2e::publisher::{Keys, install_crds, install_status_crds, kubectl_ok, management_get, run, sveltos_doc};
use airlock_e2e::puller::Site;
use airlock_e2e::{assert_exit, create_namespace};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";

fn example(file: &str) -> String {
    sveltos_doc("healthcheck", file)
}

fn get(args: &[&str]) -> Value {
    management_get(args)
}

/// A webhook receiver on 127.0.0.1: every body POSTed to it, answered 200.
fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
    let url = format!("http://{}/webhookb2/SECRET-PATH", listener.local_addr().expect("bound"));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("a second handle"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_ok() {
                kept.lock().expect("not poisoned").push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            }
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (url, bodies)
}

/// The Deployment the HealthCheck judges: one busybox, whose image is `image`.
fn deployment(image: &str, policy: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "docs-health", "labels": {"sveltos-docs": "healthcheck"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "docs-health"}},
            "template": {
                "metadata": {"labels": {"app": "docs-health"}},
                "spec": {
                    "hostNetwork": true, "dnsPolicy": "None", "dnsConfig": {"nameservers": ["127.0.0.1"]},
                    "automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "main", "image": image, "imagePullPolicy": policy, "command": ["sleep", "3600"]}],
                },
            },
        },
    }))
    .expect("a Deployment")
}

/// Waits until the Deployment's status satisfies `done`.
async fn wait_for(api: &Api<Deployment>, what: &str, done: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status = serde_json::to_value(api.get("docs-health").await.expect("readable").status).expect("JSON");
        if done(&status) {
            return;
        }
        assert!(Instant::now() < deadline, "the Deployment never became {what}: {status}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The types of the Events on the ClusterHealthCheck `production`, but those of `before`
/// (names of Events there before the test).
fn events(before: &[Value]) -> Vec<Value> {
    let all = get(&["events", "-n", "default", "--field-selector", "involvedObject.name=production,reason=ClusterHealthCheck"]);
    let all = all["items"].as_array().cloned().unwrap_or_default();
    all.iter().filter(|e| !before.contains(&e["metadata"]["name"])).map(|e| e["type"].clone()).collect()
}

/// What the management cluster holds after a round, as `expected.yaml` writes it.
fn observed(ns: &str, name: &str) -> Value {
    let report = get(&["healthcheckreports.lib.projectsveltos.io", "-n", ns, &format!("sveltos--deployment-replicas--{name}")]);
    let statuses: Vec<Value> = report["spec"]["resourceStatuses"]
        .as_array()
        .expect("statuses")
        .iter()
        .map(|s| {
            let collected: Value = serde_json::from_slice(&STANDARD.decode(s["resource"].as_str().expect("collected")).expect("base64"))
                .expect("the collected Deployment");
            assert_eq!(collected["metadata"]["name"], "docs-health", "collectResources carries the object");
            let r = &s["objectRef"];
            let mut entry = json!({"objectRef": {"apiVersion": r["apiVersion"], "kind": r["kind"], "name": r["name"]}, "healthStatus": s["healthStatus"]});
            if let Some(message) = s.get("message") {
                entry["message"] = message.clone();
            }
            entry
        })
        .collect();
    let check = get(&["clusterhealthchecks.lib.projectsveltos.io", "production"]);
    let entries = check["status"]["clusterCondition"].as_array().expect("conditions").clone();
    let entry = entries.iter().find(|e| e["clusterInfo"]["cluster"]["name"] == name).expect("the cluster's entry").clone();
    let c = &entry["conditions"][0];
    let mut condition = json!({"type": c["type"], "name": c["name"], "status": c["status"]});
    if let Some(severity) = c.get("severity") {
        condition["severity"] = severity.clone();
    }
    json!({"resourceStatuses": statuses, "condition": condition, "notificationSummaries": entry["notificationSummaries"]})
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_health_check_notifies_once_per_transition() {
    let _crds = install_crds();
    install_status_crds();
    let site = Site::on("health", airlock_e2e::service_env("AIRLOCK_KUBECONFIG_NODE")).await;
    let (ns, name) = (site.cluster.namespace().to_string(), site.cluster.name().to_string());
    let keys = Keys::new("health");
    std::fs::copy(&keys.keyring_path, site.dir.path().join("keyring.json")).expect("the publisher's keyring for the puller");
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let (key_file, reports) = register_reporting(&site.cluster, &keys.keyring_path, site.dir.path());
    kubectl_ok(MANAGEMENT, &["label", "sveltoscluster", "-n", &ns, &name, "sveltos-docs=healthcheck"], b"");
    let (url, received) = receiver();
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "teams", "namespace": "default"},
        "type": "addons.projectsveltos.io/cluster-profile", "stringData": {"TEAMS_WEBHOOK_URL": url}});
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], secret.to_string().as_bytes());
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], example("management.yaml").as_bytes());
    let expected: Value = serde_saphyr::from_str(&example("expected.yaml")).expect("expected.yaml is YAML");
    let at_start = get(&["events", "-n", "default", "--field-selector", "involvedObject.name=production,reason=ClusterHealthCheck"]);
    let at_start: Vec<Value> = at_start["items"].as_array().into_iter().flatten().map(|e| e["metadata"]["name"].clone()).collect();

    let store = format!("oci-layout:{}", site.layout("store").display());
    let cluster = site.cluster.to_string();
    let out = run(&["publish", "--kubeconfig", &mgmt, "--cluster", &cluster, "--to", &store, "--key", &keys.key, "--no-cache"]);
    assert!(out.status.success(), "publish: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let bundle = airlock_e2e::publisher::try_read_back(&store, &site.cluster, &keys.keyring).await.expect("a bundle");
    let carried: Vec<&str> = bundle.predicate().settings.evaluations.iter().map(|e| e.name.as_str()).collect();
    assert!(carried.contains(&"deployment-replicas"), "{carried:?}");

    let report_args = ["--report-to", reports.to_str().expect("UTF-8 path"), "--report-key", key_file.to_str().expect("UTF-8 path")];
    // One round: the puller reports, a new ingest process reads the report.
    let round = || async {
        let done = site.run("sync", "store", &report_args).await;
        assert_exit(&done, 0);
        let out = run(&["ingest", "--from", reports.to_str().expect("UTF-8 path"), "--kubeconfig", &mgmt]);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "ingest: {stdout}{stderr}");
        assert!(!stderr.contains("SECRET-PATH"), "the webhook URL is never logged whole: {stderr}");
        // Reports are kept whole in the directory: only the newest counts, older ones are
        // superseded, and a second file per round is what several rounds are.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    };

    // The image cannot be pulled: the Deployment is degraded.
    create_namespace(&site.client, &site.app_ns).await;
    let deployments: Api<Deployment> = Api::namespaced(site.client.clone(), &site.app_ns);
    deployments.create(&PostParams::default(), &deployment("127.0.0.1:1/none:absent", "Always")).await.expect("created");
    wait_for(&deployments, "unavailable", |s| s["unavailableReplicas"].as_i64() == Some(1)).await;
    let degraded = &expected["degraded"];
    for _ in 0..3 {
        round().await;
        let summary = observed(&ns, &name);
        assert_eq!(summary["resourceStatuses"], degraded["resourceStatuses"]);
        assert_eq!(summary["condition"], degraded["condition"]);
        assert_eq!(summary["notificationSummaries"], degraded["notificationSummaries"]);
        assert_eq!(events(&at_start), [degraded["event"].clone()], "one Event per transition");
        let sent = received.lock().expect("not poisoned").clone();
        assert_eq!(Value::from(sent.len()), degraded["sent"], "one message per transition: {sent:?}");
        assert_eq!(sent[0]["attachments"][0]["content"]["body"][0]["text"], degraded["title"]);
    }

    // The image fixed: the Deployment runs, and recovers.
    let image = airlock_e2e::service_env("AIRLOCK_NODE_BUSYBOX");
    let fixed = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image, "imagePullPolicy": "Never"}]}}}});
    deployments.patch("docs-health", &PatchParams::default(), &Patch::Strategic(&fixed)).await.expect("patched");
    wait_for(&deployments, "available", |s| s["availableReplicas"].as_i64() == Some(1) && s["unavailableReplicas"].is_null()).await;
    let healthy = &expected["healthy"];
    for _ in 0..2 {
        round().await;
        let summary = observed(&ns, &name);
        assert_eq!(summary["resourceStatuses"], healthy["resourceStatuses"]);
        assert_eq!(summary["condition"], healthy["condition"]);
        assert_eq!(summary["notificationSummaries"], healthy["notificationSummaries"]);
        let mut seen = events(&at_start);
        seen.sort_by_key(|t| t.as_str() != degraded["event"].as_str());
        assert_eq!(seen, [degraded["event"].clone(), healthy["event"].clone()], "one more Event on recovery");
        let sent = received.lock().expect("not poisoned").clone();
        assert_eq!(Value::from(sent.len()), healthy["sent"], "one more message on recovery: {sent:?}");
        assert_eq!(sent[1]["attachments"][0]["content"]["body"][0]["text"], healthy["title"]);
    }
    let report = get(&["healthcheckreports.lib.projectsveltos.io", "-n", &ns, &format!("sveltos--deployment-replicas--{name}")]);
    let labels = serde_json::to_string(&expected["report"]["labels"]).expect("JSON").replace("CLUSTER", &name);
    assert_eq!(report["metadata"]["labels"], serde_json::from_str::<Value>(&labels).expect("JSON"));

    for (kind, object) in
        [("clusterhealthchecks.lib.projectsveltos.io", "production"), ("healthchecks.lib.projectsveltos.io", "deployment-replicas")]
    {
        kubectl_ok(MANAGEMENT, &["delete", kind, object, "--ignore-not-found", "--wait=false"], b"");
    }
    kubectl_ok(MANAGEMENT, &["delete", "secret", "-n", "default", "teams", "--ignore-not-found", "--wait=false"], b"");
    kubectl_ok(MANAGEMENT, &["delete", "sveltoscluster", "-n", &ns, &name, "--wait=false"], b"");
    let report = format!("sveltos--deployment-replicas--{name}");
    kubectl_ok(
        MANAGEMENT,
        &["delete", "healthcheckreports.lib.projectsveltos.io", "-n", &ns, &report, "--ignore-not-found", "--wait=false"],
        b"",
    );
    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(site.client.clone());
    let _ = namespaces.delete(&site.app_ns, &DeleteParams::default()).await;
}
