//! The chart's RBAC, held to its README and checked on a real API server: `helm lint`,
//! `helm template | kubectl apply --dry-run=server`, then `helm install` on the management
//! API server (no pod has to run for RBAC). The rules installed are exactly the README's
//! table, and SubjectAccessReviews as the chart's ServiceAccount find each of them allowed
//! and a list of things it must not do refused.

use std::collections::BTreeSet;

use airlock_e2e::assert_exit;
use airlock_e2e::probe::service_account_may;
use airlock_e2e::publisher::{kubectl, kubectl_ok};
use k8s_openapi::api::authorization::v1::ResourceAttributes;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use kube::api::Api;

use super::{chart_dir, helm};

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
/// How the README's table names the scope of a Role's rule.
const RELEASE_NAMESPACE: &str = "release namespace";
/// The scope of a Role's rule only `publish.shardKey` or `publish.scaleOut` grant.
const SHARDED: &str = "release namespace, sharded";

/// One verb on one resource (`resource/subresource`), maybe one name, in one scope.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    group: String,
    resource: String,
    name: Option<String>,
    verb: String,
    /// `cluster` or [`RELEASE_NAMESPACE`].
    scope: String,
}

/// The grants the table of `charts/airlock/README.md` lists.
fn readme_grants() -> BTreeSet<Grant> {
    let readme = std::fs::read_to_string(airlock_e2e::root().join("charts/airlock/README.md")).expect("the chart's README");
    let (_, text) = readme.split_once("\n## RBAC\n").expect("the README's RBAC section");
    let unquote = |s: &str| s.trim().trim_matches('`').to_string();
    let mut grants = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 6 {
            continue;
        }
        let group = match unquote(cells[1]).as_str() {
            "core" => String::new(),
            g => g.to_string(),
        };
        let (resource, name) = match cells[2].split_once(" named ") {
            Some((r, n)) => (unquote(r), Some(unquote(n))),
            None => (unquote(cells[2]), None),
        };
        for verb in cells[3].split(',') {
            let (group, resource, name) = (group.clone(), resource.clone(), name.clone());
            grants.insert(Grant { group, resource, name, verb: verb.trim().to_string(), scope: cells[4].to_string() });
        }
    }
    grants
}

/// The grants of `rules`, in `scope`.
fn grants_of(rules: &[PolicyRule], scope: &str) -> BTreeSet<Grant> {
    let mut grants = BTreeSet::new();
    for rule in rules {
        let names: Vec<Option<String>> = match rule.resource_names.as_deref() {
            Some(names) if !names.is_empty() => names.iter().cloned().map(Some).collect(),
            _ => vec![None],
        };
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    for name in &names {
                        let (group, resource, name, verb, scope) =
                            (group.clone(), resource.clone(), name.clone(), verb.clone(), scope.into());
                        grants.insert(Grant { group, resource, name, verb, scope });
                    }
                }
            }
        }
    }
    grants
}

/// Whether the ServiceAccount `account` may `verb` on `resource` (`r/sub`) of `group` in
/// `namespace` (empty: every namespace), named `name` if given.
async fn allowed(
    client: &kube::Client,
    account: (&str, &str),
    group: &str,
    resource: &str,
    verb: &str,
    namespace: &str,
    name: Option<&str>,
) -> bool {
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_string())),
        None => (resource, None),
    };
    let attributes = ResourceAttributes {
        group: Some(group.into()),
        resource: Some(resource.into()),
        subresource,
        verb: Some(verb.into()),
        namespace: Some(namespace.into()),
        name: name.map(str::to_string),
        ..Default::default()
    };
    service_account_may(client, account, attributes).await
}

/// Removes the release and its namespace, also when the test failed.
struct Installed(String);

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = helm(MANAGEMENT, &["uninstall", &self.0, "-n", &self.0]);
        kubectl(MANAGEMENT, &["delete", "namespace", &self.0, "--wait=false", "--ignore-not-found"], b"");
    }
}

