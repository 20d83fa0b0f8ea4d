use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::engine::testing;
use crate::engine::{NamespacePolicy, PartRules};

/// Engine settings with the watch-namespaces `watched` and the part `ClusterProfile.held`
/// held back.
fn settings(watched: Option<&[&str]>) -> Settings {
    Settings {
        watch_namespaces: watched.map(|w| w.iter().map(|n| n.to_string()).collect()),
        namespace_policy: NamespacePolicy::Filter,
        held_back: BTreeMap::from([("ClusterProfile.held".to_string(), "held back".to_string())]),
        ..testing::settings("fleet/edge-1")
    }
}

fn workload(kind: &str, reloader: bool, volumes: Value) -> DesiredObject {
    let api_version = if kind == "ConfigMap" { "v1" } else { "apps/v1" };
    let mut object = testing::object(api_version, kind, Some("web"), "w");
    object.rules = Arc::new(PartRules { reloader, ..PartRules::default() });
    object.manifest = json!({"spec": {"template": {"spec": {"volumes": volumes}}}}).into();
    object
}

fn mounts() -> Value {
    json!([
        {"name": "a", "configMap": {"name": "settings"}},
        {"name": "b", "secret": {"secretName": "token"}},
        {"name": "c", "projected": {"sources": [{"configMap": {"name": "extra"}}, {"secret": {"name": "ca"}}, {"serviceAccountToken": {}}]}},
        {"name": "d", "emptyDir": {}}
    ])
}

#[test]
fn a_workload_mounts_configmaps_and_secrets_directly_or_projected() {
    let found = workloads(&[workload("Deployment", true, mounts())], &settings(None));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].config_maps.iter().collect::<Vec<_>>(), ["extra", "settings"]);
    assert_eq!(found[0].secrets.iter().collect::<Vec<_>>(), ["ca", "token"]);
    assert_eq!(super::mounts(&found[0]), "ConfigMap extra, ConfigMap settings, Secret ca, Secret token");
}

#[test]
fn only_workloads_of_reloader_parts_that_mount_something_are_watched() {
    let mut held_back = workload("StatefulSet", true, mounts());
    held_back.profile = "ClusterProfile.held".into();
    let mut dry_run = workload("DaemonSet", true, mounts());
    dry_run.sync_mode = SyncMode::DryRun;
    let cases = [
        workload("Deployment", false, mounts()),
        workload("ConfigMap", true, mounts()),
        workload("Deployment", true, json!([{"name": "d", "emptyDir": {}}])),
        held_back,
        dry_run,
    ];
    assert!(workloads(&cases, &settings(None)).is_empty());
    let outside = [workload("Deployment", true, mounts())];
    assert!(workloads(&outside, &settings(Some(&["other"]))).is_empty(), "dropped by the policy");
    assert_eq!(workloads(&outside, &settings(Some(&["web"]))).len(), 1);
    let kinds: Vec<String> = ["Deployment", "StatefulSet", "DaemonSet"]
        .iter()
        .flat_map(|k| workloads(&[workload(k, true, mounts())], &settings(None)).into_iter().map(|w| w.id.kind))
        .collect();
    assert_eq!(kinds, ["Deployment", "StatefulSet", "DaemonSet"]);
}
