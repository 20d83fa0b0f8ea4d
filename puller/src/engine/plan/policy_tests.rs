use std::collections::HashMap;

use serde_json::{Value, json};

use super::*;
use crate::engine::model::order::{Class, Stage};
use crate::engine::plan::scope::crd_scopes;
use crate::engine::{DesiredObject, testing};

fn named(api_version: &str, kind: &str, namespace: Option<&str>, name: &str, manifest: Value) -> DesiredObject {
    DesiredObject { manifest: manifest.into(), ..testing::object(api_version, kind, namespace, name) }
}

fn object(api_version: &str, kind: &str, namespace: Option<&str>, manifest: Value) -> DesiredObject {
    named(api_version, kind, namespace, "x", manifest)
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
        watch_namespaces: Some(vec!["apps".into()]),
        namespace_policy: policy,
        own_namespace: Some("airlock-system".into()),
        ..testing::settings("fleet/edge-1")
    }
}

fn allowing(policy: NamespacePolicy, entries: &str) -> Settings {
    Settings { cluster_scoped: airlock_bundle::statement::parse_cluster_scoped(entries).unwrap(), ..settings(policy) }
}

fn crd(name: &str, group: &str, kind: &str, scope: &str) -> DesiredObject {
    let spec = json!({"spec": {"group": group, "names": {"kind": kind}, "scope": scope}});
    named("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, name, spec)
}

fn bundle() -> Vec<DesiredObject> {
    vec![
        crd("widgets.example.com", "example.com", "Widget", "Namespaced"),
        crd("gadgets.example.com", "example.com", "Gadget", "Cluster"),
        named("v1", "Namespace", None, "apps", json!({})),
        object("v1", "ConfigMap", Some("apps"), json!({})),
        object("v1", "ConfigMap", Some("kube-system"), json!({})),
        object("example.com/v1", "Widget", Some("other"), json!({})),
        object("example.com/v1", "Widget", Some("apps"), json!({})),
        object("example.com/v1", "Gadget", Some("other"), json!({})),
    ]
}

const KNOWN: [(&str, bool); 3] = [("CustomResourceDefinition", false), ("Namespace", false), ("ConfigMap", true)];

/// The objects `enforce` refuses under `reject`, as it lists them.
fn rejected(objects: Vec<DesiredObject>, known: &[(&str, bool)], settings: &Settings) -> Vec<String> {
    match enforce(targets(objects, known), &Settings { namespace_policy: NamespacePolicy::Reject, ..settings.clone() }) {
        Err(EngineError::OutsideWatchNamespaces { objects }) => objects,
        Ok((kept, _)) => panic!("expected a rejection, kept {}", kept.len()),
        Err(other) => panic!("expected a rejection, got {other}"),
    }
}

#[test]
fn rejects_every_object_outside_the_list_and_every_unlisted_cluster_scoped_one() {
    let objects = rejected(bundle(), &KNOWN, &settings(NamespacePolicy::Reject));
    // The Widget's scope comes from the CRD in the same bundle; the Gadget is cluster-scoped
    // although its manifest names a namespace.
    assert_eq!(objects.len(), 5, "{objects:?}");
    let cluster_scoped = "cluster-scoped and not in clusterScoped";
    assert_eq!(
        objects[0],
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com (ClusterProfile.p/CustomResourceDefinition.yaml document 1): {cluster_scoped}"
        )
    );
    assert!(objects[1].starts_with("CustomResourceDefinition.apiextensions.k8s.io gadgets.example.com"), "{objects:?}");
    assert!(objects[2].starts_with("ConfigMap kube-system/x ("), "{objects:?}");
    assert!(objects[3].starts_with("Widget.example.com other/x ("), "{objects:?}");
    assert!(objects[4].starts_with("Gadget.example.com other/x (") && objects[4].ends_with(cluster_scoped), "{objects:?}");
}

#[test]
fn the_allow_list_lets_exactly_the_named_objects_through() {
    let settings = allowing(
        NamespacePolicy::Reject,
        "CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com, CustomResourceDefinition.apiextensions.k8s.io/gadgets.example.com, Gadget.example.com/x",
    );
    let objects = rejected(bundle(), &KNOWN, &settings);
    assert_eq!(objects.len(), 2, "only the namespaced ones outside the list remain: {objects:?}");
    assert!(objects[0].starts_with("ConfigMap kube-system/x") && objects[1].starts_with("Widget.example.com other/x"), "{objects:?}");
    let other_name = allowing(NamespacePolicy::Reject, "Gadget.example.com/y");
    assert!(rejected(bundle(), &KNOWN, &other_name).iter().any(|o| o.starts_with("Gadget.example.com other/x")), "names match exactly");
}

