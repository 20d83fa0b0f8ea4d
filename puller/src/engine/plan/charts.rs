//! The Helm releases of a bundle as its report lists them (spec 14.3 `releases`): one
//! entry per release, named by its objects' release labels, with the chart version,
//! app version and repository the publisher wrote on them (spec 2.5.3), and the operation
//! the sync puts it through (`hook::operations`). Reading only: nothing here decides what
//! is applied.
//!
//! A release whose objects carry no chart annotations (published before they existed) is
//! not listed: the management side could not name its chart.

use std::collections::BTreeMap;

use airlock_bundle::SyncMode;
use airlock_bundle::report::{ReleaseOperation, ReleaseSeen};
use airlock_bundle::vocabulary::{
    APP_VERSION_ANNOTATION, CHART_VERSION_ANNOTATION, RELEASE_LABEL, RELEASE_NAMESPACE_LABEL, REPOSITORY_ANNOTATION,
};

use crate::engine::model::object::{DesiredObject, InventoryEntry};
use crate::engine::plan::gate::Held;
use crate::engine::plan::hook::{self, Operation};

/// The releases a sync of `desired` over `previous` installs, upgrades or leaves as they
/// are, sorted by part, namespace and name; parts in `held_back` and dry-run parts left out,
/// as a sync changes nothing of theirs.
pub fn releases(desired: &[DesiredObject], previous: &[InventoryEntry], held_back: &BTreeMap<String, String>) -> Vec<ReleaseSeen> {
    let held = Held::new(held_back, desired.iter());
    let applied: Vec<&DesiredObject> = desired.iter().filter(|o| held.reason(o).is_none() && o.sync_mode != SyncMode::DryRun).collect();
    let operations = hook::operations(applied.iter().copied(), previous);
    let mut seen: BTreeMap<(String, String), ReleaseSeen> = BTreeMap::new();
    for object in applied.into_iter().filter(|o| o.hook.is_none()) {
        let Some(release) = &object.release else { continue };
        let key = (object.profile.clone(), release.clone());
        if seen.contains_key(&key) {
            continue;
        }
        let manifest = object.manifest.value();
        let text = |map: &str, key: &str| manifest["metadata"][map][key].as_str().map(str::to_string);
        let (Some(name), Some(version), Some(repo_url)) =
            (text("labels", RELEASE_LABEL), text("annotations", CHART_VERSION_ANNOTATION), text("annotations", REPOSITORY_ANNOTATION))
        else {
            continue;
        };
        let operation = match operations.get(release) {
            Some(Operation::Install) => ReleaseOperation::Install,
            Some(Operation::Upgrade) => ReleaseOperation::Upgrade,
            // An uninstall leaves no object of the release in the bundle.
            Some(Operation::Uninstall) | None => ReleaseOperation::None,
        };
        seen.insert(
            key,
            ReleaseSeen {
                profile: object.profile.clone(),
                name,
                namespace: text("labels", RELEASE_NAMESPACE_LABEL).unwrap_or_default(),
                chart_version: version,
                app_version: text("annotations", APP_VERSION_ANNOTATION).filter(|v| !v.is_empty()),
                repo_url,
                operation,
            },
        );
    }
    let mut out: Vec<ReleaseSeen> = seen.into_values().collect();
    out.sort_by(|a, b| (&a.profile, &a.namespace, &a.name).cmp(&(&b.profile, &b.namespace, &b.name)));
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::testing;

    fn object(name: &str, release: Option<(&str, &str)>, chart: Option<&str>, hash: &str) -> DesiredObject {
        let mut manifest = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "web"}});
        if let Some((ns, release)) = release {
            manifest["metadata"]["labels"] = json!({RELEASE_LABEL: release, RELEASE_NAMESPACE_LABEL: ns});
        }
        if let Some(version) = chart {
            manifest["metadata"]["annotations"] =
                json!({CHART_VERSION_ANNOTATION: version, REPOSITORY_ANNOTATION: "oci://registry/charts", APP_VERSION_ANNOTATION: "2.0"});
        }
        DesiredObject {
            release: release.map(|(ns, r)| format!("{ns}/{r}")),
            hash: hash.into(),
            manifest: manifest.into(),
            ..testing::object("v1", "ConfigMap", Some("web"), name)
        }
    }

    fn entry(object: &DesiredObject) -> InventoryEntry {
        testing::entry(object, false)
    }

    #[test]
    fn lists_each_release_once_with_its_chart_and_what_the_sync_does_to_it() {
        let a1 = object("a1", Some(("web", "a")), Some("1.2.3"), "h1");
        let a2 = object("a2", Some(("web", "a")), Some("1.2.3"), "h1");
        let b = object("b", Some(("web", "b")), Some("0.1.0"), "h1");
        let old = object("old", Some(("web", "old")), None, "h1");
        let plain = object("plain", None, None, "h1");
        let desired = vec![a1.clone(), a2, b.clone(), old, plain];
        let first = releases(&desired, &[], &BTreeMap::new());
        let seen = |name: &str, version: &str, operation| ReleaseSeen {
            profile: "ClusterProfile.p".into(),
            name: name.into(),
            namespace: "web".into(),
            chart_version: version.into(),
            app_version: Some("2.0".into()),
            repo_url: "oci://registry/charts".into(),
            operation,
        };
        assert_eq!(first, [seen("a", "1.2.3", ReleaseOperation::Install), seen("b", "0.1.0", ReleaseOperation::Install)]);

        let mut changed = b.clone();
        changed.hash = "h2".into();
        let previous = [entry(&a1), entry(&object("a2", Some(("web", "a")), Some("1.2.3"), "h1")), entry(&b)];
        let second =
            releases(&[a1.clone(), object("a2", Some(("web", "a")), Some("1.2.3"), "h1"), changed.clone()], &previous, &BTreeMap::new());
        assert_eq!(second, [seen("a", "1.2.3", ReleaseOperation::None), seen("b", "0.1.0", ReleaseOperation::Upgrade)]);

        let held = BTreeMap::from([("ClusterProfile.p".to_string(), "failed too often".to_string())]);
        assert!(releases(&[a1, changed], &previous, &held).is_empty(), "a part held back changes nothing");
    }
}
