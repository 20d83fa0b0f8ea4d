//! The watch-namespaces policy, checked on the whole bundle before any write. A
//! namespaced object outside the effective list is refused: under `reject` the run stops
//! with every offending object listed, under `filter` the object is dropped and reported.
//! Cluster-scoped objects are unaffected, as in Sveltos, but for a create-only Namespace
//! (spec 2.5.1): the publisher adds one for the namespace of objects it deploys, so it is
//! let through only when it is one of the watched namespaces, as those objects are. One
//! namespaced object is let through wherever the list points: the store-credentials Secret the publisher
//! relays in the part `Airlock.system`, in the puller's own namespace (spec 2.6), since the
//! puller cannot read its next bundle without it.
//!
//! The effective list (local setting narrowed by the bundle's) is the caller's business.

use airlock_bundle::path::SYSTEM_PART;

use super::error::EngineError;
use super::outcome::{Action, ObjectResult};
use super::scope::Target;
use super::settings::{NamespacePolicy, Settings};

/// The Secret with the puller's renewed store credentials (spec 2.6).
pub(super) const STORE_CREDENTIALS_SECRET: &str = "airlock-store-credentials";

/// Whether `namespace` is inside the watch list (None: no restriction).
pub(super) fn watched(watch: Option<&[String]>, namespace: &str) -> bool {
    watch.is_none_or(|list| list.iter().any(|n| n == namespace))
}

/// Splits targets into those that may be applied and the results of those refused.
pub(super) fn enforce(targets: Vec<Target>, settings: &Settings) -> Result<(Vec<Target>, Vec<ObjectResult>), EngineError> {
    let watch = settings.watch_namespaces.as_deref();
    let own = settings.own_namespace.as_deref();
    let (kept, refused): (Vec<Target>, Vec<Target>) = targets.into_iter().partition(|t| match namespace_of(t) {
        Some(namespace) => watched(watch, namespace) || own_credentials(t, own),
        None => true,
    });
    if refused.is_empty() {
        return Ok((kept, Vec::new()));
    }
    match settings.namespace_policy {
        NamespacePolicy::Reject => Err(EngineError::OutsideWatchNamespaces {
            objects: refused.iter().map(|t| format!("{} ({})", t.object.id, t.object.source)).collect(),
        }),
        NamespacePolicy::Filter => {
            let list = watch.unwrap_or_default().join(",");
            let results = refused
                .into_iter()
                .map(|t| ObjectResult {
                    detail: Some(format!("namespace {} is outside watch-namespaces {list}", namespace_of(&t).unwrap_or_default())),
                    id: t.object.id,
                    profile: t.object.profile,
                    action: Action::Refused,
                })
                .collect();
            Ok((kept, results))
        }
    }
}

/// The namespace the policy judges `t` by: a namespaced object's own, a create-only
/// Namespace's name; None for other cluster-scoped objects, which it lets through.
fn namespace_of(t: &Target) -> Option<&str> {
    let id = &t.object.id;
    if t.namespaced {
        return Some(id.namespace.as_deref().unwrap_or_default());
    }
    (t.object.create_only && id.group.is_empty() && id.kind == "Namespace").then_some(id.name.as_str())
}

