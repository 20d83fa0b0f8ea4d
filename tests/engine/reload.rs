//! The reloader (spec 5.10): a Deployment of a reloader part is restarted, by its
//! pod-template annotation, once a ConfigMap it mounts changed, and not on a run where
//! nothing did; neither drift detection nor a new apply of the manifest undoes that
//! annotation.

use std::collections::BTreeMap;

use airlock_bundle::vocabulary::RESTARTED_AT_ANNOTATION;
use airlock_bundle::{PartSettings, SyncMode};
use airlock_puller::engine::{self, Action, Mounted};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::{Files, Scenario, actions, config_map, file, namespace};

/// A Deployment `web` with `replicas` that mounts the ConfigMap `settings` as a volume.
fn mounting(ns: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {ns}\nspec:\n  replicas: {replicas}\n  selector:\n    \
         matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        \
         image: nginx:1.19\n        volumeMounts:\n        - {{name: settings, mountPath: /etc/web}}\n      volumes:\n      - name: settings\n        \
         configMap: {{name: settings}}\n"
    )
}

/// One reload pass over `files` as `version`: the restart results and the digests to keep.
async fn reload(s: &Scenario, version: u64, files: &Files, recorded: &[Mounted]) -> (BTreeMap<String, Action>, Vec<Mounted>) {
    let desired = s.desired_with(version, files, &settings);
    let check = engine::check_reload(&s.client, &s.settings.tenants, engine::workloads(&desired, &s.settings), recorded)
        .await
        .expect("reload check");
    let (outcome, mounted) = check.restart(false).await;
    (actions(&outcome), mounted)
}

fn settings(name: &str) -> PartSettings {
    match name {
        "ClusterProfile.app" => PartSettings {
            sync_mode: SyncMode::ContinuousWithDriftDetection,
            reloader: true,
            depends_on: vec!["ClusterProfile.base".into()],
            ..PartSettings::default()
        },
        _ => PartSettings::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_restarts_once_a_configmap_it_mounts_changed_and_not_otherwise() {
    let mut s = Scenario::new("reload").await;
    let ns = s.ns("app");
    let version = |replicas: u32| -> Files {
        vec![
            file("ClusterProfile.base", "ns", namespace(&ns)),
            file("ClusterProfile.app", "settings", config_map(&ns, "settings", "1")),
            file("ClusterProfile.app", "web", mounting(&ns, replicas)),
        ]
    };
    let v1 = version(1);
    let applied = s.sync_objects(s.desired_with(1, &v1, &settings)).await;
    assert!(!applied.failed(), "{:#?}", applied.results);
    let deployments = s.namespaced("apps/v1", "Deployment", &ns);
    let restarted_at = || async {
        let web = deployments.get("web").await.expect("web");
        web.data.pointer(&format!("/spec/template/metadata/annotations/{}", RESTARTED_AT_ANNOTATION.replace('/', "~1"))).cloned()
    };

    // Seen for the first time: recorded, not restarted; then nothing changed.
    let (first, mounted) = reload(&s, 1, &v1, &[]).await;
    assert!(first.is_empty(), "{first:?}");
    assert_eq!(mounted.len(), 1);
    let (quiet, same) = reload(&s, 1, &v1, &mounted).await;
    assert!(quiet.is_empty() && same == mounted, "{quiet:?}");
    assert_eq!(restarted_at().await, None);

    // The ConfigMap changes by hand: the next pass restarts the Deployment.
    let config_maps = s.namespaced("v1", "ConfigMap", &ns);
    config_maps.patch("settings", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "2"}}))).await.expect("changed");
    let (changed, moved) = reload(&s, 1, &v1, &mounted).await;
    assert_eq!(changed.get("Deployment web"), Some(&Action::Restarted), "{changed:?}");
    assert_ne!(moved, mounted);
    let stamp = restarted_at().await.expect("the pod template is annotated");
    assert!(stamp.as_str().is_some_and(|t| t.ends_with('Z')), "{stamp}");
    let (after, _) = reload(&s, 1, &v1, &moved).await;
    assert!(after.is_empty(), "nothing changed since: {after:?}");
    assert_eq!(restarted_at().await, Some(stamp.clone()));

    // Drift detection does not see the annotation, and re-applying the manifest keeps it.
    let drift = s.correct_objects(s.desired_with(1, &v1, &settings)).await;
    // (The ConfigMap changed by hand is drift of its own, and is corrected.)
    let drift = actions(&drift);
    assert_eq!((drift["Deployment web"], drift["ConfigMap settings"]), (Action::Unchanged, Action::DriftCorrected), "{drift:?}");
    let v2 = version(2);
    let reapplied = s.sync_objects(s.desired_with(2, &v2, &settings)).await;
    assert_eq!(actions(&reapplied)["Deployment web"], Action::Configured, "{:#?}", reapplied.results);
    assert_eq!(restarted_at().await, Some(stamp));
    assert_eq!(deployments.get("web").await.expect("web").data["spec"]["replicas"], Value::from(2));
}
