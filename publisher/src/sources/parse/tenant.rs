//! The tenant of a profile: Sveltos's `projectsveltos.io/serviceaccount-name` and
//! `projectsveltos.io/serviceaccount-namespace` labels, which make Sveltos deploy the
//! profile with that ServiceAccount's rights. Sveltos copies both labels as they are, for a
//! namespaced Profile too (the namespace label is not defaulted to the Profile's own), and
//! so does this. One label without the other, or a value that is not a Kubernetes name,
//! fails the profile: applying it with the puller's rights would grant the tenant more
//! than it was given.

use std::collections::BTreeMap;

use airlock_bundle::statement::{ServiceAccountRef, tenant};

use crate::sources::model::{ModelError, SERVICE_ACCOUNT_NAME_LABEL, SERVICE_ACCOUNT_NAMESPACE_LABEL};

/// The tenant `labels` name, if any; `object` names the profile in errors.
pub fn tenant(labels: &BTreeMap<String, String>, object: &str) -> Result<Option<ServiceAccountRef>, ModelError> {
    let field =
        |label: &str, message: String| ModelError::Field { object: object.into(), field: format!("metadata.labels[{label}]"), message };
    let (name, namespace) = match (labels.get(SERVICE_ACCOUNT_NAME_LABEL), labels.get(SERVICE_ACCOUNT_NAMESPACE_LABEL)) {
        (None, None) => return Ok(None),
        (Some(name), Some(namespace)) => (name, namespace),
        (Some(_), None) => {
            return Err(field(SERVICE_ACCOUNT_NAMESPACE_LABEL, format!("missing, while {SERVICE_ACCOUNT_NAME_LABEL} names a tenant")));
        }
        (None, Some(_)) => {
            return Err(field(SERVICE_ACCOUNT_NAME_LABEL, format!("missing, while {SERVICE_ACCOUNT_NAMESPACE_LABEL} names a tenant")));
        }
    };
    tenant::check_namespace(namespace).map_err(|why| field(SERVICE_ACCOUNT_NAMESPACE_LABEL, why))?;
    tenant::check_name(name).map_err(|why| field(SERVICE_ACCOUNT_NAME_LABEL, why))?;
    Ok(Some(ServiceAccountRef { namespace: namespace.clone(), name: name.clone() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn both_labels_name_the_tenant() {
        let l = labels(&[(SERVICE_ACCOUNT_NAME_LABEL, "deployer"), (SERVICE_ACCOUNT_NAMESPACE_LABEL, "team-a"), ("app", "web")]);
        let sa = tenant(&l, "Profile/mgmt/web").unwrap().unwrap();
        assert_eq!((sa.namespace.as_str(), sa.name.as_str()), ("team-a", "deployer"));
        assert_eq!(tenant(&labels(&[("app", "web")]), "ClusterProfile/web"), Ok(None));
    }

    #[test]
    fn rejects_one_label_without_the_other() {
        let err = tenant(&labels(&[(SERVICE_ACCOUNT_NAME_LABEL, "deployer")]), "ClusterProfile/web").unwrap_err();
        assert_eq!(
            err.to_string(),
            "ClusterProfile/web: field metadata.labels[projectsveltos.io/serviceaccount-namespace]: missing, while \
             projectsveltos.io/serviceaccount-name names a tenant"
        );
        let err = tenant(&labels(&[(SERVICE_ACCOUNT_NAMESPACE_LABEL, "team-a")]), "ClusterProfile/web").unwrap_err();
        assert!(err.to_string().contains("metadata.labels[projectsveltos.io/serviceaccount-name]: missing"), "{err}");
    }

    #[test]
    fn rejects_names_kubernetes_refuses() {
        let bad_ns = labels(&[(SERVICE_ACCOUNT_NAME_LABEL, "deployer"), (SERVICE_ACCOUNT_NAMESPACE_LABEL, "Team_A")]);
        let err = tenant(&bad_ns, "ClusterProfile/web").unwrap_err().to_string();
        assert!(err.contains("labels[projectsveltos.io/serviceaccount-namespace]: \"Team_A\" is not a Kubernetes namespace"), "{err}");
        let bad_name = labels(&[(SERVICE_ACCOUNT_NAME_LABEL, "a:b"), (SERVICE_ACCOUNT_NAMESPACE_LABEL, "team-a")]);
        let err = tenant(&bad_name, "ClusterProfile/web").unwrap_err().to_string();
        assert!(err.contains("labels[projectsveltos.io/serviceaccount-name]: \"a:b\" is not"), "{err}");
        let empty = labels(&[(SERVICE_ACCOUNT_NAME_LABEL, ""), (SERVICE_ACCOUNT_NAMESPACE_LABEL, "team-a")]);
        assert!(tenant(&empty, "ClusterProfile/web").is_err());
    }
}