#[test]
fn refuses_each_cluster_scoped_kind_that_would_widen_the_grant() {
    let kinds = [
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
        ("apiregistration.k8s.io/v1", "APIService"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("storage.k8s.io/v1", "StorageClass"),
    ];
    let known: Vec<(&str, bool)> = kinds.iter().map(|(_, kind)| (*kind, false)).collect();
    let objects = kinds.iter().map(|(api_version, kind)| object(api_version, kind, None, json!({}))).collect();
    let refused = rejected(objects, &known, &settings(NamespacePolicy::Reject));
    assert_eq!(refused.len(), kinds.len(), "{refused:?}");
    for ((_, kind), line) in kinds.iter().zip(&refused) {
        assert!(line.starts_with(&format!("{kind}.")) && line.ends_with("cluster-scoped and not in clusterScoped"), "{line}");
    }
}

#[test]
fn a_crd_with_a_conversion_webhook_is_refused_even_when_listed() {
    let mut webhook = crd("gadgets.example.com", "example.com", "Gadget", "Cluster");
    webhook.manifest =
        json!({"spec": {"group": "example.com", "names": {"kind": "Gadget"}, "scope": "Cluster", "conversion": {"strategy": "Webhook"}}})
            .into();
    let listed = allowing(NamespacePolicy::Reject, "CustomResourceDefinition.apiextensions.k8s.io/gadgets.example.com");
    let refused = rejected(vec![webhook], &KNOWN, &listed);
    assert_eq!(refused.len(), 1);
    assert!(refused[0].ends_with("a CustomResourceDefinition with a conversion webhook"), "{refused:?}");
}

#[test]
fn filter_drops_and_reports_them() {
    let (kept, refused) = enforce(targets(bundle(), &KNOWN), &settings(NamespacePolicy::Filter)).unwrap();
    let names: Vec<String> = kept.iter().map(|t| t.object.id.to_string()).collect();
    assert_eq!(names, ["Namespace apps", "ConfigMap apps/x", "Widget.example.com apps/x"]);
    let refused: Vec<_> = refused.iter().map(|r| (r.id.kind.as_str(), r.action, r.detail.clone().unwrap_or_default())).collect();
    assert_eq!(refused.len(), 5);
    assert!(refused.iter().all(|r| r.1 == Action::Refused));
    assert_eq!(refused[2], ("ConfigMap", Action::Refused, "namespace kube-system is outside watch-namespaces apps".into()));
    assert_eq!(refused[4].2, "cluster-scoped and not in clusterScoped");
}

#[test]
fn no_list_means_no_restriction() {
    let mut settings = settings(NamespacePolicy::Reject);
    settings.watch_namespaces = None;
    let (kept, refused) = enforce(targets(bundle(), &KNOWN), &settings).unwrap();
    assert_eq!((kept.len(), refused.len()), (8, 0));
}

#[test]
fn a_namespace_must_be_watched_or_listed() {
    let namespace = |name: &str, create_only: bool| DesiredObject { create_only, ..testing::object("v1", "Namespace", None, name) };
    let candidates = vec![
        namespace("apps", true),
        namespace("apps", false),
        namespace("other", true),
        namespace("other-plain", false),
        namespace("extra", false),
    ];
    let known = [("Namespace", false)];
    let filter = allowing(NamespacePolicy::Filter, "Namespace/extra");
    let (kept, refused) = enforce(targets(candidates.clone(), &known), &filter).unwrap();
    let names = |t: &[Target]| t.iter().map(|t| t.object.id.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&kept), ["apps", "apps", "extra"]);
    let details: Vec<_> = refused.iter().map(|r| r.detail.as_deref().unwrap_or_default()).collect();
    assert_eq!(details, ["namespace other is outside watch-namespaces apps", "cluster-scoped and not in clusterScoped"]);
    let objects = rejected(candidates, &known, &filter);
    assert_eq!(objects[0], "Namespace other (ClusterProfile.p/Namespace.yaml document 1)");
}

