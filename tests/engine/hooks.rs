//! Helm releases and hooks (spec 2.5.3) on the real API server, with hooks that need no
//! node (ConfigMaps, and a Pod that can never run): an install fires the install hooks
//! around the release's objects by weight, an unchanged release fires none, an upgrade
//! fires the upgrade hooks and re-creates a `before-hook-creation` hook, delete policies
//! are honoured, a hook that does not finish in time fails the run before the release's
//! objects change, drift correction never touches a hook, a withdrawn release leaves its
//! hooks in place, and an uninstall prunes between its pre-delete and post-delete hooks. Hook Jobs run to completion on the node (`tests/node/hooks.rs`).

use airlock_bundle::{StopMatchingBehavior, SyncMode};
use airlock_puller::engine::{Action, Outcome};

use super::{Files, Scenario, actions, detail, file, namespace};

const PART: &str = "ClusterProfile.web";

/// The metadata lines of an object of release `web` in `ns`, with `annotations`.
pub(crate) fn metadata(ns: &str, name: &str, annotations: &[(&str, &str)]) -> String {
    let mut out = format!(
        "metadata:\n  name: {name}\n  namespace: {ns}\n  labels:\n    airlock.dev/helm-release: web\n    airlock.dev/helm-release-namespace: {ns}\n"
    );
    if !annotations.is_empty() {
        out.push_str("  annotations:\n");
        for (key, value) in annotations {
            out.push_str(&format!("    {key}: \"{value}\"\n"));
        }
    }
    out
}

pub(crate) fn config_map(ns: &str, name: &str, value: &str, annotations: &[(&str, &str)]) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\n{}data:\n  k: \"{value}\"\n", metadata(ns, name, annotations))
}

/// The release: its object `main` holding `value`, and its hooks.
fn release(ns: &str, value: &str) -> Files {
    let hook = |events: &'static str, weight: &'static str| [("airlock.dev/hook", events), ("airlock.dev/hook-weight", weight)];
    let [h, w] = hook("pre-install", "-5");
    vec![
        file("ClusterProfile.base", "ns", namespace(ns)),
        file(PART, "main", config_map(ns, "main", value, &[])),
        file(PART, "pre-late", config_map(ns, "pre-late", "x", &hook("pre-install", "5"))),
        file(PART, "pre-early", config_map(ns, "pre-early", "x", &[h, w, ("airlock.dev/hook-delete-policy", "hook-succeeded")])),
        file(PART, "post", config_map(ns, "post", "x", &hook("post-install,post-upgrade", "0"))),
        file(PART, "upgrade", config_map(ns, "upgrade", value, &hook("pre-upgrade", "0"))),
    ]
}

/// The position of `name` among the results, which come in the order the run sent them.
fn position(outcome: &Outcome, name: &str) -> usize {
    outcome.results.iter().position(|r| r.id.name == name).unwrap_or_else(|| panic!("{name} has a result: {:#?}", outcome.results))
}

const DRIFT: [(&str, SyncMode, StopMatchingBehavior); 1] =
    [(PART, SyncMode::ContinuousWithDriftDetection, StopMatchingBehavior::WithdrawPolicies)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_fire_around_their_release_on_install_and_upgrade_only() {
    let mut s = Scenario::new("hooks").await;
    let ns = s.ns("web");
    let installed = s.sync(1, &release(&ns, "1"), &DRIFT).await;
    let results = actions(&installed);
    for name in ["pre-early", "pre-late", "main", "post"] {
        assert_eq!(results[&format!("ConfigMap {name}")], Action::Created, "{installed:#?}");
    }
    let order: Vec<usize> = ["pre-early", "pre-late", "main", "post"].iter().map(|n| position(&installed, n)).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "pre-install by weight, the release, post-install: {:#?}", installed.results);
    assert_eq!(detail(&installed, "pre-early"), "pre-install hook: applied, then deleted");
    assert_eq!(detail(&installed, "post"), "post-install hook: applied");
    assert_eq!((results["ConfigMap upgrade"], detail(&installed, "upgrade")), (Action::Unchanged, "hook: not an event of this install"));
    assert!(s.get("v1", "ConfigMap", &ns, "pre-early").await.is_none(), "hook-succeeded deleted it");
    assert!(s.get("v1", "ConfigMap", &ns, "upgrade").await.is_none(), "a pre-upgrade hook does not fire on install");
    let labels = s.get("v1", "ConfigMap", &ns, "post").await.expect("post").metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("airlock.dev/helm-release").map(String::as_str), Some("web"));

    let again = s.sync(2, &release(&ns, "1"), &DRIFT).await;
    assert!(
        again.results.iter().filter(|r| r.id.name != "ns").all(|r| r.action == Action::Unchanged),
        "an unchanged release fires nothing: {:#?}",
        again.results
    );
    assert_eq!(detail(&again, "pre-late"), "hook: its release is unchanged");

    // Hooks are never compared for drift: deleting one is not corrected.
    s.namespaced("v1", "ConfigMap", &ns).delete("pre-late", &Default::default()).await.expect("hook deleted");
    let checked = s.correct_drift(2, &release(&ns, "1"), &DRIFT).await;
    assert!(checked.results.iter().all(|r| r.id.name != "pre-late"), "{:#?}", checked.results);
    assert!(s.get("v1", "ConfigMap", &ns, "pre-late").await.is_none());

    let upgraded = s.sync(3, &release(&ns, "2"), &DRIFT).await;
    let results = actions(&upgraded);
    assert_eq!(results["ConfigMap upgrade"], Action::Created, "{upgraded:#?}");
    assert_eq!(results["ConfigMap main"], Action::Configured);
    assert_eq!(results["ConfigMap post"], Action::Created, "post-upgrade fires too, a new copy by before-hook-creation");
    assert!(position(&upgraded, "upgrade") < position(&upgraded, "main") && position(&upgraded, "main") < position(&upgraded, "post"));
    assert_eq!(detail(&upgraded, "pre-early"), "hook: not an event of this upgrade");
    assert!(s.get("v1", "ConfigMap", &ns, "pre-late").await.is_none(), "a pre-install hook does not fire on upgrade");
    let first = s.get("v1", "ConfigMap", &ns, "upgrade").await.expect("fired").metadata.uid;

    // before-hook-creation: the next upgrade deletes the previous copy and makes a new one.
    s.sync(4, &release(&ns, "3"), &DRIFT).await;
    let second = s.get("v1", "ConfigMap", &ns, "upgrade").await.expect("fired again");
    assert_ne!(second.metadata.uid, first);
    assert_eq!(second.data["data"]["k"], "3");

    // Withdrawn: the release's objects are pruned, its hooks left, as Helm leaves them.
    let withdrawn = s.sync(5, &vec![file("ClusterProfile.base", "ns", namespace(&ns))], &[]).await;
    let results = actions(&withdrawn);
    assert_eq!((results["ConfigMap main"], results["ConfigMap post"]), (Action::Pruned, Action::Left), "{withdrawn:#?}");
    assert_eq!(detail(&withdrawn, "post"), "released: a Helm hook, which Helm leaves in place");
    assert!(s.get("v1", "ConfigMap", &ns, "post").await.is_some());
    assert!(s.inventory.iter().all(|e| e.id.name == ns), "{:#?}", s.inventory);
}