#[tokio::test]
async fn the_service_account_may_do_what_the_readme_lists_and_nothing_more() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ns = format!("chart-rbac-{}", std::process::id());
    let values = [
        "--set=image.repository=127.0.0.1:5000/airlock/puller",
        "--set=store.url=oci+http://127.0.0.1:5000/airlock",
        "--set=signing.secretName=airlock-signing-key",
        r#"--set-json=publish.mirrors=["https://charts.example=http://127.0.0.1:8879"]"#,
    ];
    let chart = chart_dir();
    assert_exit(&helm(MANAGEMENT, &[&["lint", &chart][..], &values].concat()), 0);
    kubectl_ok(MANAGEMENT, &["create", "namespace", &ns], b"");
    let installed = Installed(ns.clone());
    let template = helm(MANAGEMENT, &[&["template", &ns, &chart, "-n", &ns][..], &values].concat());
    assert_exit(&template, 0);
    assert!(template.stdout.contains("- --mirror=https://charts.example=http://127.0.0.1:8879\n"), "{}", template.stdout);
    kubectl_ok(MANAGEMENT, &["apply", "--dry-run=server", "-f", "-"], template.stdout.as_bytes());
    assert_exit(&helm(MANAGEMENT, &[&["install", &ns, &chart, "-n", &ns][..], &values].concat()), 0);

    let client = airlock_e2e::kube_client(&airlock_e2e::service_env(MANAGEMENT)).await;
    let name = format!("{ns}-airlock");
    let cluster_role = Api::<ClusterRole>::all(client.clone()).get(&name).await.expect("the ClusterRole");
    let role = Api::<Role>::namespaced(client.clone(), &ns).get(&name).await.expect("the Role");
    let mut installed_grants = grants_of(cluster_role.rules.as_deref().unwrap_or_default(), "cluster");
    installed_grants.extend(grants_of(role.rules.as_deref().unwrap_or_default(), RELEASE_NAMESPACE));
    let (sharded, listed): (BTreeSet<Grant>, BTreeSet<Grant>) = readme_grants().into_iter().partition(|g| g.scope == SHARDED);
    assert_eq!(installed_grants, listed, "the chart's rules and its README's table differ");
    // Scaled out, the one named Lease gives way to the Leases the README lists for it.
    let scaled = helm(MANAGEMENT, &[&["template", &ns, &chart, "-n", &ns, "--set=publish.scaleOut=true"][..], &values].concat());
    assert_exit(&scaled, 0);
    let role = scaled.stdout.split("\n---").find(|d| d.contains("\nkind: Role\n")).expect("a Role when scaled out");
    let verbs: Vec<&str> = sharded.iter().map(|g| g.verb.as_str()).collect();
    assert!(role.contains(&format!("verbs: [{}]", verbs.join(", "))) && !role.contains("resourceNames"), "{role}");

    let account = (ns.as_str(), name.as_str());
    for g in &listed {
        let namespace = if g.scope == RELEASE_NAMESPACE { ns.as_str() } else { "" };
        let yes = allowed(&client, account, &g.group, &g.resource, &g.verb, namespace, g.name.as_deref()).await;
        assert!(yes, "{g:?} is listed but not allowed");
    }
    let refused = [
        ("", "secrets", "create", ""),
        ("", "secrets", "update", ""),
        ("", "secrets", "delete", ""),
        ("", "configmaps", "patch", ""),
        ("", "pods", "create", ns.as_str()),
        ("", "serviceaccounts/token", "create", ns.as_str()),
        ("", "namespaces", "delete", ""),
        ("lib.projectsveltos.io", "sveltosclusters", "delete", ""),
        ("lib.projectsveltos.io", "sveltosclusters", "update", ""),
        ("config.projectsveltos.io", "clusterprofiles", "patch", ""),
        ("config.projectsveltos.io", "profiles", "delete", ""),
        ("apps", "deployments", "patch", ns.as_str()),
        ("rbac.authorization.k8s.io", "clusterrolebindings", "create", ""),
        ("rbac.authorization.k8s.io", "clusterroles", "escalate", ""),
        ("coordination.k8s.io", "leases", "delete", ns.as_str()),
        ("coordination.k8s.io", "leases", "get", "kube-system"),
    ];
    for (group, resource, verb, namespace) in refused {
        let yes = allowed(&client, account, group, resource, verb, namespace, None).await;
        assert!(!yes, "{verb} {group}/{resource} in {namespace:?} must be refused");
    }
    let other = allowed(&client, account, "coordination.k8s.io", "leases", "update", &ns, Some("another-lease")).await;
    assert!(!other, "only the Lease airlock-publisher may be updated");
    drop(installed);
}
