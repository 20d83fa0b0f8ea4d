//! The single node of `hack/node.sh` running pods the way the registration's CronJob runs
//! the puller: `hostNetwork`, `dnsPolicy: None` with nameserver 127.0.0.1, the API server
//! reached in-cluster at the `kubernetes` Service's address (127.0.100.1:443) with the
//! mounted ServiceAccount token, the image pulled from the local registry over plain HTTP.
//!
//! A busybox Pod runs to completion and reads itself back from the API; a `batch/v1beta1`
//! CronJob fires and its Job's pod, locked down like the puller's, completes; and while a
//! pod pulls its image and calls the API server, every connect containerd, the kubelet and
//! their children make goes to 127.0.0.0/8 or a unix socket (`node/connects.rs` reads the
//! strace files). The puller's Job checks run here too (`node/job_check.rs`). A missing
//! node fails these tests, as every service does here.

mod connects;
mod job_check;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, LogParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use connects::Target;

/// The apiserver's address: the service range's first IP, which in-cluster clients get as
/// `KUBERNETES_SERVICE_HOST`.
const API: &str = "127.0.100.1:443";
/// The user the puller's image runs as.
const UID: i64 = 65532;

async fn client() -> kube::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let path = airlock_e2e::service_env("AIRLOCK_KUBECONFIG_NODE");
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("the node's kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("kubeconfig usable");
    kube::Client::try_from(config).expect("client for the node's apiserver")
}

/// A namespace of its own per test, named for it, once its default ServiceAccount has its
/// token: until then the API server refuses pods there.
async fn namespace(client: &kube::Client, test: &str) -> String {
    let name = format!("airlock-node-{test}-{}", std::process::id());
    airlock_e2e::create_namespace(client, &name).await;
    wait_for_token(client, &name).await;
    name
}

/// Waits until the default ServiceAccount of `name` has its token.
async fn wait_for_token(client: &kube::Client, name: &str) {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), name);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let account = accounts.get_opt("default").await.expect("ServiceAccounts readable");
        if account.is_some_and(|a| !a.secrets.unwrap_or_default().is_empty()) {
            return;
        }
        assert!(Instant::now() < deadline, "no token for the default ServiceAccount of {name} after 30s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn delete_namespace(client: &kube::Client, name: &str) {
    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone());
    namespaces.delete(name, &DeleteParams::default()).await.expect("test namespace deleted");
}

/// `$AIRLOCK_NODE_BUSYBOX_OCI` pushed to the local registry under a tag of this run, so
/// that a pod must pull it.
fn push_busybox(test: &str) -> String {
    let registry = airlock_e2e::service_env("AIRLOCK_REGISTRY");
    let image = format!("{registry}/airlock-e2e-node/busybox:{test}-{}", std::process::id());
    let out = Command::new("skopeo")
        .args(["copy", "--quiet", "--dest-tls-verify=false"])
        .arg(airlock_e2e::service_env("AIRLOCK_NODE_BUSYBOX_OCI"))
        .arg(format!("docker://{image}"))
        .output()
        .expect("skopeo runs");
    assert!(out.status.success(), "skopeo copy to {image}: {}", String::from_utf8_lossy(&out.stderr));
    image
}

/// The pod spec every pod on this node needs: host network, the resolver on loopback.
fn host_network(containers: Value, extra: Value) -> Value {
    let mut spec = json!({
        "hostNetwork": true,
        "dnsPolicy": "None",
        "dnsConfig": {"nameservers": ["127.0.0.1"]},
        "restartPolicy": "Never",
        "containers": containers,
    });
    spec.as_object_mut().expect("an object").extend(extra.as_object().expect("an object").clone());
    spec
}

/// A pod that asks the API server for itself, in-cluster: the address and port from the
/// environment the kubelet sets, the token and namespace from the mounted ServiceAccount.
/// busybox's TLS checks no certificate; the test's own client checks the same one at the
/// same address, as the puller does with the mounted `ca.crt`.
fn reads_itself(name: &str, image: &str, pull: &str) -> Pod {
    let script = r#"SA=/var/run/secrets/kubernetes.io/serviceaccount
echo "api at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
wget -q -O - --no-check-certificate --header "Authorization: Bearer $(cat $SA/token)" \
  "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/$(cat $SA/namespace)/pods/$POD_NAME""#;
    let container = json!({
        "name": "main", "image": image, "imagePullPolicy": pull,
        "command": ["sh", "-c", script],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    });
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": host_network(json!([container]), json!({})),
    }))
    .expect("a Pod")
}

