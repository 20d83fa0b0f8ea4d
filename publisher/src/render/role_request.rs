//! A RoleRequest's part (bundles-format.md 2.3, 5.13): what Sveltos's access-manager
//! creates in a managed cluster for the tenant a RoleRequest names. Of the objects its
//! `roleRefs` hold (prepared as any policyRef's), the Roles and ClusterRoles are kept and
//! anything else is left out, as Sveltos skips it; each Role gets a RoleBinding and each
//! ClusterRole a ClusterRoleBinding of the same name and namespace, binding it to the
//! tenant's ServiceAccount, which the part creates too. The bindings and the
//! ServiceAccount carry Sveltos's `projectsveltos.io/role-request` label.
//!
//! One difference from Sveltos, which creates the ServiceAccount `<namespace>--<name>` in
//! its own namespace on the managed cluster and deploys a tenant's profiles with its token:
//! the part creates the ServiceAccount of the RoleRequest's own namespace and name, the
//! one a tenant's parts name and the puller impersonates (`serviceAccount`, 5.13), since
//! the managed cluster has no Sveltos namespace and a contained puller may write only in
//! its watched namespaces. The implicit Namespaces of the roles' namespaces stay.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use airlock_bundle::statement::ServiceAccountRef;
use serde_json::{Value, json};

use super::object::Object;
use super::prepared::Prepared;
use crate::sources::ObjectKey;
use crate::sources::model::{Profile, ProfileKind};
use crate::yaml;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The label Sveltos puts on every object it creates for a RoleRequest.
const ROLE_REQUEST_LABEL: &str = "projectsveltos.io/role-request";

/// The parts of the RoleRequests among `profiles`, by the tenant each grants.
pub fn grants<'a>(profiles: impl Iterator<Item = &'a Profile>) -> BTreeMap<ServiceAccountRef, Vec<String>> {
    let mut grants: BTreeMap<ServiceAccountRef, Vec<String>> = BTreeMap::new();
    for profile in profiles {
        if let ProfileKind::RoleRequest { tenant } = &profile.kind {
            grants.entry(tenant.clone()).or_default().push(profile.part_name());
        }
    }
    grants
}

/// Makes a tenant's part depend on the RoleRequest parts granting its tenant on this
/// cluster: applied first, they create the ServiceAccount and the bindings its writes
/// need, where applied together the tenant's objects could be refused for a run.
pub fn after_grants(settings: &mut airlock_bundle::PartSettings, grants: &BTreeMap<ServiceAccountRef, Vec<String>>) {
    let Some(parts) = settings.service_account.as_ref().and_then(|t| grants.get(t)) else { return };
    let all: BTreeSet<String> = settings.depends_on.drain(..).chain(parts.iter().cloned()).collect();
    settings.depends_on = all.into_iter().collect();
}

/// The objects `prepared` holds for the RoleRequest `display` granting `tenant`, as its
/// part deploys them; its warnings name what was left out.
pub fn grant(prepared: &Prepared, tenant: &ServiceAccountRef, display: &str) -> Prepared {
    let mut warnings = prepared.warnings.clone();
    let mut objects = Vec::new();
    let mut bindings = Vec::new();
    for object in &prepared.objects {
        let key = &object.key;
        let is_role = key.group == RBAC_GROUP && (key.kind == "Role" || key.kind == "ClusterRole");
        if object.implicit {
            objects.push(object.clone());
        } else if is_role {
            objects.push(object.clone());
            bindings.push(binding(key, tenant, display));
        } else {
            warnings.push(format!(
                "{display}: {} ({}) is not a Role or ClusterRole: left out, as Sveltos leaves it",
                describe(key),
                object.origin
            ));
        }
    }
    objects.push(service_account(tenant, display));
    objects.extend(bindings);
    Prepared::of(objects, warnings, prepared)
}

