//! The clients a run writes tenant parts with (spec 5.3): one impersonating each
//! ServiceAccount that the bundle's parts name or that the inventory recorded for parts it
//! may prune. Made only when some part names one, from the puller's own configuration.

use std::collections::BTreeMap;

use airlock_bundle::statement::{ProfileEntry, ServiceAccountRef};

use crate::config::SyncSettings;
use crate::engine::{self, InventoryEntry, Tenants};
use crate::reports::failure::Failure;

/// Each part's tenant: the bundle's parts, then those only the inventory still holds.
pub(crate) fn by_part(profiles: &[ProfileEntry], previous: &[InventoryEntry]) -> BTreeMap<String, ServiceAccountRef> {
    let mut parts: BTreeMap<String, ServiceAccountRef> =
        profiles.iter().filter_map(|p| Some((p.name.clone(), p.service_account.clone()?))).collect();
    for entry in previous {
        if let Some(account) = &entry.service_account
            && !profiles.iter().any(|p| p.name == entry.profile)
        {
            parts.entry(entry.profile.clone()).or_insert_with(|| account.clone());
        }
    }
    parts
}

/// Clients impersonating every tenant of `parts`.
pub(crate) async fn connect(settings: &SyncSettings, parts: &BTreeMap<String, ServiceAccountRef>) -> Result<Tenants, Failure> {
    if parts.is_empty() {
        return Ok(Tenants::default());
    }
    let failed = |e: kube::Error| Failure::KubeClient(format!("a client impersonating a tenant ServiceAccount: {e}"));
    let config = settings.kube.config().await.map_err(failed)?;
    engine::Tenants::connect(&config, parts.values().cloned()).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ObjectId;
    use crate::engine::testing::profile;

    #[test]
    fn leaving_parts_keep_the_tenant_they_were_applied_as() {
        let sa = |name: &str| ServiceAccountRef { namespace: "team-a".into(), name: name.into() };
        let staying = ProfileEntry { service_account: Some(sa("now")), ..profile("ClusterProfile.a", &[]) };
        let entry = |profile: &str, account: &str| InventoryEntry {
            id: ObjectId {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("team-a".into()),
                name: "x".into(),
            },
            profile: profile.into(),
            applied_hash: "00".into(),
            leave_on_removal: false,
            release: None,
            hook: false,
            propagation: None,
            adopted: false,
            service_account: Some(sa(account)),
        };
        let parts = by_part(
            &[staying, profile("ClusterProfile.c", &[])],
            &[entry("ClusterProfile.a", "before"), entry("ClusterProfile.b", "gone")],
        );
        assert_eq!(parts.len(), 2);
        assert_eq!(parts["ClusterProfile.a"].name, "now", "the bundle's setting wins for a part it still holds");
        assert_eq!(parts["ClusterProfile.b"].name, "gone");
    }
}