/// Lets the namespace's default ServiceAccount read its pods.
async fn grant_pod_reading(client: &kube::Client, ns: &str) {
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }))
    .expect("a Role");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}],
    }))
    .expect("a RoleBinding");
    let pp = PostParams::default();
    Api::<Role>::namespaced(client.clone(), ns).create(&pp, &role).await.expect("Role created");
    Api::<RoleBinding>::namespaced(client.clone(), ns).create(&pp, &binding).await.expect("RoleBinding created");
}

/// Waits for a pod of `ns` that `pick` accepts to succeed; panics with its status and the
/// namespace's events when it fails or `timeout` passes.
async fn wait_succeeded(client: &kube::Client, ns: &str, timeout: Duration, pick: impl Fn(&Pod) -> bool) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + timeout;
    loop {
        let list = pods.list(&ListParams::default()).await.expect("pods listed");
        let pod = list.items.into_iter().find(|p| pick(p));
        let phase = pod.as_ref().and_then(|p| p.status.as_ref()?.phase.clone()).unwrap_or_default();
        if phase == "Succeeded" {
            return pod.expect("a pod has a phase");
        }
        if phase == "Failed" || Instant::now() > deadline {
            let events = Api::<Event>::namespaced(client.clone(), ns).list(&ListParams::default()).await.expect("events");
            let events: Vec<String> =
                events.items.iter().map(|e| format!("{:?} {:?}: {:?}", e.reason, e.involved_object.name, e.message)).collect();
            let status = pod.and_then(|p| p.status).map(|s| serde_json::to_string_pretty(&s).unwrap_or_default());
            panic!("no pod of {ns} succeeded within {timeout:?} (phase {phase:?})\nstatus: {status:#?}\nevents:\n{}", events.join("\n"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn logs(client: &kube::Client, ns: &str, pod: &str) -> String {
    Api::<Pod>::namespaced(client.clone(), ns).logs(pod, &LogParams::default()).await.expect("pod logs through the kubelet")
}

/// Runs `reads_itself` and checks that the pod got its own uid back from the API server.
async fn run_pod_reading_itself(client: &kube::Client, ns: &str, image: &str, pull: &str) {
    grant_pod_reading(client, ns).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let created = pods.create(&PostParams::default(), &reads_itself("reads-itself", image, pull)).await.expect("pod created");
    let uid = created.metadata.uid.expect("a uid");
    wait_succeeded(client, ns, Duration::from_secs(90), |p| p.metadata.uid.as_deref() == Some(uid.as_str())).await;
    let out = logs(client, ns, "reads-itself").await;
    assert!(out.starts_with(&format!("api at {API}\n")), "{out}");
    assert!(out.contains(&format!("\"uid\": \"{uid}\"")), "the pod did not read itself from the API:\n{out}");
}

#[tokio::test]
async fn a_host_network_busybox_pod_runs_to_completion_and_reads_the_api_in_cluster() {
    let client = client().await;
    let ns = namespace(&client, "pod").await;
    run_pod_reading_itself(&client, &ns, &airlock_e2e::service_env("AIRLOCK_NODE_BUSYBOX"), "Never").await;
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn a_v1beta1_cron_job_fires_and_its_job_pod_completes() {
    let client = client().await;
    let ns = namespace(&client, "cron").await;
    // Pulled by the name `register` gives the puller's image by default.
    let image = push_busybox("cron").replacen("127.0.0.1:", "localhost:", 1);
    let pp = PostParams::default();
    let config: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "config"}, "data": {"config.json": "{}"}})).unwrap();
    let key: Secret = serde_json::from_value(json!({"metadata": {"name": "key"}, "stringData": {"report.key": "k"}})).unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), &ns).create(&pp, &config).await.expect("ConfigMap created");
    Api::<Secret>::namespaced(client.clone(), &ns).create(&pp, &key).await.expect("Secret created");

    // The puller's pod as the registration writes it: non-root, read-only root, no
    // capabilities, RuntimeDefault seccomp, a projected config volume with the key
    // readable through fsGroup only, size-capped scratch space, resource limits.
    let script = "cat /etc/airlock/config.json && test -r /etc/airlock/key/report.key && \
                  touch /tmp/scratch && ! touch /root-fs 2>/dev/null && echo cron-ran as $(id -u)";
    let container = json!({
        "name": "main", "image": image, "imagePullPolicy": "Always",
        "command": ["sh", "-c", script],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "securityContext": {
            "runAsNonRoot": true, "runAsUser": UID, "runAsGroup": UID, "readOnlyRootFilesystem": true,
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/airlock", "readOnly": true},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    });
    let pod = host_network(
        json!([container]),
        json!({
            "securityContext": {"fsGroup": UID, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [
                {"name": "config", "projected": {"sources": [
                    {"configMap": {"name": "config"}},
                    {"secret": {"name": "key", "items": [{"key": "report.key", "path": "key/report.key", "mode": 0o440}]}},
                ]}},
                {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
            ],
        }),
    );
    let cron: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": {"name": "tick"},
        "spec": {
            "schedule": "* * * * *", "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": 300,
            "jobTemplate": {"spec": {"backoffLimit": 0, "activeDeadlineSeconds": 300, "template": {"spec": pod}}},
        },
    }))
    .expect("a CronJob");
    let gvk = GroupVersionKind::gvk("batch", "v1beta1", "CronJob");
    let cron_jobs: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ApiResource::from_gvk_with_plural(&gvk, "cronjobs"));
    cron_jobs.create(&pp, &cron).await.expect("CronJob created");

    // The next minute starts it; the CronJob controller looks every ten seconds.
    let pod = wait_succeeded(&client, &ns, Duration::from_secs(150), |_| true).await;
    let job = pod.metadata.owner_references.unwrap_or_default().into_iter().find(|o| o.kind == "Job").expect("a Job's pod");
    assert!(job.name.starts_with("tick-"), "{job:?}");
    let out = logs(&client, &ns, pod.metadata.name.as_deref().expect("a name")).await;
    assert_eq!(out, format!("{{}}cron-ran as {UID}\n"));
    delete_namespace(&client, &ns).await;
}

