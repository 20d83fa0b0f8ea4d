//! The delete hooks of Helm releases that leave a cluster, carried from the stored bundle
//! into the next. Entry points: [`carry`] for the part of a profile that no longer deploys
//! to the cluster (it stopped matching, or was deleted, and withdraws what it deployed),
//! [`hooks_left`] for a part that still does but dropped a release.
//!
//! The site prunes a release's objects by its inventory once they leave the bundle. It
//! must also fire the release's pre-delete and post-delete hooks around that prune, as
//! `helm uninstall` does, and nothing is left to render them from: the chart entry, or the
//! whole profile, is gone. So every installed release ships its delete hooks (idle at the
//! site), and a release that leaves keeps them in its part, read back from the stored
//! bundle byte for byte; the puller, finding a release with hooks only in the bundle and
//! objects in its inventory, uninstalls it (spec 2.5.3). The hooks are carried until the
//! cluster reports it applied a version that carried them (the uninstall is done), then
//! dropped. A cluster that never reports keeps them; a hook that fired does not fire again.
//!
//! An encrypted file of the stored part (spec 2.7) cannot be read here, so it counts as
//! holding no delete hook. Of a chart's objects only Secrets are sealed (a chart is never a
//! source marked confidential): a release's delete-hook Jobs are carried, a Secret among
//! its delete hooks is not.

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_bundle::path::{SEALED_SUFFIX, is_sealed};
use airlock_bundle::seal::holds_secret;
use airlock_bundle::statement::Statement;
use airlock_bundle::vocabulary::{HOOK_ANNOTATION, RELEASE_LABEL, RELEASE_NAMESPACE_LABEL};
use airlock_bundle::{Limits, Part};
use serde_json::Value;

use crate::render::helm::HookEvent;
use crate::render::{KeptContent, Object};
use crate::sources::ObjectKey;
use crate::yaml::parse_documents;

/// One file of delete hooks to carry, as the stored part holds it.
struct Carried {
    path: String,
    text: String,
    keys: Vec<ObjectKey>,
}

/// The part `name` to publish for a withdrawn profile whose stored part is `stored`:
/// its releases' delete hooks alone; `None` when there are none to carry. `applied`: the
/// cluster reported applying the stored bundle.
pub fn carry(name: &str, stored: &KeptContent, applied: bool, limits: &Limits) -> Result<Option<KeptContent>, String> {
    let carried = delete_hooks(&stored.part, &|_| false, applied)?;
    if carried.is_empty() {
        return Ok(None);
    }
    let keys = carried.iter().flat_map(|c| c.keys.iter().cloned()).collect();
    let part = Part::new(name, carried.into_iter().map(|c| (c.path, c.text.into_bytes())), limits).map_err(|e| e.to_string())?;
    Ok(Some(KeptContent { part, keys, kept_from: stored.kept_from, recipients: None }))
}

/// The delete hooks of the releases `stored` (a part of a profile that still deploys to
/// the cluster) held and `fresh` (that part's objects now) no longer deploys, as objects
/// to add to the part.
pub fn hooks_left(stored: &Part, fresh: &[Arc<Object>], applied: bool) -> Result<Vec<Arc<Object>>, String> {
    let mut deployed = Vec::new();
    for object in fresh {
        let documents = parse_documents(&object.yaml).map_err(|e| format!("{}: {e}", object.origin))?;
        deployed.extend(documents.iter().filter_map(release));
    }
    let carried = delete_hooks(stored, &|r| deployed.iter().any(|d| d == r), applied)?;
    let origin = |path: &str| format!("the stored bundle's {path}: the delete hook of a release the profile no longer deploys");
    let objects = carried.into_iter().filter_map(|c| {
        let key = c.keys.into_iter().next()?;
        let confidential = holds_secret(c.text.as_bytes());
        Some(Arc::new(Object { key, origin: origin(&c.path), yaml: c.text.into(), implicit: false, confidential }))
    });
    Ok(objects.collect())
}

/// Whether part `part` of the stored bundle held a file the new part lacks (`kept` says
/// which paths it has): a release it deployed may have left, with delete hooks to carry.
/// An encrypted stored file counts as kept when `kept` has its path in clear: the caller
/// may ask before its own files are sealed. The statement lists files sorted by path, so
/// only the part's own entries are read.
pub fn lost_files(stored: &Statement, part: &str, kept: impl Fn(&str) -> bool) -> bool {
    let prefix = format!("{part}/");
    let files = &stored.predicate.files;
    let start = files.partition_point(|f| f.path.as_str() < prefix.as_str());
    let kept = |path: &str| kept(path) || path.strip_suffix(SEALED_SUFFIX).is_some_and(&kept);
    files[start..].iter().take_while(|f| f.path.starts_with(&prefix)).any(|f| !kept(&f.path))
}

