//! The live members of a group of processes that each hold a Lease of their own, labelled
//! alike: one list call, and every Lease whose holder renewed it within its duration.
//! Who does what among them is the caller's business; this module only says who is there
//! and what each announced in its annotations.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};

use super::LeaseError;
use crate::{describe_api_error, namespace_missing};

/// A process holding one of the group's Leases, not expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub identity: String,
    /// When its Lease expires unless renewed.
    pub until: Timestamp,
    pub annotations: BTreeMap<String, String>,
}

/// The live members of the Leases in `namespace` matching `selector` (a label selector),
/// ordered by identity. A Lease released or expired at `now` is no member.
pub async fn live_members(client: &kube::Client, namespace: &str, selector: &str, now: Timestamp) -> Result<Vec<Member>, LeaseError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let leases = api.list(&ListParams::default().labels(selector)).await.map_err(|e| {
        let lease = format!("{namespace}/{selector}");
        if namespace_missing(&e) {
            LeaseError::NoNamespace { lease, namespace: namespace.into() }
        } else {
            LeaseError::Api { lease, message: describe_api_error(&e) }
        }
    })?;
    let mut members: Vec<Member> = leases.items.iter().filter_map(|l| member(l, now)).collect();
    members.sort_by(|a, b| a.identity.cmp(&b.identity));
    members.dedup_by(|a, b| a.identity == b.identity);
    Ok(members)
}

/// The member holding `lease` at `now`, if any.
fn member(lease: &Lease, now: Timestamp) -> Option<Member> {
    let spec = lease.spec.as_ref()?;
    let identity = spec.holder_identity.as_ref().filter(|h| !h.is_empty())?;
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let until = renewed + SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(0).into());
    (until > now).then(|| Member { identity: identity.clone(), until, annotations: lease.metadata.annotations.clone().unwrap_or_default() })
}

#[cfg(test)]
mod tests {
    use super::super::test_lease as lease;
    use super::*;

    #[test]
    fn a_member_is_a_holder_whose_lease_has_not_expired() {
        let now = Timestamp::now();
        let alive = member(&lease(Some("pod-a"), 10, now), now).expect("renewed 10s ago");
        assert_eq!((alive.identity.as_str(), alive.until), ("pod-a", now + SignedDuration::from_secs(20)));
        assert_eq!(member(&lease(Some("pod-a"), 30, now), now), None, "expired at its duration");
        assert_eq!(member(&lease(None, 1, now), now), None, "released");
        assert_eq!(member(&lease(Some(""), 1, now), now), None, "released by an older tool");
        assert_eq!(member(&Lease::default(), now), None, "no spec");
    }
}
