//! What a release's options ask of the site (spec 2.5.3) on the real API server. A release
//! that waits (Helm's `wait`, `atomic`, `upgradeOptions.cleanupOnFail`), on an API server which has a controller manager and no node: a Service
//! and a ConfigMap are ready once applied (the Service with its cluster IP) and the
//! post-install hook fires after them; a Deployment can never get an available replica, so
//! an upgrade that adds one fails when its wait times out, fires no post-upgrade hook, and
//! deletes what it created (the Deployment) while the objects it changed keep the new
//! version. Waits that succeed on a node are in `tests/helm_hooks.rs`. A release pruned
//! with `orphan` propagation leaves the ReplicaSet its Deployment made.

use airlock_puller::engine::Action;

use super::hooks::{config_map, metadata};
use super::{Files, Scenario, actions, detail, file, namespace};

const PART: &str = "ClusterProfile.web";

const WAIT: (&str, &str) = ("airlock.dev/helm-wait", "ready");
const WAIT_BRIEFLY: (&str, &str) = ("airlock.dev/helm-wait-timeout-seconds", "2");
const CLEANUP: (&str, &str) = ("airlock.dev/helm-cleanup-on-fail", "install,upgrade");

fn service(ns: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\n{}spec:\n  ports:\n  - port: 80\n    protocol: TCP\n  selector:\n    app: web\n",
        metadata(ns, "web", &[WAIT, WAIT_BRIEFLY, CLEANUP])
    )
}

/// A Deployment whose Pod no node will run: never available.
fn deployment(ns: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\n{}spec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      automountServiceAccountToken: false\n      containers:\n      - name: main\n        image: busybox\n",
        metadata(ns, "app", &[WAIT, WAIT_BRIEFLY, CLEANUP])
    )
}

fn release(ns: &str, value: &str, with_deployment: bool) -> Files {
    let post = [("airlock.dev/hook", "post-install,post-upgrade")];
    let mut files = vec![
        file("ClusterProfile.base", "ns", namespace(ns)),
        file(PART, "svc", service(ns)),
        file(PART, "main", config_map(ns, "main", value, &[WAIT, WAIT_BRIEFLY, CLEANUP])),
        file(PART, "post", config_map(ns, "post", value, &post)),
    ];
    if with_deployment {
        files.push(file(PART, "app", deployment(ns)));
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_hooks_wait_for_ready_objects_and_a_failed_wait_cleans_up_what_it_created() {
    let mut s = Scenario::new("wait").await;
    let ns = s.ns("web");
    let installed = s.sync(1, &release(&ns, "1", false), &[]).await;
    let results = actions(&installed);
    assert_eq!(
        (results["Service web"], results["ConfigMap main"], results["ConfigMap post"]),
        (Action::Created, Action::Created, Action::Created)
    );
    let position = |name: &str| installed.results.iter().position(|r| r.id.name == name).expect("a result");
    assert!(position("web") < position("post") && position("main") < position("post"), "{:#?}", installed.results);
    let cluster_ip = s.get("v1", "Service", &ns, "web").await.expect("service").data["spec"]["clusterIP"].clone();
    assert!(cluster_ip.as_str().is_some_and(|ip| !ip.is_empty()), "ready: it has a cluster IP");
    let before = s.inventory.clone();

    let failed = s.sync_objects(s.desired(2, &release(&ns, "2", true), &[])).await;
    let results = actions(&failed);
    assert_eq!(results["Deployment app"], Action::Failed, "{failed:#?}");
    let why = detail(&failed, "app");
    assert!(why.starts_with("wait: Deployment app: not ready within 2s: "), "{why}");
    assert!(why.ends_with("; then cleaned up: created by the release operation that failed"), "{why}");
    assert_eq!(results["ConfigMap post"], Action::Skipped, "no post-upgrade hook after a failed wait: {failed:#?}");
    assert!(s.get("apps/v1", "Deployment", &ns, "app").await.is_none_or(|d| d.metadata.deletion_timestamp.is_some()), "deleted again");
    let main = s.get("v1", "ConfigMap", &ns, "main").await.expect("main");
    assert_eq!(main.data["data"]["k"], "2", "what the upgrade changed keeps the new version: there is no earlier render to go back to");
    assert_eq!(s.get("v1", "ConfigMap", &ns, "post").await.expect("post").data["data"]["k"], "1");
    assert_eq!(s.inventory, before, "a failed run records nothing");

    // Without the Deployment the upgrade goes through: the ConfigMap is applied again
    // (the failed run recorded nothing) and the post-upgrade hook fires.
    let fixed = s.sync(3, &release(&ns, "2", false), &[]).await;
    assert_eq!(actions(&fixed)["ConfigMap post"], Action::Created, "{fixed:#?}");
    assert_eq!(s.get("v1", "ConfigMap", &ns, "post").await.expect("post").data["data"]["k"], "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_pruned_with_orphan_propagation_leaves_the_dependents() {
    let mut s = Scenario::new("orphan").await;
    let ns = s.ns("web");
    let base = file("ClusterProfile.base", "ns", namespace(&ns));
    let orphan =
        deployment(&ns).replace("    airlock.dev/helm-wait: \"ready\"\n", "    airlock.dev/helm-deletion-propagation: \"orphan\"\n");
    assert!(orphan.contains("deletion-propagation"), "{orphan}");
    let orphan = orphan.replace("    airlock.dev/helm-wait-timeout-seconds: \"2\"\n", "");
    s.sync(1, &vec![base.clone(), file(PART, "app", orphan)], &[]).await;
    let entry = s.inventory.iter().find(|e| e.id.name == "app").expect("inventoried");
    assert_eq!(serde_json::to_value(entry).unwrap()["propagation"], "orphan", "recorded for the prune");
    // The controller manager makes the Deployment's ReplicaSet.
    let sets = s.namespaced("apps/v1", "ReplicaSet", &ns);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while sets.list(&Default::default()).await.expect("lists").items.is_empty() {
        assert!(std::time::Instant::now() < deadline, "no ReplicaSet after 30s");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    let pruned = s.sync(2, &vec![base], &[]).await;
    assert_eq!(actions(&pruned)["Deployment app"], Action::Pruned, "{pruned:#?}");
    // The garbage collector orphans the ReplicaSet by removing its owner reference, then
    // lets the Deployment go; had it been told to cascade, it would have deleted the
    // ReplicaSet too. Wait for the Deployment to be gone, then look.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while s.get("apps/v1", "Deployment", &ns, "app").await.is_some() {
        assert!(std::time::Instant::now() < deadline, "the pruned Deployment is still there after 30s");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let left = sets.list(&Default::default()).await.expect("lists").items;
    assert_eq!(left.len(), 1, "orphan: the ReplicaSet stays");
    assert!(left[0].metadata.owner_references.as_ref().is_none_or(|o| o.is_empty()), "and is no longer owned: {:?}", left[0].metadata);
}