/// The files of `stored` that hold delete hooks of a release that `deployed` says is no
/// longer deployed, unless `stored` held that release's delete hooks alone (it was
/// uninstalling) and the cluster applied it.
fn delete_hooks(stored: &Part, deployed: &dyn Fn(&str) -> bool, applied: bool) -> Result<Vec<Carried>, String> {
    let mut installed: BTreeMap<String, bool> = BTreeMap::new();
    let mut hooks: Vec<(String, Carried)> = Vec::new();
    for (path, bytes) in stored.files().filter(|(path, _)| !is_sealed(path)) {
        let text = std::str::from_utf8(bytes).map_err(|_| format!("{path}: not UTF-8"))?;
        let documents = parse_documents(text).map_err(|e| format!("{path}: {e}"))?;
        for d in &documents {
            if let Some(r) = release(d) {
                *installed.entry(r).or_default() |= hook_events(d).is_none();
            }
        }
        let [document] = documents.as_slice() else { continue };
        if let Some(r) = release(document).filter(|_| is_delete_hook(document)) {
            let keys = ObjectKey::of(document).into_iter().collect();
            hooks.push((r, Carried { path: path.to_string(), text: text.to_string(), keys }));
        }
    }
    let carried = hooks.into_iter().filter(|(r, _)| !deployed(r) && (installed[r] || !applied)).map(|(_, c)| c);
    Ok(carried.collect())
}

/// `<namespace>/<name>` of the release an object belongs to.
fn release(object: &Value) -> Option<String> {
    let labels = &object["metadata"]["labels"];
    Some(format!("{}/{}", labels[RELEASE_NAMESPACE_LABEL].as_str().unwrap_or_default(), labels[RELEASE_LABEL].as_str()?))
}

fn hook_events(object: &Value) -> Option<&str> {
    object["metadata"]["annotations"][HOOK_ANNOTATION].as_str()
}

