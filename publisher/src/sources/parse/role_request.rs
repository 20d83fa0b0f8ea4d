//! A RoleRequest ([`parse_role_request`]): Sveltos's grant of rights in managed clusters to
//! a tenant ServiceAccount. It is read as a profile of its own kind, whose part is
//! `RoleRequest.<name>`: its clusterSelector selects clusters as a profile's does, and its
//! `roleRefs` are ConfigMap and Secret references read as `policyRefs` are. What the part
//! holds (the Roles and ClusterRoles of those references, a binding for each, the tenant's
//! ServiceAccount) is the renderer's (`render::role_request`). Fields with no meaning for
//! a pulling cluster (`expirationSeconds`) get the notes `fields` gives them.

use airlock_bundle::statement::{ServiceAccountRef, tenant};
use airlock_bundle::{StopMatchingBehavior, SyncMode};
use serde_json::Value;

use super::reader::{Fields, Metadata, check_version};
use super::refs;
use crate::sources::fields;
use crate::sources::model::{ModelError, PAUSED_ANNOTATION, Profile, ProfileChecks, ProfileKind};
use crate::sources::selector::Selector;

/// Parses a RoleRequest into the profile that deploys what it grants.
pub fn parse_role_request(value: &Value) -> Result<Profile, ModelError> {
    let meta = Metadata::of(value, "RoleRequest")?;
    let name = meta.name.to_string();
    let object = format!("RoleRequest/{name}");
    check_version(value, &object)?;
    let annotations = meta.map("annotations")?;
    let spec = Fields::of(&value["spec"], "spec", &object)?;
    let account: Option<String> = spec.get("serviceAccountName")?;
    let namespace: Option<String> = spec.get("serviceAccountNamespace")?;
    let account = account.unwrap_or_default();
    let namespace = namespace.unwrap_or_default();
    tenant::check_namespace(&namespace).map_err(|why| spec.error("serviceAccountNamespace", why))?;
    tenant::check_name(&account).map_err(|why| spec.error("serviceAccountName", why))?;
    let selector = match spec.raw("clusterSelector") {
        Value::Null => None,
        v => Selector::parse(v).map_err(|m| spec.error("clusterSelector", m))?,
    };
    let mut notes = fields::role_request_notes(&value["spec"]);
    let policy_refs = refs::references(&spec, "roleRefs", None, &mut notes)?;
    Ok(Profile {
        kind: ProfileKind::RoleRequest { tenant: ServiceAccountRef { namespace, name: account } },
        name,
        paused: annotations.contains_key(PAUSED_ANNOTATION),
        selector,
        cluster_refs: Vec::new(),
        set_refs: Vec::new(),
        policy_refs,
        kustomization_refs: Vec::new(),
        helm_charts: Vec::new(),
        template_refs: Vec::new(),
        patches: Vec::new(),
        patches_from: Vec::new(),
        sync_mode: SyncMode::Continuous,
        tier: airlock_bundle::statement::DEFAULT_TIER,
        depends_on: Vec::new(),
        stop_matching_behavior: StopMatchingBehavior::WithdrawPolicies,
        continue_on_conflict: false,
        continue_on_error: false,
        max_consecutive_failures: None,
        max_update: None,
        drift_exclusions: Vec::new(),
        reloader: false,
        checks: ProfileChecks::default(),
        extra_labels: Default::default(),
        extra_annotations: Default::default(),
        tenant: None,
        notes,
        event: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn role_request(spec: Value) -> Value {
        json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "RoleRequest", "metadata": {"name": "team-a"}, "spec": spec})
    }

    #[test]
    fn a_role_request_is_a_profile_of_its_own_part() {
        let p = parse_role_request(&role_request(json!({
            "serviceAccountName": "deployer", "serviceAccountNamespace": "team-a",
            "clusterSelector": {"matchLabels": {"env": "edge"}},
            "roleRefs": [{"kind": "ConfigMap", "name": "roles", "namespace": "mgmt"}, {"kind": "Secret", "name": "more", "namespace": "mgmt"}],
            "expirationSeconds": 3600,
        })))
        .unwrap();
        assert_eq!(p.part_name(), "RoleRequest.team-a");
        assert_eq!(p.display(), "RoleRequest/team-a");
        let ProfileKind::RoleRequest { tenant } = &p.kind else { panic!("{:?}", p.kind) };
        assert_eq!(tenant.to_string(), "team-a/deployer");
        assert_eq!(p.policy_refs.iter().map(|r| format!("{}/{}", r.namespace, r.name)).collect::<Vec<_>>(), ["mgmt/roles", "mgmt/more"]);
        assert!(p.selector.is_some() && p.tenant.is_none(), "applied as the puller, not as the tenant it grants");
        assert_eq!(p.notes.iter().map(|n| n.field.as_str()).collect::<Vec<_>>(), ["spec.expirationSeconds"]);
    }

    #[test]
    fn rejects_a_tenant_kubernetes_would_refuse() {
        let err = parse_role_request(&role_request(json!({"serviceAccountName": "a:b", "serviceAccountNamespace": "team-a"}))).unwrap_err();
        assert!(err.to_string().contains("RoleRequest/team-a: field spec.serviceAccountName: \"a:b\" is not"), "{err}");
        let err = parse_role_request(&role_request(json!({"serviceAccountName": "deployer"}))).unwrap_err();
        assert!(err.to_string().contains("spec.serviceAccountNamespace: \"\" is not a Kubernetes namespace name"), "{err}");
    }
}
