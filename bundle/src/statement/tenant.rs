//! The tenant a part is applied as (spec 5.3 `serviceAccount`): a ServiceAccount of the
//! managed cluster that the puller impersonates for every write of the part. Its names are
//! checked here, so that both sides refuse the same malformed ones.

use serde::{Deserialize, Serialize};

use crate::cluster::{is_dns_label, is_dns_subdomain};

/// A ServiceAccount, by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceAccountRef {
    pub namespace: String,
    pub name: String,
}

impl ServiceAccountRef {
    /// Why these names are not a ServiceAccount's: the namespace must be an RFC 1123 label
    /// and the name an RFC 1123 subdomain, as the API server requires.
    pub fn check(&self) -> Result<(), String> {
        check_namespace(&self.namespace).map_err(|why| format!("namespace {why}"))?;
        check_name(&self.name).map_err(|why| format!("name {why}"))
    }

    /// The user name the API server knows it by, which an impersonating client sends.
    pub fn user(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }
}

/// Why `namespace` cannot be a ServiceAccount's namespace.
pub fn check_namespace(namespace: &str) -> Result<(), String> {
    match is_dns_label(namespace) {
        true => Ok(()),
        false => Err(format!("{namespace:?} is not a Kubernetes namespace name (RFC 1123 label)")),
    }
}

/// Why `name` cannot be a ServiceAccount's name.
pub fn check_name(name: &str) -> Result<(), String> {
    match is_dns_subdomain(name) {
        true => Ok(()),
        false => Err(format!("{name:?} is not a Kubernetes ServiceAccount name (RFC 1123 subdomain)")),
    }
}

impl std::fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(namespace: &str, name: &str) -> ServiceAccountRef {
        ServiceAccountRef { namespace: namespace.into(), name: name.into() }
    }

    #[test]
    fn names_are_kubernetes_names() {
        assert_eq!(sa("team-a", "deployer.v2").check(), Ok(()));
        assert_eq!(sa("team-a", "deployer").user(), "system:serviceaccount:team-a:deployer");
        assert!(sa("Team-A", "deployer").check().unwrap_err().contains("namespace \"Team-A\""));
        assert!(sa("team.a", "deployer").check().unwrap_err().contains("RFC 1123 label"));
        assert!(sa("team-a", "").check().unwrap_err().contains("name \"\""));
        assert!(sa("team-a", "a:b").check().unwrap_err().contains("RFC 1123 subdomain"));
        assert!(sa("team-a", &"x".repeat(254)).check().is_err());
    }

    #[test]
    fn rejects_unknown_fields() {
        let err = serde_json::from_str::<ServiceAccountRef>(r#"{"namespace":"a","name":"b","uid":"c"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
}