fn describe(key: &ObjectKey) -> String {
    match key.namespace.as_str() {
        "" => format!("{} {}", key.kind, key.name),
        ns => format!("{} {ns}/{}", key.kind, key.name),
    }
}

fn service_account(tenant: &ServiceAccountRef, display: &str) -> Arc<Object> {
    let value = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": tenant.name, "namespace": tenant.namespace, "labels": {ROLE_REQUEST_LABEL: "ok"}},
    });
    object(ObjectKey::new("v1", "ServiceAccount", &tenant.namespace, &tenant.name), format!("{display}: its ServiceAccount"), value)
}

/// The binding of the role `role` to the tenant: a RoleBinding in the Role's namespace, or
/// a ClusterRoleBinding, named as the role.
fn binding(role: &ObjectKey, tenant: &ServiceAccountRef, display: &str) -> Arc<Object> {
    let (kind, namespace) = match role.kind.as_str() {
        "Role" => ("RoleBinding", role.namespace.as_str()),
        _ => ("ClusterRoleBinding", ""),
    };
    let mut metadata = json!({"name": role.name, "labels": {ROLE_REQUEST_LABEL: "ok"}});
    if !namespace.is_empty() {
        metadata["namespace"] = namespace.into();
    }
    let value = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role.kind, "name": role.name},
        "subjects": [{"kind": "ServiceAccount", "name": tenant.name, "namespace": tenant.namespace}],
    });
    let origin = format!("{display}: the binding of {} to {tenant}", describe(role));
    object(ObjectKey::new("rbac.authorization.k8s.io/v1", kind, namespace, &role.name), origin, value)
}

fn object(key: ObjectKey, origin: String, value: Value) -> Arc<Object> {
    Arc::new(Object { key, origin, yaml: yaml::emit(&[value]).into(), implicit: false, confidential: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(keys: &[(&str, &str, &str, &str)]) -> Prepared {
        let objects = keys
            .iter()
            .map(|(api, kind, ns, name)| {
                let value = json!({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns}});
                object(ObjectKey::new(api, kind, ns, name), format!("ConfigMap mgmt/roles key {name}"), value)
            })
            .collect();
        Prepared::of_objects(objects, Vec::new())
    }

    #[test]
    fn each_role_is_bound_to_the_tenant_and_the_rest_left_out() {
        let tenant = ServiceAccountRef { namespace: "team-a".into(), name: "deployer".into() };
        let input = prepared(&[
            ("rbac.authorization.k8s.io/v1", "Role", "team-a", "edit"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole", "", "team-a-read"),
            ("v1", "ConfigMap", "team-a", "stray"),
        ]);
        let out = grant(&input, &tenant, "RoleRequest/team-a");
        let warnings = &out.warnings;
        let keys: Vec<String> = out.objects.iter().map(|o| format!("{} {}", o.key.kind, describe(&o.key))).collect();
        assert_eq!(
            keys,
            [
                "Role Role team-a/edit",
                "ClusterRole ClusterRole team-a-read",
                "ServiceAccount ServiceAccount team-a/deployer",
                "RoleBinding RoleBinding team-a/edit",
                "ClusterRoleBinding ClusterRoleBinding team-a-read",
            ]
        );
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("ConfigMap team-a/stray (ConfigMap mgmt/roles key stray) is not a Role or ClusterRole"),
            "{warnings:?}"
        );
        let binding: Value = crate::yaml::parse_documents(&out.objects[3].yaml).unwrap().remove(0);
        assert_eq!(binding["roleRef"], json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "edit"}));
        assert_eq!(binding["subjects"], json!([{"kind": "ServiceAccount", "name": "deployer", "namespace": "team-a"}]));
        assert_eq!(binding["metadata"]["labels"]["projectsveltos.io/role-request"], "ok");
        let cluster_binding: Value = crate::yaml::parse_documents(&out.objects[4].yaml).unwrap().remove(0);
        assert!(cluster_binding["metadata"].get("namespace").is_none(), "{cluster_binding}");
    }
}
