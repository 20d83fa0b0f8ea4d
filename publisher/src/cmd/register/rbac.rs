//! What the puller may do on its cluster, in two shapes.
//!
//! - Without watch-namespaces: one ClusterRole with every verb on every resource. This mirrors
//!   Sveltos, whose agents are cluster-admin in effect: a bundle may hold any kind, and the
//!   puller cannot apply (or prune, or check for drift) what it cannot read and write.
//! - With watch-namespaces the grant contains a bundle as the puller's policy does (spec 5.2),
//!   so that a puller that skipped the policy would still be refused by the API server: in
//!   each watched namespace, the ordinary verbs on the kinds of the built-in groups and of
//!   the allow-listed CRDs, and never `impersonate`, `bind`, `escalate`, nor a subresource of
//!   the core group (`serviceaccounts/token`, `pods/exec`); cluster-wide, reading namespaces
//!   and CRDs, updating the watched Namespaces, and writing the allow-listed cluster-scoped
//!   objects by name (creating any object of their kinds: RBAC cannot name what is
//!   created); Endpoints and EndpointSlices only when the registration allows them. Sveltos
//!   leaves this narrowing to the operator; here it is generated.
//!
//! Both add a Role in the puller's own namespace for its state Secret, report ConfigMap and
//! Lease, so narrowing the first shape to the second never takes the puller's state away.
//! This module builds objects; it does not check them against a live cluster.

use std::collections::BTreeMap;

use airlock_bundle::statement::ClusterScopedObject;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use serde_json::Value;

use super::objects::{PULLER, doc, meta};
use super::settings::Registration;

/// The Role in the puller's own namespace.
const STATE_ROLE: &str = "airlock-puller-state";

const WRITE: [&str; 7] = ["get", "list", "watch", "create", "update", "patch", "delete"];
const READ: [&str; 3] = ["get", "list", "watch"];
/// Writing objects known by name. Creating one, by server-side apply too, also needs
/// `create`, which RBAC cannot restrict by name: it is granted for the kind, unnamed.
const BY_NAME: [&str; 4] = ["get", "update", "patch", "delete"];

/// The core group's namespaced kinds, without subresources; Endpoints only when allowed.
const CORE_KINDS: [&str; 11] = [
    "configmaps",
    "events",
    "limitranges",
    "persistentvolumeclaims",
    "pods",
    "podtemplates",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "serviceaccounts",
    "services",
];
/// Built-in groups with namespaced kinds; none serves `impersonate` or a token.
/// `discovery.k8s.io` (EndpointSlices) only when Endpoints are allowed.
const BUILT_IN_GROUPS: [&str; 10] = [
    "apps",
    "autoscaling",
    "batch",
    "coordination.k8s.io",
    "events.k8s.io",
    "extensions",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
];
const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_KIND: &str = "CustomResourceDefinition";