#[tokio::test]
async fn containerd_the_kubelet_and_their_pods_connect_only_to_loopback() {
    let client = client().await;
    let ns = namespace(&client, "connects").await;
    let image = push_busybox("connects");
    // A pull from the registry and a pod calling the API server: what the check must see.
    run_pod_reading_itself(&client, &ns, &image, "Always").await;
    delete_namespace(&client, &ns).await;

    let traces = PathBuf::from(airlock_e2e::service_env("AIRLOCK_NODE_TRACES"));
    let kubelet = connects::read(&traces.join("kubelet.trace"));
    let containerd = connects::read(&traces.join("containerd.trace"));
    let outside: Vec<&str> = kubelet.iter().chain(&containerd).filter(|c| !c.target.allowed()).map(|c| c.line.as_str()).collect();
    assert!(outside.is_empty(), "connects outside 127.0.0.0/8 and unix sockets:\n{}", outside.join("\n"));

    let api: SocketAddr = API.parse().unwrap();
    let registry: SocketAddr = airlock_e2e::service_env("AIRLOCK_REGISTRY").parse().expect("the registry as IP:port");
    let reached = |trace: &[connects::Connect], to: SocketAddr| trace.iter().any(|c| c.target == Target::Ip(to.ip(), to.port()));
    assert!(reached(&kubelet, api), "the kubelet's trace shows no connect to the API server {api}");
    assert!(reached(&containerd, registry), "containerd's trace shows no pull from {registry}");
    assert!(reached(&containerd, api), "containerd's trace does not follow the pod to the API server {api}");
    assert!(kubelet.iter().any(|c| matches!(&c.target, Target::Unix(path) if path.ends_with("containerd.sock"))), "{kubelet:#?}");
}