/// A hook Pod that cannot start: this API server has no node, so it stays Pending. It
/// mounts no token, which a fresh namespace may not have yet.
fn stuck_pod(ns: &str, policy: &str) -> String {
    let annotations =
        [("airlock.dev/hook", "pre-upgrade"), ("airlock.dev/hook-timeout-seconds", "2"), ("airlock.dev/hook-delete-policy", policy)];
    format!(
        "apiVersion: v1\nkind: Pod\n{}spec:\n  restartPolicy: Never\n  automountServiceAccountToken: false\n  containers:\n  - name: main\n    image: busybox\n",
        metadata(ns, "migrate", &annotations)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_does_not_finish_fails_the_run_before_its_release_changes() {
    let mut s = Scenario::new("hookfail").await;
    let ns = s.ns("web");
    let version = |value: &str| -> Files {
        vec![
            file("ClusterProfile.base", "ns", namespace(&ns)),
            file(PART, "main", config_map(&ns, "main", value, &[])),
            file(PART, "migrate", stuck_pod(&ns, "hook-failed")),
        ]
    };
    s.sync(1, &version("1"), &[]).await;
    assert!(s.get("v1", "Pod", &ns, "migrate").await.is_none(), "a pre-upgrade hook does not fire on install");
    let before = s.inventory.clone();

    let failed = s.sync_objects(s.desired(2, &version("2"), &[])).await;
    let results = actions(&failed);
    assert_eq!(results["Pod migrate"], Action::Failed, "{failed:#?}");
    assert!(detail(&failed, "migrate").contains("hook: Pod did not finish within 2s"), "{}", detail(&failed, "migrate"));
    assert_eq!(results["ConfigMap main"], Action::Skipped, "{failed:#?}");
    let main = s.get("v1", "ConfigMap", &ns, "main").await.expect("main");
    assert_eq!(main.data["data"]["k"], "1", "the release's objects did not change");
    assert_eq!(s.inventory, before, "a failed run records nothing");
    // hook-failed: the Pod is deleted (in the background; it has no finalizer, so it goes at once).
    let pod = s.get("v1", "Pod", &ns, "migrate").await;
    assert!(pod.is_none_or(|p| p.metadata.deletion_timestamp.is_some()), "hook-failed deletes it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uninstall_prunes_the_release_between_its_delete_hooks_once() {
    let mut s = Scenario::new("hookdel").await;
    let ns = s.ns("web");
    let base = file("ClusterProfile.base", "ns", namespace(&ns));
    let installed = vec![base.clone(), file(PART, "main", config_map(&ns, "main", "1", &[]))];
    s.sync(1, &installed, &[]).await;
    // What the publisher ships for `helmChartAction: Uninstall`: the delete hooks alone.
    let uninstall = vec![
        base,
        file(PART, "backup", config_map(&ns, "backup", "x", &[("airlock.dev/hook", "pre-delete")])),
        file(PART, "farewell", config_map(&ns, "farewell", "x", &[("airlock.dev/hook", "post-delete")])),
    ];
    let removed = s.sync(2, &uninstall, &[]).await;
    let results = actions(&removed);
    assert_eq!(
        (results["ConfigMap backup"], results["ConfigMap main"], results["ConfigMap farewell"]),
        (Action::Created, Action::Pruned, Action::Created),
        "{removed:#?}"
    );
    assert!(position(&removed, "backup") < position(&removed, "main"), "pre-delete before the prune");
    assert!(position(&removed, "main") < position(&removed, "farewell"), "post-delete after it");
    assert_eq!(detail(&removed, "farewell"), "post-delete hook: applied");
    assert!(s.get("v1", "ConfigMap", &ns, "main").await.is_none());

    let again = s.sync(3, &uninstall, &[]).await;
    assert_eq!(detail(&again, "backup"), "hook: its release is unchanged", "an uninstall fires once: {again:#?}");
}
