//! The Lease that keeps two `watch` replicas from publishing at once: `airlock-publisher`
//! (coordination.k8s.io/v1) in `--lease-namespace`.
//!
//! A replica waits until the Lease is absent, free or expired, then takes it with
//! compare-and-swap on its resourceVersion, so of two replicas racing exactly one wins;
//! the other keeps waiting as a standby. The holder renews in the background and hears
//! through [`HeldLease::lost`] when it could not, so it stops before publishing again.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long the Lease holds without renewal: a standby takes over this long after the
/// holder died.
pub const DURATION: Duration = Duration::from_secs(30);
/// How often a standby looks whether the Lease became free.
const POLL: Duration = Duration::from_secs(5);

fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// A Lease this process holds, renewed in the background until released.
pub struct HeldLease {
    api: Api<Lease>,
    name: String,
    identity: String,
    renewer: JoinHandle<()>,
    lost: watch::Receiver<bool>,
}

/// Waits until this process holds the Lease `name` in `namespace`.
pub async fn acquire(client: &kube::Client, namespace: &str, name: &str, identity: &str) -> Result<HeldLease, kube::Error> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let mut waiting_logged = false;
    let lease = loop {
        match try_take(&api, namespace, name, identity).await? {
            Ok(lease) => break lease,
            Err(holder) => {
                if !waiting_logged {
                    tracing::info!(lease = %format!("{namespace}/{name}"), holder, "another replica publishes; standing by");
                    waiting_logged = true;
                }
                tokio::time::sleep(POLL).await;
            }
        }
    };
    tracing::info!(lease = %format!("{namespace}/{name}"), identity, "lease acquired");
    let (tell, lost) = watch::channel(false);
    let renewer = tokio::spawn(renew(api.clone(), lease, tell));
    Ok(HeldLease { api, name: name.into(), identity: identity.into(), renewer, lost })
}

/// One attempt: the taken Lease, or the current holder's identity.
async fn try_take(api: &Api<Lease>, namespace: &str, name: &str, identity: &str) -> Result<Result<Lease, String>, kube::Error> {
    let now = Timestamp::now();
    let params = PostParams { field_manager: Some("airlock-publisher".into()), ..PostParams::default() };
    let meta = |resource_version| ObjectMeta { name: Some(name.into()), namespace: Some(namespace.into()), resource_version, ..ObjectMeta::default() };
    let taken = match api.get_opt(name).await? {
        None => api.create(&params, &Lease { metadata: meta(None), spec: Some(spec(identity, now, 0)) }).await,
        Some(current) => {
            if let Some(holder) = held_by_other(&current, identity, now) {
                return Ok(Err(holder));
            }
            let transitions = current.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(0);
            let lease = Lease { metadata: meta(current.metadata.resource_version), spec: Some(spec(identity, now, transitions + 1)) };
            api.replace(name, &params, &lease).await
        }
    };
    match taken {
        Ok(lease) => Ok(Ok(lease)),
        // Another replica created or took it between our read and our write.
        Err(e) if code(&e) == Some(409) => Ok(Err("another replica".into())),
        Err(e) => Err(e),
    }
}

fn spec(identity: &str, now: Timestamp, transitions: i32) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(identity.into()),
        lease_duration_seconds: Some(DURATION.as_secs() as i32),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    }
}

/// The holder of a Lease held by someone else and not expired at `now`.
fn held_by_other(lease: &Lease, identity: &str, now: Timestamp) -> Option<String> {
    let spec = lease.spec.as_ref()?;
    let holder = spec.holder_identity.as_ref().filter(|h| !h.is_empty() && *h != identity)?;
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let until = renewed + SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(0).into());
    (until > now).then(|| holder.clone())
}

/// Renews every third of the duration; says `lost` when a renewal is refused, or when the
/// Lease expired before a renewal got through.
async fn renew(api: Api<Lease>, mut lease: Lease, lost: watch::Sender<bool>) {
    let name = lease.metadata.name.clone().unwrap_or_default();
    let mut renewed = Timestamp::now();
    let duration = SignedDuration::try_from(DURATION).expect("a small duration");
    loop {
        tokio::time::sleep(DURATION / 3).await;
        let now = Timestamp::now();
        if let Some(spec) = lease.spec.as_mut() {
            spec.renew_time = Some(MicroTime(now));
        }
        match api.replace(&name, &PostParams::default(), &lease).await {
            Ok(updated) => {
                lease = updated;
                renewed = now;
            }
            Err(e) if matches!(code(&e), Some(404 | 409)) => {
                tracing::error!(lease = %name, "lease taken over by another replica");
                let _ = lost.send(true);
                return;
            }
            Err(e) => {
                tracing::warn!(lease = %name, error = %e, "could not renew the lease; retrying");
                if Timestamp::now() >= renewed + duration {
                    let _ = lost.send(true);
                    return;
                }
            }
        }
    }
}

impl HeldLease {
    /// Changes to `true` when the Lease was lost.
    pub fn lost(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    pub fn held(&self) -> bool {
        !*self.lost.borrow()
    }

    /// Stops renewing and frees the Lease, so a standby need not wait for it to expire.
    pub async fn release(self) {
        self.renewer.abort();
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else { return };
        let Some(spec) = lease.spec.as_mut().filter(|s| s.holder_identity.as_deref() == Some(&self.identity)) else {
            return;
        };
        spec.holder_identity = None;
        if let Err(e) = self.api.replace(&self.name, &PostParams::default(), &lease).await {
            tracing::warn!(lease = %self.name, error = %e, "could not release the lease; it expires on its own");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_free_when_expired_unheld_or_ours() {
        let now = Timestamp::now();
        let lease = |holder: Option<&str>, ago: i64| Lease {
            spec: Some(LeaseSpec {
                holder_identity: holder.map(String::from),
                lease_duration_seconds: Some(30),
                renew_time: Some(MicroTime(now - SignedDuration::from_secs(ago))),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        };
        assert_eq!(held_by_other(&lease(Some("b"), 10), "a", now), Some("b".into()));
        assert_eq!(held_by_other(&lease(Some("b"), 31), "a", now), None, "expired");
        assert_eq!(held_by_other(&lease(Some("a"), 10), "a", now), None, "ours");
        assert_eq!(held_by_other(&lease(None, 10), "a", now), None, "released");
    }
}
