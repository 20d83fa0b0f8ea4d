//! `register cluster --tenant NAMESPACE/NAME`: the tenant ServiceAccounts whose parts the
//! puller applies as them (spec 5.3). Each is granted to the puller as `impersonate` on that
//! one ServiceAccount, by name, in a Role of its namespace (`rbac`); nothing on users or
//! groups, since the API server adds a ServiceAccount's groups to an impersonated
//! ServiceAccount without checking them. A contained puller's tenants must live in its
//! watched namespaces, as its policy requires of a bundle's.

use airlock_bundle::statement::ServiceAccountRef;
use airlock_bundle::statement::tenant::{check_name, check_namespace};
use anyhow::{bail, ensure};

/// The tenants of `--tenant`, sorted and without repeats; `watch` and `own` are the
/// registration's watch-namespaces and the puller's namespace.
pub fn parse_tenants(items: &[String], watch: Option<&[String]>, own: &str) -> anyhow::Result<Vec<ServiceAccountRef>> {
    let mut tenants = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        let Some((namespace, name)) = item.split_once('/') else {
            bail!("--tenant {item:?}: expected NAMESPACE/NAME of a ServiceAccount");
        };
        check_namespace(namespace).map_err(|why| anyhow::anyhow!("--tenant {item:?}: namespace {why}"))?;
        check_name(name).map_err(|why| anyhow::anyhow!("--tenant {item:?}: name {why}"))?;
        ensure!(namespace != own, "--tenant {item:?}: {own:?} is the puller's own namespace (its state and keys)");
        if let Some(watch) = watch {
            ensure!(
                watch.iter().any(|w| w == namespace),
                "--tenant {item:?}: namespace {namespace:?} is not in --watch-namespaces, so the puller refuses a bundle naming it"
            );
        }
        tenants.push(ServiceAccountRef { namespace: namespace.into(), name: name.into() });
    }
    tenants.sort();
    tenants.dedup();
    Ok(tenants)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_are_service_accounts_of_watched_namespaces() {
        let watch = ["team-a".to_string(), "team-b".to_string()];
        let items = ["team-b/deployer".to_string(), " team-a/deployer ".into(), "team-b/deployer".into()];
        let tenants = parse_tenants(&items, Some(&watch), "airlock-system").unwrap();
        assert_eq!(tenants.iter().map(ToString::to_string).collect::<Vec<_>>(), ["team-a/deployer", "team-b/deployer"]);
        assert!(parse_tenants(&["kube-system/x".into()], None, "airlock-system").is_ok(), "an uncontained puller may name any");
    }

    #[test]
    fn the_puller_may_impersonate_exactly_the_tenants() {
        let (_, docs) =
            crate::cmd::register::tests::render(&["--watch-namespaces", "team-a,team-b", "--tenant", "team-a/deployer,team-a/ci"]);
        let named = |kind: &str| -> Vec<&serde_json::Value> {
            docs.iter().filter(|d| d["kind"] == kind && d["metadata"]["name"] == "airlock-puller:airlock-system:tenants").collect()
        };
        let roles = named("Role");
        assert_eq!(roles.len(), 1, "one Role, in team-a only");
        assert_eq!(roles[0]["metadata"]["namespace"], "team-a");
        assert_eq!(
            roles[0]["rules"],
            serde_json::json!([{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"], "resourceNames": ["ci", "deployer"]}])
        );
        let binding = named("RoleBinding")[0];
        assert_eq!(binding["subjects"][0]["name"], "airlock-puller");
        let impersonates = |d: &&serde_json::Value| serde_json::to_string(&d["rules"]).unwrap().contains("impersonate");
        assert_eq!(docs.iter().filter(impersonates).count(), 1, "nothing else grants impersonate, on users or groups least of all");
    }

    #[test]
    fn rejects_a_tenant_the_puller_would_refuse() {
        let watch = ["team-a".to_string()];
        let err = |item: &str| parse_tenants(&[item.to_string()], Some(&watch), "airlock-system").unwrap_err().to_string();
        assert!(err("team-a").contains("expected NAMESPACE/NAME"));
        assert!(err("team-b/deployer").contains("namespace \"team-b\" is not in --watch-namespaces"));
        assert!(err("team-a/De:ployer").contains("name \"De:ployer\" is not a Kubernetes ServiceAccount name"));
        assert!(err("Team/x").contains("namespace \"Team\" is not a Kubernetes namespace name"));
        let own = parse_tenants(&["airlock-system/x".into()], None, "airlock-system").unwrap_err().to_string();
        assert!(own.contains("the puller's own namespace"), "{own}");
    }
}
