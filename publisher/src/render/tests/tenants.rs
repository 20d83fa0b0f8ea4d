//! Tenants: a profile's ServiceAccount labels signed as its part's `serviceAccount`, and a
//! RoleRequest rendered into a part of its own for the clusters its selector matches.

use super::*;

const ROLES: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: edit, namespace: apps}\n\
                     rules: [{apiGroups: [''], resources: [configmaps], verbs: [get, create, patch]}]\n";

fn role_request(selector: &str) -> String {
    format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: RoleRequest\nmetadata: {{name: team-a}}\n\
         spec:\n  serviceAccountName: deployer\n  serviceAccountNamespace: apps\n  clusterSelector: {{matchLabels: {{{selector}}}}}\n\
         \x20 roleRefs: [{{kind: ConfigMap, namespace: defs, name: roles}}]\n---\n{}",
        config_map("roles", "defs", ROLES)
    )
}

#[test]
fn a_role_request_renders_the_tenants_account_role_and_binding_where_it_matches() {
    let w = world(&role_request("region: eu"));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    let paths: Vec<&str> = r.bundle.files().map(|(p, _)| p).filter(|p| p.starts_with("RoleRequest.team-a/")).collect();
    let text: String = paths.iter().map(|p| file(&r, p)).collect();
    for kind in ["kind: Role\n", "kind: RoleBinding\n", "kind: ServiceAccount\n"] {
        assert!(text.contains(kind), "{kind} in {paths:?}:\n{text}");
    }
    assert!(text.contains("name: deployer") && text.contains("projectsveltos.io/role-request: ok"), "{text}");
    let settings = &r.settings["RoleRequest.team-a"];
    assert_eq!(settings.service_account, None, "a RoleRequest part is applied as the puller");
    let other = render_for(&w, "fleet/us-1").unwrap();
    assert!(!other.settings.contains_key("RoleRequest.team-a"), "the selector does not match us-1");
}

#[test]
fn a_labelled_profile_signs_its_tenant() {
    let labelled = web_profile("tenant").replace(
        "metadata: {name: tenant}",
        "metadata: {name: tenant, labels: {projectsveltos.io/serviceaccount-name: deployer, projectsveltos.io/serviceaccount-namespace: apps}}",
    );
    let w = world(&format!("{labelled}---\n{}", profile("plain", 100, "region: eu", "{kind: ConfigMap, namespace: defs, name: web}")));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    let tenant = r.settings["ClusterProfile.tenant"].service_account.as_ref().expect("the tenant is signed");
    assert_eq!(tenant.to_string(), "apps/deployer");
    assert_eq!(r.settings["ClusterProfile.plain"].service_account, None);
    assert!(r.settings["ClusterProfile.tenant"].depends_on.is_empty(), "no RoleRequest grants it here");

    // With the RoleRequest granting that tenant, its part is applied first.
    let w = world(&format!(
        "{labelled}---
{}",
        role_request("region: eu")
    ));
    let r = render_for(&w, "fleet/eu-1").unwrap();
    assert_eq!(r.settings["ClusterProfile.tenant"].depends_on, ["RoleRequest.team-a"]);
}