pub fn documents(reg: &Registration) -> Result<Vec<Value>, serde_json::Error> {
    let ns = reg.puller_namespace.as_str();
    let subject = Subject { kind: "ServiceAccount".into(), name: PULLER.into(), namespace: Some(ns.into()), ..Default::default() };
    let cluster_rules = match &reg.watch_namespaces {
        None => vec![rule(&["*"], &["*"], &["*"]), discovery(&["*"])],
        Some(watched) => contained_cluster_rules(watched, &reg.cluster_scoped),
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
    let watched_rules = namespace_rules(&reg.cluster_scoped, reg.containment.allow_endpoints);
    let roles = std::iter::once((ns, STATE_ROLE, state_rules))
        .chain(reg.watch_namespaces.iter().flatten().map(|w| (w.as_str(), shared.as_str(), watched_rules.clone())));
    for (namespace, name, rules) in roles {
        docs.push(doc(&Role { metadata: meta(name, Some(namespace)), rules: Some(rules) })?);
        docs.push(doc(&RoleBinding {
            metadata: meta(name, Some(namespace)),
            role_ref: role_ref("Role", name),
            subjects: Some(vec![subject.clone()]),
        })?);
    }
    docs.extend(tenant_documents(reg, &shared, &subject)?);
    Ok(docs)
}

/// Per namespace of `--tenant`, a Role letting the puller impersonate exactly its tenant
/// ServiceAccounts there, by name, and its binding. Impersonating a ServiceAccount needs
/// nothing on users or groups: the API server adds the ServiceAccount's groups itself.
fn tenant_documents(reg: &Registration, name: &str, subject: &Subject) -> Result<Vec<Value>, serde_json::Error> {
    let mut by_namespace: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for tenant in &reg.tenants {
        by_namespace.entry(tenant.namespace.as_str()).or_default().push(tenant.name.clone());
    }
    let name = format!("{name}:tenants");
    let mut docs = Vec::new();
    for (namespace, accounts) in by_namespace {
        let rules = vec![named(rule(&[""], &["serviceaccounts"], &["impersonate"]), accounts)];
        docs.push(doc(&Role { metadata: meta(&name, Some(namespace)), rules: Some(rules) })?);
        docs.push(doc(&RoleBinding {
            metadata: meta(&name, Some(namespace)),
            role_ref: role_ref("Role", &name),
            subjects: Some(vec![subject.clone()]),
        })?);
    }
    Ok(docs)
}

/// Cluster-wide, with watch-namespaces: read namespaces and CRDs; update the watched
/// Namespaces; write the allow-listed objects by name, and create objects of their kinds.
fn contained_cluster_rules(watched: &[String], allowed: &[ClusterScopedObject]) -> Vec<PolicyRule> {
    let mut by_kind: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for entry in allowed {
        by_kind.entry((entry.group.as_str(), entry.kind.as_str())).or_default().push(entry.name.clone());
    }
    let mut rules = vec![
        rule(&[""], &["namespaces"], &READ),
        named(rule(&[""], &["namespaces"], &["patch", "update"]), watched.to_vec()),
        rule(&[CRD_GROUP], &["customresourcedefinitions"], &READ),
    ];
    for ((group, kind), names) in by_kind {
        let resource = resource_of(kind);
        rules.push(rule(&[group], &[&resource], &["create"]));
        rules.push(named(rule(&[group], &[&resource], &BY_NAME), names));
    }
    rules.push(discovery(&["/api", "/api/*", "/apis", "/apis/*", "/version", "/openapi", "/openapi/*"]));
    rules
}

/// In each watched namespace: the ordinary verbs on the core kinds, on the built-in groups'
/// kinds, and on the kinds of the allow-listed CRDs (a CRD's name is `<plural>.<group>`).
/// Endpoints and EndpointSlices, which can send a Service's traffic anywhere, only when
/// the registration allows them.
fn namespace_rules(allowed: &[ClusterScopedObject], endpoints: bool) -> Vec<PolicyRule> {
    let verbs: Vec<&str> = WRITE.iter().copied().chain(["deletecollection"]).collect();
    let mut rules = vec![rule(&[""], &CORE_KINDS, &verbs), rule(&BUILT_IN_GROUPS, &["*"], &verbs)];
    if endpoints {
        rules.push(rule(&[""], &["endpoints"], &verbs));
        rules.push(rule(&["discovery.k8s.io"], &["endpointslices"], &verbs));
    }
    for crd in allowed.iter().filter(|e| e.group == CRD_GROUP && e.kind == CRD_KIND) {
        if let Some((plural, group)) = crd.name.split_once('.') {
            rules.push(rule(&[group], &[plural], &verbs));
        }
    }
    rules
}

/// The resource of a kind as Kubernetes guesses it without discovery: lower-cased, `es`
/// after s, x, z, ch or sh, `ies` for a `y` after a consonant, else `s`.
pub fn resource_of(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with(['s', 'x', 'z']) || lower.ends_with("ch") || lower.ends_with("sh") {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

fn named(rule: PolicyRule, names: Vec<String>) -> PolicyRule {
    PolicyRule { resource_names: Some(names), ..rule }
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