fn is_delete_hook(object: &Value) -> bool {
    hook_events(object).is_some_and(|events| {
        events.split(',').map(str::trim).any(|e| [HookEvent::PreDelete, HookEvent::PostDelete].iter().any(|d| d.as_str() == e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::ClusterSettings;

    const NAME: &str = "ClusterProfile.web";

    /// A Job of `release` in namespace web, a hook of `events` when given.
    fn object_of(release: &str, name: &str, events: Option<&str>) -> String {
        let hook = events.map(|e| format!("  annotations: {{airlock.dev/hook: '{e}'}}\n")).unwrap_or_default();
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: web\n  labels: {{airlock.dev/helm-release: {release}, airlock.dev/helm-release-namespace: web}}\n{hook}"
        )
    }

    fn object(name: &str, events: Option<&str>) -> String {
        object_of("web", name, events)
    }

    fn part(objects: &[(&str, String)]) -> Part {
        let files = objects.iter().map(|(file, text)| (format!("{NAME}/{file}"), text.clone().into_bytes()));
        Part::new(NAME, files, &Limits::default()).unwrap()
    }

    fn stored(objects: &[(&str, String)]) -> KeptContent {
        KeptContent { part: part(objects), keys: Vec::new(), kept_from: 7, recipients: None }
    }

    fn paths(content: &KeptContent) -> Vec<&str> {
        content.part.files().map(|(p, _)| p).collect()
    }

    fn fresh(texts: &[String]) -> Vec<Arc<Object>> {
        let key = |t: &String| ObjectKey::of(&parse_documents(t).unwrap()[0]).unwrap();
        let object =
            |t: &String| Object { key: key(t), origin: "fresh".into(), yaml: t.as_str().into(), implicit: false, confidential: false };
        texts.iter().map(|t| Arc::new(object(t))).collect()
    }

    #[test]
    fn an_installed_release_keeps_its_delete_hooks_alone() {
        let part = stored(&[
            ("app.yaml", object("app", None)),
            ("backup.yaml", object("backup", Some("pre-delete"))),
            ("both.yaml", object("both", Some("pre-install,post-delete"))),
            ("post.yaml", object("post", Some("post-install"))),
            ("plain.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: web}\n".into()),
        ]);
        for applied in [false, true] {
            let carried = carry(NAME, &part, applied, &Limits::default()).unwrap().expect("carried");
            assert_eq!(
                paths(&carried),
                [format!("{NAME}/backup.yaml"), format!("{NAME}/both.yaml")],
                "the cluster has not seen the withdrawal yet"
            );
            assert_eq!(carried.keys.len(), 2);
            assert_eq!(carried.kept_from, 7);
            assert_eq!(carried.part.files().next().unwrap().1, object("backup", Some("pre-delete")).as_bytes(), "bytes unchanged");
        }
    }

    #[test]
    fn a_carried_part_goes_once_the_cluster_applied_it() {
        let part = stored(&[("backup.yaml", object("backup", Some("pre-delete")))]);
        assert!(carry(NAME, &part, false, &Limits::default()).unwrap().is_some(), "not applied yet: carried again");
        assert!(carry(NAME, &part, true, &Limits::default()).unwrap().is_none());
    }

    #[test]
    fn a_part_without_delete_hooks_goes_at_once() {
        let part = stored(&[
            ("app.yaml", object("app", None)),
            ("post.yaml", object("post", Some("post-install"))),
            ("stray.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\n  annotations: {airlock.dev/hook: pre-delete}\n".into()),
        ]);
        assert!(carry(NAME, &part, false, &Limits::default()).unwrap().is_none(), "a hook outside a release is no release's");
    }

    #[test]
    fn a_part_that_dropped_a_release_keeps_its_delete_hooks() {
        let web = [object("app", None), object("backup", Some("pre-delete"))];
        let db = [object_of("db", "db", None), object_of("db", "dump", Some("pre-delete,post-delete"))];
        let both = part(&[
            ("app.yaml", web[0].clone()),
            ("backup.yaml", web[1].clone()),
            ("db.yaml", db[0].clone()),
            ("dump.yaml", db[1].clone()),
        ]);
        let left = hooks_left(&both, &fresh(&web), true).unwrap();
        assert_eq!(left.iter().map(|o| (o.key.name.as_str(), &*o.yaml)).collect::<Vec<_>>(), [("dump", db[1].as_str())]);
        assert!(left[0].origin.contains(&format!("{NAME}/dump.yaml")), "{}", left[0].origin);
        assert!(hooks_left(&both, &fresh(&[web[0].clone(), db[0].clone()]), false).unwrap().is_empty(), "both still deployed");

        let carried = part(&[("app.yaml", web[0].clone()), ("backup.yaml", web[1].clone()), ("dump.yaml", db[1].clone())]);
        assert_eq!(hooks_left(&carried, &fresh(&web), false).unwrap().len(), 1, "not applied yet: carried again");
        assert!(hooks_left(&carried, &fresh(&web), true).unwrap().is_empty(), "applied: the uninstall is done");
    }

    #[test]
    fn lost_files_reads_the_part_alone() {
        let other = Part::new("ClusterProfile.a", [("ClusterProfile.a/x.yaml".to_string(), b"{}".to_vec())], &Limits::default()).unwrap();
        let web = part(&[("app.yaml", object("app", None)), ("backup.yaml", object("backup", Some("pre-delete")))]);
        let bundle =
            airlock_bundle::Bundle::from_parts([("ClusterProfile.a".into(), other), (NAME.into(), web)], &Limits::default()).unwrap();
        let now: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        let release = airlock_bundle::Release {
            cluster: "fleet/edge".parse().unwrap(),
            version: 1,
            issued_at: now,
            expires: now,
            keyring_version: 1,
            settings: ClusterSettings::default(),
            decommission: false,
        };
        let statement = airlock_bundle::sign::statement(&bundle, &release, &|_| Default::default(), &Default::default());
        let has = |paths: &'static [&'static str]| move |p: &str| paths.contains(&p);
        assert!(!lost_files(&statement, NAME, has(&["ClusterProfile.web/app.yaml", "ClusterProfile.web/backup.yaml"])));
        assert!(lost_files(&statement, NAME, has(&["ClusterProfile.web/app.yaml"])));
        assert!(!lost_files(&statement, "ClusterProfile.a", has(&["ClusterProfile.a/x.yaml"])), "another part's files are not read");
        assert!(!lost_files(&statement, "ClusterProfile.new", has(&[])), "a part the store never held lost nothing");
    }

    #[test]
    fn an_unreadable_file_is_an_error() {
        let part = stored(&[("bad.yaml", "a: [".into())]);
        assert!(carry(NAME, &part, false, &Limits::default()).unwrap_err().starts_with("ClusterProfile.web/bad.yaml: "));
    }
}
