//! What a part becomes when its profile no longer deploys to the cluster (it stopped
//! matching, or was deleted) and withdraws what it deployed. Entry point: [`carry`].
//!
//! The site prunes such a part's objects by its inventory. A Helm release among them must
//! also fire its pre-delete and post-delete hooks around that prune, as `helm uninstall`
//! does, and nothing is left to render them from: the profile's spec is gone. So every
//! installed release ships its delete hooks (idle at the site), and the part of a withdrawn
//! profile is carried over from the stored bundle with those hooks alone; the puller,
//! finding a release with hooks only in the bundle and objects in its inventory, uninstalls
//! it (spec 2.5.3). The carried part is kept until the cluster reports it applied a
//! version that carried it (the uninstall is done), then dropped. A cluster that never
//! reports keeps it; a hook that already fired does not fire again.

use airlock_bundle::{Limits, Part};
use serde_json::Value;

use crate::helm::{HookEvent, RELEASE_LABEL, SITE_HOOK_ANNOTATION};
use crate::render::KeptContent;
use crate::sveltos::ObjectKey;
use crate::yaml::parse_documents;

/// The part `name` to publish for a withdrawn profile whose stored part is `stored`;
/// `None` when there is nothing to carry: no release of it has delete hooks, or the part
/// already holds delete hooks alone and the cluster reported applying it (`applied`).
pub fn carry(name: &str, stored: &KeptContent, applied: bool, limits: &Limits) -> Result<Option<KeptContent>, String> {
    let mut files = Vec::new();
    let mut keys = Vec::new();
    let mut installed = false;
    for (path, bytes) in stored.part.files() {
        let text = std::str::from_utf8(bytes).map_err(|_| format!("{path}: not UTF-8"))?;
        let documents = parse_documents(text).map_err(|e| format!("{path}: {e}"))?;
        installed |= documents.iter().any(|d| in_release(d) && hook_events(d).is_none());
        if !documents.is_empty() && documents.iter().all(is_delete_hook) {
            keys.extend(documents.iter().filter_map(ObjectKey::of));
            files.push((path.to_string(), bytes.to_vec()));
        }
    }
    if files.is_empty() || (!installed && applied) {
        return Ok(None);
    }
    let part = Part::new(name, files, limits).map_err(|e| e.to_string())?;
    Ok(Some(KeptContent { part, keys, kept_from: stored.kept_from }))
}

fn in_release(object: &Value) -> bool {
    object["metadata"]["labels"][RELEASE_LABEL].is_string()
}

fn hook_events(object: &Value) -> Option<&str> {
    object["metadata"]["annotations"][SITE_HOOK_ANNOTATION].as_str()
}

fn is_delete_hook(object: &Value) -> bool {
    in_release(object)
        && hook_events(object).is_some_and(|events| {
            events.split(',').map(str::trim).any(|e| [HookEvent::PreDelete, HookEvent::PostDelete].iter().any(|d| d.as_str() == e))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &str = "ClusterProfile.web";

    fn object(name: &str, events: Option<&str>) -> String {
        let hook = events.map(|e| format!("  annotations: {{airlock.dev/hook: '{e}'}}\n")).unwrap_or_default();
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: web\n  labels: {{airlock.dev/helm-release: web}}\n{hook}"
        )
    }

    fn stored(objects: &[(&str, String)]) -> KeptContent {
        let files = objects.iter().map(|(path, text)| (path.to_string(), text.clone().into_bytes()));
        let part = Part::new(NAME, files, &Limits::default()).unwrap();
        KeptContent { part, keys: Vec::new(), kept_from: 7 }
    }

    fn paths(content: &KeptContent) -> Vec<&str> {
        content.part.files().map(|(p, _)| p).collect()
    }

    #[test]
    fn an_installed_release_keeps_its_delete_hooks_alone() {
        let part = stored(&[
            ("ClusterProfile.web/app.yaml", object("app", None)),
            ("ClusterProfile.web/backup.yaml", object("backup", Some("pre-delete"))),
            ("ClusterProfile.web/both.yaml", object("both", Some("pre-install,post-delete"))),
            ("ClusterProfile.web/post.yaml", object("post", Some("post-install"))),
            ("ClusterProfile.web/plain.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: web}\n".into()),
        ]);
        for applied in [false, true] {
            let carried = carry(NAME, &part, applied, &Limits::default()).unwrap().expect("carried");
            assert_eq!(
                paths(&carried),
                ["ClusterProfile.web/backup.yaml", "ClusterProfile.web/both.yaml"],
                "the cluster has not seen the withdrawal yet"
            );
            assert_eq!(carried.keys.len(), 2);
            assert_eq!(carried.kept_from, 7);
            assert_eq!(carried.part.files().next().unwrap().1, object("backup", Some("pre-delete")).as_bytes(), "bytes unchanged");
        }
    }

    #[test]
    fn a_carried_part_goes_once_the_cluster_applied_it() {
        let part = stored(&[("ClusterProfile.web/backup.yaml", object("backup", Some("pre-delete")))]);
        assert!(carry(NAME, &part, false, &Limits::default()).unwrap().is_some(), "not applied yet: carried again");
        assert!(carry(NAME, &part, true, &Limits::default()).unwrap().is_none());
    }

    #[test]
    fn a_part_without_delete_hooks_goes_at_once() {
        let part = stored(&[
            ("ClusterProfile.web/app.yaml", object("app", None)),
            ("ClusterProfile.web/post.yaml", object("post", Some("post-install"))),
            (
                "ClusterProfile.web/stray.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\n  annotations: {airlock.dev/hook: pre-delete}\n".into(),
            ),
        ]);
        assert!(carry(NAME, &part, false, &Limits::default()).unwrap().is_none(), "a hook outside a release is no release's");
    }

    #[test]
    fn an_unreadable_file_is_an_error() {
        let part = stored(&[("ClusterProfile.web/bad.yaml", "a: [".into())]);
        assert!(carry(NAME, &part, false, &Limits::default()).unwrap_err().starts_with("ClusterProfile.web/bad.yaml: "));
    }
}