#[test]
fn lets_only_the_relayed_credentials_into_the_own_namespace() {
    let secret = |profile: &str, namespace: &str, name: &str| DesiredObject {
        profile: profile.into(),
        ..named("v1", "Secret", Some(namespace), name, json!({}))
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
    assert_eq!(refused[0].detail.as_deref(), Some("namespace airlock-system is the puller's own"));
    let mut no_own = settings(NamespacePolicy::Filter);
    no_own.own_namespace = None;
    let (kept, _) = enforce(targets(candidates, &known), &no_own).unwrap();
    assert!(kept.is_empty(), "no own namespace, no exception");
}

#[test]
fn the_own_namespace_stays_closed_even_when_watched_or_listed() {
    let mut settings = allowing(NamespacePolicy::Reject, "Namespace/airlock-system");
    settings.watch_namespaces = Some(vec!["apps".into(), "airlock-system".into()]);
    let own = [
        object("v1", "ConfigMap", Some("airlock-system"), json!({})),
        named("v1", "Secret", Some("airlock-system"), "airlock-state-edge-1", json!({})),
        named("coordination.k8s.io/v1", "Lease", Some("airlock-system"), "airlock-puller", json!({})),
        named("v1", "Namespace", None, "airlock-system", json!({})),
    ];
    let known = [("ConfigMap", true), ("Secret", true), ("Lease", true), ("Namespace", false)];
    let refused = rejected(own.to_vec(), &known, &settings);
    assert_eq!(refused.len(), 4, "{refused:?}");
    assert!(refused.iter().all(|o| o.ends_with(": namespace airlock-system is the puller's own")), "{refused:?}");
}

#[test]
fn rejects_a_watched_namespace_that_sets_the_operators_keys() {
    let labelled = |name: &str, metadata: Value| named("v1", "Namespace", None, name, json!({"metadata": metadata}));
    let candidates = vec![
        labelled("apps", json!({"labels": {"pod-security.kubernetes.io/enforce": "privileged", "team": "web"}})),
        labelled("apps", json!({"annotations": {"example.com/exempt": "true"}, "labels": {"team": "web"}})),
        labelled("apps", json!({"labels": {"team": "web"}})),
    ];
    let known = [("Namespace", false)];
    let refused = rejected(candidates.clone(), &known, &settings(NamespacePolicy::Reject));
    assert_eq!(
        refused,
        ["Namespace apps (ClusterProfile.p/Namespace.yaml document 1): label pod-security.kubernetes.io/enforce protected: set by the cluster's operator, never by a bundle".to_string()],
        "Pod Security's labels always; other keys only when the settings name them"
    );
    let extended = Settings { protected_namespace_keys: vec!["example.com/*".into()], ..settings(NamespacePolicy::Reject) };
    let refused = rejected(candidates.clone(), &known, &extended);
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[1].ends_with(": annotation example.com/exempt protected: set by the cluster's operator, never by a bundle"));
    let unconfined = Settings { watch_namespaces: None, ..extended };
    assert_eq!(enforce(targets(candidates, &known), &unconfined).unwrap().0.len(), 3, "without watch-namespaces nothing is kept");
}

#[test]
fn rejects_endpoints_and_endpoint_slices_unless_the_site_allows_them() {
    let candidates = vec![
        object("v1", "Endpoints", Some("apps"), json!({})),
        object("discovery.k8s.io/v1beta1", "EndpointSlice", Some("apps"), json!({})),
        object("v1", "Service", Some("apps"), json!({})),
    ];
    let known = [("Endpoints", true), ("EndpointSlice", true), ("Service", true)];
    let refused = rejected(candidates.clone(), &known, &settings(NamespacePolicy::Reject));
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[0].starts_with("Endpoints apps/x (") && refused[1].starts_with("EndpointSlice.discovery.k8s.io apps/x ("));
    assert!(refused.iter().all(|r| r.ends_with("can redirect a Service; the site does not allow them")), "{refused:?}");
    let allowed = Settings { allow_endpoints: true, ..settings(NamespacePolicy::Reject) };
    assert_eq!(enforce(targets(candidates, &known), &allowed).unwrap().0.len(), 3);
}
