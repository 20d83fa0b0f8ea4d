//! The Lease that keeps two pullers of one cluster from syncing at once (issue 4, step 6):
//! `airlock-puller-<cluster name>` (coordination.k8s.io/v1) in the state namespace.
//!
//! A puller takes the Lease when it is absent, free or expired, with compare-and-swap on
//! its resourceVersion, so of two pullers racing for it exactly one wins. The loser does
//! not wait: it fails with "another puller holds the lease" (exit 1) and the next scheduled
//! run tries again, which is what a CronJob does anyway. The holder renews the Lease in the
//! background and hears through [`HeldLease::lost`] when it could not, so it stops before
//! it writes state. It does not decide what a puller does while holding it.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::own_objects::{describe, meta, namespace_missing, status_code};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    #[error("another puller holds the lease {lease} ({holder}, until {until}); not syncing")]
    Held { lease: String, holder: String, until: String },
    #[error("state namespace {namespace} does not exist; registration creates it")]
    NoNamespace { namespace: String },
    #[error("lease {lease}: {message}")]
    Api { lease: String, message: String },
}

/// Who this process is, for the Lease: the host name (the pod name in Kubernetes) and pid.
pub fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".into());
    format!("{host}/{}", std::process::id())
}

/// A Lease this process holds, renewed in the background until released.
pub struct HeldLease {
    api: Api<Lease>,
    name: String,
    identity: String,
    renewer: JoinHandle<()>,
    lost: watch::Receiver<bool>,
}

/// Takes the Lease `name` in `namespace` for `identity`, a puller of `cluster`, for
/// `duration` at a time.
pub async fn acquire(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    cluster: &str,
    identity: &str,
    duration: Duration,
) -> Result<HeldLease, LeaseError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let label = format!("{namespace}/{name}");
    let api_error = |e: kube::Error| {
        if namespace_missing(&e) {
            return LeaseError::NoNamespace { namespace: namespace.to_string() };
        }
        LeaseError::Api { lease: label.clone(), message: describe(&e) }
    };
    let now = Timestamp::now();
    let params = PostParams { field_manager: Some(crate::own_objects::MANAGER.into()), ..PostParams::default() };
    let taken = match api.get_opt(name).await.map_err(api_error)? {
        None => {
            let lease =
                Lease { metadata: meta(namespace, name, cluster, None), spec: Some(spec(identity, now, 0, duration)) };
            api.create(&params, &lease).await
        }
        Some(current) => {
            if let Some(held) = held_by_other(&current, identity, now) {
                return Err(LeaseError::Held { lease: label, holder: held.0, until: held.1 });
            }
            let transitions = current.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(0);
            let lease = Lease {
                metadata: meta(namespace, name, cluster, current.metadata.resource_version.clone()),
                spec: Some(spec(identity, now, transitions + 1, duration)),
            };
            api.replace(name, &params, &lease).await
        }
    };
    let lease = match taken {
        Ok(lease) => lease,
        // Someone else created or took it between our read and our write.
        Err(e) if status_code(&e) == Some(409) => {
            let holder = api.get_opt(name).await.ok().flatten();
            let (holder, until) =
                holder.and_then(|l| held_by_other(&l, identity, now)).unwrap_or(("unknown".into(), "unknown".into()));
            return Err(LeaseError::Held { lease: label, holder, until });
        }
        Err(e) => return Err(api_error(e)),
    };
    let (tell, lost) = watch::channel(false);
    let renewer = tokio::spawn(renew(api.clone(), lease, duration, tell));
    Ok(HeldLease { api, name: name.to_string(), identity: identity.to_string(), renewer, lost })
}

fn spec(identity: &str, now: Timestamp, transitions: i32, duration: Duration) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(duration.as_secs().clamp(1, i32::MAX as u64) as i32),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    }
}

/// The holder and expiry of a Lease held by someone else and not expired at `now`.
fn held_by_other(lease: &Lease, identity: &str, now: Timestamp) -> Option<(String, String)> {
    let spec = lease.spec.as_ref()?;
    let holder = spec.holder_identity.as_ref().filter(|h| !h.is_empty() && *h != identity)?;
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let until = renewed + SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(0).into());
    (until > now).then(|| (holder.clone(), until.to_string()))
}

/// Renews every third of the duration; says `lost` when a renewal is refused or when the
/// Lease could not be renewed before it expired.
async fn renew(api: Api<Lease>, mut lease: Lease, duration: Duration, lost: watch::Sender<bool>) {
    let name = lease.metadata.name.clone().unwrap_or_default();
    let mut renewed = Timestamp::now();
    loop {
        tokio::time::sleep(duration / 3).await;
        let now = Timestamp::now();
        if let Some(spec) = lease.spec.as_mut() {
            spec.renew_time = Some(MicroTime(now));
        }
        match api.replace(&name, &PostParams::default(), &lease).await {
            Ok(updated) => {
                lease = updated;
                renewed = now;
            }
            Err(e) if status_code(&e) == Some(409) || status_code(&e) == Some(404) => {
                tracing::error!(lease = %name, "lease taken over by another puller");
                let _ = lost.send(true);
                return;
            }
            Err(e) => {
                tracing::warn!(lease = %name, error = %describe(&e), "could not renew the lease; retrying");
                if Timestamp::now() >= renewed + SignedDuration::try_from(duration).unwrap_or(SignedDuration::MAX) {
                    let _ = lost.send(true);
                    return;
                }
            }
        }
    }
}

impl HeldLease {
    /// Resolves when the Lease was lost; never resolves while it is held.
    pub fn lost(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    /// Whether the Lease is still held.
    pub fn held(&self) -> bool {
        !*self.lost.borrow()
    }

    /// Stops renewing and frees the Lease, so the next run need not wait for it to expire.
    pub async fn release(self) {
        self.renewer.abort();
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else { return };
        let Some(spec) = lease.spec.as_mut().filter(|s| s.holder_identity.as_deref() == Some(&self.identity)) else {
            return;
        };
        spec.holder_identity = None;
        if let Err(e) = self.api.replace(&self.name, &PostParams::default(), &lease).await {
            tracing::warn!(lease = %self.name, error = %describe(&e), "could not release the lease; it expires on its own");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, renewed_secs_ago: i64) -> Lease {
        let now = Timestamp::now();
        Lease {
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_string),
                lease_duration_seconds: Some(120),
                renew_time: Some(MicroTime(now - SignedDuration::from_secs(renewed_secs_ago))),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        }
    }

    #[test]
    fn a_live_lease_of_another_holder_blocks() {
        let now = Timestamp::now();
        assert!(held_by_other(&lease(Some("pod-a/1"), 10), "pod-b/1", now).is_some());
        assert!(held_by_other(&lease(Some("pod-a/1"), 10), "pod-a/1", now).is_none(), "own lease");
        assert!(held_by_other(&lease(Some("pod-a/1"), 121), "pod-b/1", now).is_none(), "expired");
        assert!(held_by_other(&lease(None, 10), "pod-b/1", now).is_none(), "released");
        assert!(held_by_other(&Lease::default(), "pod-b/1", now).is_none(), "no spec");
    }
}
