//! The Lease (coordination.k8s.io/v1) that keeps two processes from doing one job at once:
//! two pullers syncing one cluster, two `airlock-publisher watch` replicas publishing.
//!
//! A process takes the Lease when it is absent, released, expired or already its own, with
//! compare-and-swap on its resourceVersion, so of two racing exactly one wins. The loser
//! either fails at once ([`LeaseConfig::try_acquire`]: a puller's next scheduled run tries
//! again) or stands by until the Lease frees ([`LeaseConfig::wait`]: the publisher's
//! standby replica). The holder renews in the background and hears through
//! [`HeldLease::lost`] when it could not, so it stops before it writes again, and
//! [`HeldLease::release`] frees it for the next one with one write, on the resourceVersion
//! the holder last wrote. What the holder does is not this module's business.
//!
//! Several processes sharing one job each hold a Lease of their own, labelled alike
//! (`members`): the live ones are those whose Lease has not expired, and a holder tells
//! the others what it has seen through an annotation of its own Lease ([`HeldLease::annotate`]).

mod members;

pub use members::{Member, live_members};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::meta::{MANAGED_BY, object_meta};
use super::{describe_api_error, namespace_missing, status_code};

/// Why the Lease was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    /// Someone else holds it and it has not expired, or took it in the same instant.
    #[error("lease {lease} is held by {holder} until {until}")]
    Held { lease: String, holder: String, until: String },
    #[error("namespace {namespace} of lease {lease} does not exist")]
    NoNamespace { lease: String, namespace: String },
    #[error("lease {lease}: {message}")]
    Api { lease: String, message: String },
    /// Someone else took it over while this process thought it held it.
    #[error("lease {lease} was taken over by another holder")]
    Lost { lease: String },
}

/// Which Lease, for whom, and how it is marked.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// Who takes it: see [`identity`].
    pub identity: String,
    /// How long it holds without renewal: how long a killed holder keeps the next waiting.
    /// Renewal runs every third of it.
    pub duration: Duration,
    /// Field manager of every write, and the `app.kubernetes.io/managed-by` label.
    pub manager: &'static str,
    /// Labels besides `app.kubernetes.io/managed-by`: how [`live_members`] finds a group.
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// Who this process is, for a Lease: the host name (the pod name in Kubernetes) and pid.
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
    config: LeaseConfig,
    renewer: JoinHandle<()>,
    lost: watch::Receiver<bool>,
    tell: Arc<watch::Sender<bool>>,
    /// The Lease as this process last wrote it: releasing needs no read first.
    latest: Arc<Mutex<Lease>>,
    /// Held across each write, so a renewal and an annotation never race on one
    /// resourceVersion (the loser would read as a takeover).
    writing: Arc<tokio::sync::Mutex<()>>,
}