/// Whether `t` is the relayed store-credentials Secret in the puller's own namespace.
pub(super) fn own_credentials(t: &Target, own: Option<&str>) -> bool {
    let id = &t.object.id;
    t.object.profile == SYSTEM_PART
        && id.group.is_empty()
        && id.kind == "Secret"
        && id.name == STORE_CREDENTIALS_SECRET
        && own.is_some_and(|own| id.namespace.as_deref() == Some(own))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::engine::order::{Class, Stage};
    use crate::engine::scope::crd_scopes;
    use crate::engine::{DesiredObject, ObjectId, testing};

    fn object(api_version: &str, kind: &str, namespace: Option<&str>, manifest: serde_json::Value) -> DesiredObject {
        DesiredObject { manifest: manifest.into(), ..testing::object(api_version, kind, namespace, "x") }
    }

    /// Targets as `scope::resolve` makes them, with scopes from `known` or the bundle's CRDs.
    fn targets(objects: Vec<DesiredObject>, known: &[(&str, bool)]) -> Vec<Target> {
        let defined = crd_scopes(&objects);
        let known: HashMap<&str, bool> = known.iter().copied().collect();
        objects
            .into_iter()
            .map(|object| {
                let namespaced = known
                    .get(object.id.kind.as_str())
                    .copied()
                    .or_else(|| defined.get(&(object.id.group.clone(), object.id.kind.clone())).copied())
                    .expect("scope known");
                let stage = Stage::new(Class::of(&object.id.group, &object.id.kind, namespaced), 0, 100);
                Target { object, served: None, namespaced, stage }
            })
            .collect()
    }

    fn settings(policy: NamespacePolicy) -> Settings {
        Settings {
            cluster: "fleet/edge-1".into(),
            watch_namespaces: Some(vec!["apps".into()]),
            namespace_policy: policy,
            own_namespace: Some("airlock-system".into()),
            dry_run: false,
            concurrency: 4,
            held_back: Default::default(),
            decrypts: false,
            allow_mass_prune: false,
        }
    }

    fn bundle() -> Vec<DesiredObject> {
        let crd = json!({"spec": {"group": "example.com", "names": {"kind": "Widget"}, "scope": "Namespaced"}});
        let cluster_crd = json!({"spec": {"group": "example.com", "names": {"kind": "Gadget"}, "scope": "Cluster"}});
        vec![
            object("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, crd),
            object("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, cluster_crd),
            object("v1", "Namespace", None, json!({})),
            object("v1", "ConfigMap", Some("apps"), json!({})),
            object("v1", "ConfigMap", Some("kube-system"), json!({})),
            object("example.com/v1", "Widget", Some("other"), json!({})),
            object("example.com/v1", "Gadget", Some("other"), json!({})),
        ]
    }

    const KNOWN: [(&str, bool); 3] = [("CustomResourceDefinition", false), ("Namespace", false), ("ConfigMap", true)];

    #[test]
    fn rejects_every_namespaced_object_outside_the_list() {
        let Err(EngineError::OutsideWatchNamespaces { objects }) = enforce(targets(bundle(), &KNOWN), &settings(NamespacePolicy::Reject))
        else {
            panic!("expected a rejection");
        };
        // The Widget's scope comes from the CRD in the same bundle; the cluster-scoped
        // Gadget is unaffected although its manifest names a namespace.
        assert_eq!(objects.len(), 2, "{objects:?}");
        assert!(objects[0].starts_with("ConfigMap kube-system/x"), "{objects:?}");
        assert!(objects[1].starts_with("Widget.example.com other/x"), "{objects:?}");
    }

    #[test]
    fn filter_drops_and_reports_them() {
        let (kept, refused) = enforce(targets(bundle(), &KNOWN), &settings(NamespacePolicy::Filter)).unwrap();
        assert_eq!(kept.len(), 5);
        assert!(kept.iter().all(|t| !t.namespaced || t.object.id.namespace.as_deref() == Some("apps")));
        let refused: Vec<_> = refused.iter().map(|r| (r.id.kind.as_str(), r.action)).collect();
        assert_eq!(refused, vec![("ConfigMap", Action::Refused), ("Widget", Action::Refused)]);
    }

    #[test]
    fn no_list_means_no_restriction() {
        let mut settings = settings(NamespacePolicy::Reject);
        settings.watch_namespaces = None;
        let (kept, refused) = enforce(targets(bundle(), &KNOWN), &settings).unwrap();
        assert_eq!((kept.len(), refused.len()), (7, 0));
    }

    #[test]
    fn a_create_only_namespace_must_be_watched_and_a_plain_one_need_not() {
        let namespace = |name: &str, create_only: bool| DesiredObject { create_only, ..testing::object("v1", "Namespace", None, name) };
        let candidates = vec![namespace("apps", true), namespace("other", true), namespace("other-plain", false)];
        let known = [("Namespace", false)];
        let (kept, refused) = enforce(targets(candidates.clone(), &known), &settings(NamespacePolicy::Filter)).unwrap();
        let names = |t: &[Target]| t.iter().map(|t| t.object.id.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&kept), ["apps", "other-plain"]);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].detail.as_deref(), Some("namespace other is outside watch-namespaces apps"));
        let Err(EngineError::OutsideWatchNamespaces { objects }) = enforce(targets(candidates, &known), &settings(NamespacePolicy::Reject))
        else {
            panic!("expected a rejection");
        };
        assert_eq!(objects, ["Namespace other (ClusterProfile.p/Namespace.yaml document 1)"]);
    }

    #[test]
    fn lets_only_the_relayed_credentials_into_the_own_namespace() {
        let secret = |profile: &str, namespace: &str, name: &str| DesiredObject {
            profile: profile.into(),
            id: ObjectId { name: name.into(), ..object("v1", "Secret", Some(namespace), json!({})).id },
            ..object("v1", "Secret", Some(namespace), json!({}))
        };
        let candidates = vec![
            secret(SYSTEM_PART, "airlock-system", STORE_CREDENTIALS_SECRET),
            secret("ClusterProfile.p", "airlock-system", STORE_CREDENTIALS_SECRET),
            secret(SYSTEM_PART, "airlock-system", "other"),
            secret(SYSTEM_PART, "kube-system", STORE_CREDENTIALS_SECRET),
        ];
        let known = [("Secret", true)];
        let (kept, refused) = enforce(targets(candidates.clone(), &known), &settings(NamespacePolicy::Filter)).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!((kept[0].object.profile.as_str(), kept[0].object.id.name.as_str()), (SYSTEM_PART, STORE_CREDENTIALS_SECRET));
        assert_eq!(refused.len(), 3, "from a profile, under another name, or in another namespace: refused");
        let mut no_own = settings(NamespacePolicy::Filter);
        no_own.own_namespace = None;
        let (kept, _) = enforce(targets(candidates, &known), &no_own).unwrap();
        assert!(kept.is_empty(), "no own namespace, no exception");
    }
}
