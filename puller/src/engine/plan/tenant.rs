//! Who writes a part's objects (spec 5.3 `serviceAccount`): the puller itself, or, for a
//! part whose signed settings name a tenant ServiceAccount, a client impersonating that
//! ServiceAccount, so the API server grants the part no more than the tenant may do.
//!
//! The caller makes one impersonating client per ServiceAccount the bundle and the
//! inventory name ([`Tenants`](crate::engine::model::tenants::Tenants)); the engine sends
//! every write of such a part through it
//! (apply, create, delete, patch: `kube_api::Api`'s writes take the account) and reads with
//! its own identity. Before anything is written, [`contained`] refuses a bundle naming a
//! ServiceAccount outside the watch-namespaces, and [`may_impersonate`] asks the API
//! server whether the puller may impersonate each one: a bundle naming one its RBAC does
//! not allow fails then, before any write, rather than part by part.
//!
//! Only `Impersonate-User` is sent: the API server then gives the impersonated user the
//! ServiceAccount's groups itself, and checks only `impersonate` on that ServiceAccount,
//! which is all the RBAC `register --tenant` grants. Naming the groups would need
//! `impersonate` on `groups` cluster-wide.

use std::collections::BTreeMap;

use airlock_bundle::statement::{ProfileEntry, ServiceAccountRef};
use serde_json::{Value, json};

use crate::engine::api::kube_api::Api;
use crate::engine::model::error::EngineError;
use crate::engine::model::settings::Settings;
use crate::engine::plan::policy::watched;

/// The ServiceAccounts `profiles` name, each with the first part naming it.
pub fn accounts(profiles: &[ProfileEntry]) -> BTreeMap<ServiceAccountRef, String> {
    let mut found = BTreeMap::new();
    for p in profiles {
        if let Some(account) = &p.service_account {
            found.entry(account.clone()).or_insert_with(|| p.name.clone());
        }
    }
    found
}

/// With watch-namespaces, a tenant ServiceAccount must live in a watched namespace other
/// than the puller's own: the RBAC registration generates grants impersonation there
/// only, and one elsewhere (`kube-system`) could hold any right. Refused under either
/// namespace policy, since leaving the part out would drop it silently.
pub(crate) fn contained(profiles: &[ProfileEntry], settings: &Settings) -> Result<(), EngineError> {
    let Some(watch) = settings.watch_namespaces.as_deref() else { return Ok(()) };
    let mut refused = Vec::new();
    for p in profiles {
        let Some(account) = &p.service_account else { continue };
        let why = if settings.own_namespace.as_deref() == Some(account.namespace.as_str()) {
            format!("namespace {} is the puller's own", account.namespace)
        } else if !watched(Some(watch), &account.namespace) {
            format!("namespace {} is outside watch-namespaces {}", account.namespace, watch.join(","))
        } else {
            continue;
        };
        refused.push(format!("{}: ServiceAccount {account}: {why}", p.name));
    }
    match refused.is_empty() {
        true => Ok(()),
        false => Err(EngineError::TenantOutside { parts: refused }),
    }
}

/// Asks the API server, as the puller, whether it may impersonate each tenant: the first
/// it may not fails the run before anything is written, naming a part and the account.
pub(crate) async fn may_impersonate(
    api: &Api,
    settings: &Settings,
    parts: &BTreeMap<ServiceAccountRef, String>,
) -> Result<(), EngineError> {
    for account in settings.tenants.accounts() {
        let review = json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {
                "namespace": account.namespace, "verb": "impersonate", "resource": "serviceaccounts", "name": account.name,
            }},
        });
        let part = parts.get(account).cloned().unwrap_or_else(|| "a part leaving the bundle".into());
        let denied = |why: String| EngineError::Impersonation { part: part.clone(), account: account.to_string(), why };
        let answer = api.review(&review).await.map_err(|e| denied(format!("asking the API server: {e}")))?;
        if answer.pointer("/status/allowed") != Some(&Value::Bool(true)) {
            let reason = answer.pointer("/status/reason").and_then(Value::as_str).filter(|r| !r.is_empty());
            let detail = reason.map_or_else(String::new, |r| format!(" ({r})"));
            return Err(denied(format!(
                "the puller may not impersonate it{detail}; grant it with `airlock-publisher register cluster --tenant {}/{}`",
                account.namespace, account.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::tenants::Tenants;
    use crate::engine::testing::{profile, settings};

    fn tenant(name: &str, namespace: &str, account: &str) -> ProfileEntry {
        ProfileEntry {
            service_account: Some(ServiceAccountRef { namespace: namespace.into(), name: account.into() }),
            ..profile(name, &[])
        }
    }

    #[test]
    fn a_contained_puller_refuses_tenants_outside_its_namespaces() {
        let mut s = settings("fleet/edge-1");
        let profiles = [
            tenant("ClusterProfile.a", "team-a", "deployer"),
            tenant("ClusterProfile.b", "kube-system", "admin"),
            profile("ClusterProfile.c", &[]),
        ];
        assert_eq!(contained(&profiles, &s), Ok(()), "without watch-namespaces any tenant may be named");
        s.watch_namespaces = Some(vec!["team-a".into(), "airlock".into()]);
        s.own_namespace = Some("airlock".into());
        assert_eq!(contained(&profiles[..1], &s), Ok(()));
        let err = contained(&[profiles[1].clone(), tenant("ClusterProfile.d", "airlock", "x")], &s).unwrap_err();
        assert_eq!(
            err.to_string(),
            "2 part(s) name a tenant ServiceAccount outside the watch-namespaces: ClusterProfile.b: ServiceAccount \
             kube-system/admin: namespace kube-system is outside watch-namespaces team-a,airlock, ClusterProfile.d: \
             ServiceAccount airlock/x: namespace airlock is the puller's own"
        );
        assert!(err.is_rejection());
    }

    #[test]
    fn accounts_name_the_first_part_of_each() {
        let profiles = [tenant("ClusterProfile.a", "team-a", "deployer"), tenant("ClusterProfile.b", "team-a", "deployer")];
        let found = accounts(&profiles);
        assert_eq!(found.len(), 1);
        assert_eq!(found.values().next().map(String::as_str), Some("ClusterProfile.a"));
    }

    #[test]
    fn a_part_without_a_client_is_never_written_as_the_puller() {
        let account = ServiceAccountRef { namespace: "team-a".into(), name: "deployer".into() };
        let Err(err) = Tenants::default().writer(&account) else { panic!("a client without a tenant's") };
        assert!(err.message.contains("no client impersonates ServiceAccount team-a/deployer"), "{err}");
    }
}
