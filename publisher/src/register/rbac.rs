//! What the puller may do on its cluster, in two shapes.
//!
//! - Without watch-namespaces: one ClusterRole with every verb on every resource. This mirrors
//!   Sveltos, whose agents are cluster-admin in effect: a bundle may hold any kind, and the
//!   puller cannot apply (or prune, or check for drift) what it cannot read and write.
//! - With watch-namespaces: namespaced kinds only through a Role in each watched namespace;
//!   cluster-wide only reading namespaces (and updating the watched ones, which the bundle may
//!   label), managing CustomResourceDefinitions (a bundle may carry a CRD and its instances)
//!   and discovery. Sveltos leaves this narrowing to the operator; here it is generated.
//!
//! Both add a Role in the puller's own namespace for its state Secret, report ConfigMap and
//! Lease, so narrowing the first shape to the second never takes the puller's state away.
//! This module builds objects; it does not check them against a live cluster.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use serde_json::Value;

use super::objects::{PULLER, doc, meta};
use super::settings::Registration;

/// The Role in the puller's own namespace.
const STATE_ROLE: &str = "airlock-puller-state";

const WRITE: [&str; 7] = ["get", "list", "watch", "create", "update", "patch", "delete"];
const READ: [&str; 3] = ["get", "list", "watch"];

pub fn documents(reg: &Registration) -> Result<Vec<Value>, serde_json::Error> {
    let ns = reg.puller_namespace.as_str();
    let subject = Subject { kind: "ServiceAccount".into(), name: PULLER.into(), namespace: Some(ns.into()), ..Default::default() };
    let cluster_rules = match &reg.watch_namespaces {
        None => vec![rule(&["*"], &["*"], &["*"]), discovery(&["*"])],
        Some(watched) => vec![
            rule(&[""], &["namespaces"], &READ),
            PolicyRule { resource_names: Some(watched.clone()), ..rule(&[""], &["namespaces"], &["patch", "update"]) },
            rule(&["apiextensions.k8s.io"], &["customresourcedefinitions"], &WRITE),
            discovery(&["/api", "/api/*", "/apis", "/apis/*", "/version", "/openapi", "/openapi/*"]),
        ],
    };
    // Outside its own namespace, names carry the puller's namespace: two pullers on one
    // cluster (two fleets, or a test beside the quickstart) must not rebind each other's roles.
    let shared = format!("{PULLER}:{ns}");
    let mut docs = vec![
        doc(&ClusterRole { metadata: meta(&shared, None), rules: Some(cluster_rules), ..Default::default() })?,
        doc(&ClusterRoleBinding {
            metadata: meta(&shared, None),
            role_ref: role_ref("ClusterRole", &shared),
            subjects: Some(vec![subject.clone()]),
        })?,
    ];
    let state_rules = vec![rule(&[""], &["secrets", "configmaps"], &WRITE), rule(&["coordination.k8s.io"], &["leases"], &WRITE)];
    let everything = || vec![rule(&["*"], &["*"], &["*"])];
    let roles = std::iter::once((ns, STATE_ROLE, state_rules))
        .chain(reg.watch_namespaces.iter().flatten().map(|w| (w.as_str(), shared.as_str(), everything())));
    for (namespace, name, rules) in roles {
        docs.push(doc(&Role { metadata: meta(name, Some(namespace)), rules: Some(rules) })?);
        docs.push(doc(&RoleBinding {
            metadata: meta(name, Some(namespace)),
            role_ref: role_ref("Role", name),
            subjects: Some(vec![subject.clone()]),
        })?);
    }
    Ok(docs)
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    PolicyRule { api_groups: Some(strings(groups)), resources: Some(strings(resources)), verbs: strings(verbs), ..Default::default() }
}

fn discovery(urls: &[&str]) -> PolicyRule {
    PolicyRule { non_resource_urls: Some(urls.iter().map(|u| u.to_string()).collect()), verbs: vec!["get".into()], ..Default::default() }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef { api_group: "rbac.authorization.k8s.io".into(), kind: kind.into(), name: name.into() }
}