impl LeaseConfig {
    fn label(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn params(&self) -> PostParams {
        PostParams { field_manager: Some(self.manager.into()), ..PostParams::default() }
    }

    fn api_error(&self, e: &kube::Error) -> LeaseError {
        if namespace_missing(e) {
            return LeaseError::NoNamespace { lease: self.label(), namespace: self.namespace.clone() };
        }
        LeaseError::Api { lease: self.label(), message: describe_api_error(e) }
    }

    /// Takes the Lease, or fails with [`LeaseError::Held`] at once when someone else holds it.
    pub async fn try_acquire(&self, client: &kube::Client) -> Result<HeldLease, LeaseError> {
        let api: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        let lease = self.take(&api).await?;
        Ok(self.hold(api, lease))
    }

    /// Waits until this process holds the Lease, looking every `poll` whether it became free.
    /// Errors other than "held" end the wait.
    pub async fn wait(&self, client: &kube::Client, poll: Duration) -> Result<HeldLease, LeaseError> {
        let api: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        let mut waiting_logged = false;
        let lease = loop {
            match self.take(&api).await {
                Ok(lease) => break lease,
                Err(LeaseError::Held { holder, .. }) => {
                    if !waiting_logged {
                        tracing::info!(lease = %self.label(), holder, "another process holds the lease; standing by");
                        waiting_logged = true;
                    }
                    tokio::time::sleep(poll).await;
                }
                Err(e) => return Err(e),
            }
        };
        tracing::info!(lease = %self.label(), identity = %self.identity, "lease acquired");
        Ok(self.hold(api, lease))
    }

    /// One compare-and-swap attempt.
    async fn take(&self, api: &Api<Lease>) -> Result<Lease, LeaseError> {
        let now = Timestamp::now();
        let taken = match api.get_opt(&self.name).await.map_err(|e| self.api_error(&e))? {
            None => api.create(&self.params(), &self.lease(None, now, 0)).await,
            Some(current) => {
                if let Some((holder, until)) = held_by_other(&current, &self.identity, now) {
                    return Err(LeaseError::Held { lease: self.label(), holder, until });
                }
                let transitions = current.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(0);
                let lease = self.lease(current.metadata.resource_version, now, transitions + 1);
                api.replace(&self.name, &self.params(), &lease).await
            }
        };
        match taken {
            Ok(lease) => Ok(lease),
            // Someone else created or took it between our read and our write.
            Err(e) if status_code(&e) == Some(409) => {
                let current = api.get_opt(&self.name).await.ok().flatten();
                let (holder, until) =
                    current.and_then(|l| held_by_other(&l, &self.identity, now)).unwrap_or(("unknown".into(), "unknown".into()));
                Err(LeaseError::Held { lease: self.label(), holder, until })
            }
            Err(e) => Err(self.api_error(&e)),
        }
    }

    fn lease(&self, resource_version: Option<String>, now: Timestamp, transitions: i32) -> Lease {
        let annotations = self.annotations.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let labels = self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let metadata = object_meta(&self.name, Some(&self.namespace), labels.chain([(MANAGED_BY, self.manager)]), annotations);
        Lease {
            metadata: ObjectMeta { resource_version, ..metadata },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(self.duration.as_secs().clamp(1, i32::MAX as u64) as i32),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                lease_transitions: Some(transitions),
                ..LeaseSpec::default()
            }),
        }
    }

    fn hold(&self, api: Api<Lease>, lease: Lease) -> HeldLease {
        let (tell, lost) = watch::channel(false);
        let tell = Arc::new(tell);
        let latest = Arc::new(Mutex::new(lease));
        let writing = Arc::new(tokio::sync::Mutex::new(()));
        let renewer = tokio::spawn(renew(api.clone(), latest.clone(), writing.clone(), self.clone(), tell.clone()));
        HeldLease { api, config: self.clone(), renewer, lost, tell, latest, writing }
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

/// Renews every third of the duration; says `lost` when a renewal is refused (someone
/// else took the Lease) or when none got through before it expired. A renewal that hangs
/// is given up after a third of the duration, so an unreachable apiserver cannot hold the
/// holder past its expiry unaware.
async fn renew(
    api: Api<Lease>,
    latest: Arc<Mutex<Lease>>,
    writing: Arc<tokio::sync::Mutex<()>>,
    config: LeaseConfig,
    lost: Arc<watch::Sender<bool>>,
) {
    let label = config.label();
    let duration = SignedDuration::try_from(config.duration).unwrap_or(SignedDuration::MAX);
    let mut renewed = Timestamp::now();
    loop {
        tokio::time::sleep(config.duration / 3).await;
        let _writing = writing.lock().await;
        let now = Timestamp::now();
        let mut lease = latest.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        if let Some(spec) = lease.spec.as_mut() {
            spec.renew_time = Some(MicroTime(now));
        }
        let written = match tokio::time::timeout(config.duration / 3, api.replace(&config.name, &config.params(), &lease)).await {
            Ok(written) => written,
            Err(_) => {
                tracing::warn!(lease = %label, "renewing the lease timed out; retrying");
                if Timestamp::now() >= renewed.saturating_add(duration).unwrap_or(Timestamp::MAX) {
                    let _ = lost.send(true);
                    return;
                }
                continue;
            }
        };
        match written {
            Ok(updated) => {
                *latest.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = updated;
                renewed = now;
            }
            Err(e) if matches!(status_code(&e), Some(404 | 409)) => {
                tracing::error!(lease = %label, "lease taken over by another holder");
                let _ = lost.send(true);
                return;
            }
            Err(e) => {
                tracing::warn!(lease = %label, error = %describe_api_error(&e), "could not renew the lease; retrying");
                if Timestamp::now() >= renewed.saturating_add(duration).unwrap_or(Timestamp::MAX) {
                    let _ = lost.send(true);
                    return;
                }
            }
        }
    }
}

impl HeldLease {
    /// Changes to `true` when the Lease was lost; never while it is held.
    pub fn lost(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    /// Whether the Lease is still held.
    pub fn held(&self) -> bool {
        !*self.lost.borrow()
    }

    /// When the Lease was last renewed as this process wrote it: the others count its
    /// expiry from there.
    pub fn renewed(&self) -> Option<Timestamp> {
        let latest = self.latest.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        latest.spec.as_ref().and_then(|s| s.renew_time.as_ref()).map(|t| t.0)
    }

    /// Sets annotation `key` to `value` on the Lease and renews it in the same write. A
    /// refusal (someone else took the Lease) says `lost` as a failed renewal does.
    pub async fn annotate(&self, key: &str, value: &str) -> Result<(), LeaseError> {
        let _writing = self.writing.lock().await;
        if !self.held() {
            return Err(LeaseError::Lost { lease: self.config.label() });
        }
        let mut lease = self.latest.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        lease.metadata.annotations.get_or_insert_default().insert(key.into(), value.into());
        if let Some(spec) = lease.spec.as_mut() {
            spec.renew_time = Some(MicroTime(Timestamp::now()));
        }
        match self.api.replace(&self.config.name, &self.config.params(), &lease).await {
            Ok(updated) => {
                *self.latest.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = updated;
                Ok(())
            }
            Err(e) if matches!(status_code(&e), Some(404 | 409)) => {
                let _ = self.tell.send(true);
                Err(LeaseError::Lost { lease: self.config.label() })
            }
            Err(e) => Err(self.config.api_error(&e)),
        }
    }

    /// Stops renewing and frees the Lease, so the next holder need not wait for it to expire.
    /// One write on the resourceVersion last written; only when that fails (a renewal
    /// answered after the abort) is the Lease read again, and freed if still ours.
    pub async fn release(self) {
        self.renewer.abort();
        let lease = self.latest.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        let freed = match self.free(lease).await {
            Err(e) if status_code(&e) == Some(409) => match self.api.get_opt(&self.config.name).await {
                Ok(Some(current)) => self.free(current).await,
                Ok(None) => return,
                Err(e) => Err(e),
            },
            other => other,
        };
        if let Err(e) = freed {
            tracing::warn!(lease = %self.config.label(), error = %describe_api_error(&e),
                "could not release the lease; it expires on its own");
        }
    }

    /// Clears the holder of `lease` if it is this process.
    async fn free(&self, mut lease: Lease) -> Result<(), kube::Error> {
        let Some(spec) = lease.spec.as_mut().filter(|s| s.holder_identity.as_deref() == Some(&self.config.identity)) else {
            return Ok(());
        };
        spec.holder_identity = None;
        self.api.replace(&self.config.name, &self.config.params(), &lease).await.map(drop)
    }
}

/// A Lease of 30 s held by `holder`, renewed `renewed_secs_ago` before `now`.
#[cfg(test)]
fn test_lease(holder: Option<&str>, renewed_secs_ago: i64, now: Timestamp) -> Lease {
    Lease {
        spec: Some(LeaseSpec {
            holder_identity: holder.map(str::to_string),
            lease_duration_seconds: Some(30),
            renew_time: Some(MicroTime(now - SignedDuration::from_secs(renewed_secs_ago))),
            ..LeaseSpec::default()
        }),
        ..Lease::default()
    }
}

#[cfg(test)]
mod tests {
    use super::test_lease as lease;
    use super::*;

    #[test]
    fn a_lease_is_free_when_expired_released_or_ours() {
        let now = Timestamp::now();
        let (holder, _) = held_by_other(&lease(Some("pod-b/1"), 10, now), "pod-a/1", now).expect("held by b");
        assert_eq!(holder, "pod-b/1");
        assert_eq!(held_by_other(&lease(Some("pod-b/1"), 31, now), "pod-a/1", now), None, "expired");
        assert_eq!(held_by_other(&lease(Some("pod-a/1"), 10, now), "pod-a/1", now), None, "ours");
        assert_eq!(held_by_other(&lease(None, 10, now), "pod-a/1", now), None, "released");
        assert_eq!(held_by_other(&lease(Some(""), 10, now), "pod-a/1", now), None, "released by an older tool");
        assert_eq!(held_by_other(&Lease::default(), "pod-a/1", now), None, "no spec");
    }

    #[test]
    fn a_written_lease_carries_holder_duration_marks_and_the_version_it_replaces() {
        let config = LeaseConfig {
            namespace: "airlock-system".into(),
            name: "airlock-puller-edge-1".into(),
            identity: "pod-a/1".into(),
            duration: Duration::from_secs(120),
            manager: "airlock-puller",
            labels: BTreeMap::from([("airlock.dev/group".into(), "g1".into())]),
            annotations: BTreeMap::from([("airlock.dev/cluster".into(), "fleet/edge-1".into())]),
        };
        let now = Timestamp::now();
        let l = config.lease(Some("42".into()), now, 3);
        assert_eq!(l.metadata.resource_version.as_deref(), Some("42"));
        let labels = l.metadata.labels.unwrap();
        assert_eq!((labels["app.kubernetes.io/managed-by"].as_str(), labels["airlock.dev/group"].as_str()), ("airlock-puller", "g1"));
        assert_eq!(l.metadata.annotations.unwrap()["airlock.dev/cluster"], "fleet/edge-1");
        let spec = l.spec.unwrap();
        assert_eq!((spec.holder_identity.as_deref(), spec.lease_duration_seconds), (Some("pod-a/1"), Some(120)));
        assert_eq!(spec.lease_transitions, Some(3));
        let unmarked = LeaseConfig { annotations: BTreeMap::new(), ..config };
        assert_eq!(unmarked.lease(None, now, 0).metadata.annotations, None);
    }

    #[test]
    fn identity_is_host_and_pid() {
        let id = identity();
        assert!(id.ends_with(&format!("/{}", std::process::id())) && !id.starts_with('/'), "{id}");
    }
}
