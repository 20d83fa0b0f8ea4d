//! How a `watch` replica takes its seat: standing by on the one Lease of its shard key
//! (one publishes, the others wait), or, with `--scale-out`, as a member of the replicas
//! sharing that key's clusters (`shard`).
//!
//! A member holds a Lease of its own, labelled with its group, and every poll lists the
//! group's live Leases: that is its view. When the view changes it narrows its fence to
//! the clusters it owns under both views (waiting for admitted writes to finish), then
//! writes the new view's name on its Lease; it widens to the new view once every member's
//! Lease names it. It stops admitting anything when its own renewal is older than
//! [`SELF_FENCE`] of the duration, before the others count its Lease as expired.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use airlock_cli::lease::{self, HeldLease, LeaseConfig, LeaseError, Member};
use jiff::{SignedDuration, Timestamp};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::shard::fence::Fence;
use crate::shard::{Shard, short_hash, view_name};

/// The label that groups the Leases of the replicas sharing one shard key.
pub const GROUP_LABEL: &str = "airlock.dev/publisher-group";
/// The annotation on a member's Lease naming the view it works under.
pub const VIEW_ANNOTATION: &str = "airlock.dev/publisher-view";
/// The annotation on a Lease naming the shard key it serves.
const KEY_ANNOTATION: &str = "airlock.dev/shard-key";
/// A member stops admitting writes once this share of the Lease duration passed without a
/// renewal: the rest of the duration is the margin for clock skew between replicas and
/// for a write admitted just before.
const SELF_FENCE: f64 = 2.0 / 3.0;
/// Membership is looked at this many times per Lease duration.
const POLLS_PER_DURATION: u32 = 6;

/// Where and as whom a replica takes its seat.
#[derive(Debug, Clone)]
pub struct Seating {
    pub namespace: String,
    pub key: Option<String>,
    pub identity: String,
    pub duration: Duration,
    pub scale_out: bool,
}

/// A replica's seat, held until released.
pub enum Seat {
    /// Holds the one Lease of its key: publishes every cluster of the key.
    Leader(Box<HeldLease>),
    /// One of the members sharing the key's clusters.
    Member(Membership),
}

/// A member's Lease and the task that follows the group.
pub struct Membership {
    held: Arc<HeldLease>,
    fence: Arc<Fence>,
    follower: JoinHandle<()>,
    stopped: watch::Receiver<bool>,
}

impl Seating {
    /// The group's label value: the key hashed, since a key need not be a valid label.
    fn group(&self) -> String {
        match &self.key {
            None => "unkeyed".into(),
            Some(key) => format!("key-{}", short_hash([key.as_str()], 6)),
        }
    }

    fn config(&self, name: String, labels: BTreeMap<String, String>) -> LeaseConfig {
        LeaseConfig {
            namespace: self.namespace.clone(),
            name,
            identity: self.identity.clone(),
            duration: self.duration,
            manager: "airlock-publisher",
            labels,
            annotations: self.key.iter().map(|k| (KEY_ANNOTATION.to_string(), k.clone())).collect(),
        }
    }

    /// The Lease one replica of the key holds while the others stand by.
    pub fn leader_lease(&self) -> LeaseConfig {
        let name = match &self.key {
            None => "airlock-publisher".to_string(),
            Some(_) => format!("airlock-publisher-{}", self.group()),
        };
        self.config(name, BTreeMap::new())
    }

    /// This member's own Lease, named for its group and identity.
    fn member_lease(&self) -> LeaseConfig {
        let name = format!("airlock-publisher-m-{}", short_hash([self.group().as_str(), self.identity.as_str()], 6));
        self.config(name, BTreeMap::from([(GROUP_LABEL.to_string(), self.group())]))
    }

    /// Takes the Lease of this member; it publishes nothing until the group agreed on a
    /// view. `changes` is told whenever it gains clusters.
    pub async fn join(&self, client: &kube::Client, changes: Arc<Notify>) -> Result<Membership, LeaseError> {
        let held = Arc::new(self.member_lease().try_acquire(client).await?);
        let fence = Arc::new(Fence::new(Shard { key: self.key.clone(), me: self.identity.clone(), views: vec![Vec::new()] }));
        let (stop, stopped) = watch::channel(false);
        let follower = tokio::spawn(follow(self.clone(), client.clone(), Arc::clone(&held), Arc::clone(&fence), changes, stop));
        tracing::info!(identity = %self.identity, group = %self.group(), "joined the publishers sharing the fleet");
        Ok(Membership { held, fence, follower, stopped })
    }
}

impl Seat {
    /// Changes to `true` once this replica must stop publishing.
    pub fn lost(&self) -> watch::Receiver<bool> {
        match self {
            Seat::Leader(held) => held.lost(),
            Seat::Member(m) => m.stopped.clone(),
        }
    }

    /// The fence its signer writes through; none for a leader, which owns all.
    pub fn fence(&self) -> Option<Arc<Fence>> {
        match self {
            Seat::Leader(_) => None,
            Seat::Member(m) => Some(Arc::clone(&m.fence)),
        }
    }

    /// Frees the Lease so the others need not wait for it to expire; a member first stops
    /// admitting writes.
    pub async fn release(self) {
        match self {
            Seat::Leader(held) => held.release().await,
            Seat::Member(m) => {
                m.follower.abort();
                let _ = m.follower.await;
                m.fence.close().await;
                if let Ok(held) = Arc::try_unwrap(m.held) {
                    held.release().await;
                }
            }
        }
    }
}

/// Follows the group until the Lease is lost: narrows, announces, settles.
async fn follow(
    seating: Seating,
    client: kube::Client,
    held: Arc<HeldLease>,
    fence: Arc<Fence>,
    changes: Arc<Notify>,
    stop: watch::Sender<bool>,
) {
    let selector = format!("{GROUP_LABEL}={}", seating.group());
    let fence_after = SignedDuration::try_from(seating.duration.mul_f64(SELF_FENCE)).unwrap_or(SignedDuration::MAX);
    let poll = (seating.duration / POLLS_PER_DURATION).max(Duration::from_millis(200));
    let mut announced: Option<String> = None;
    loop {
        let now = Timestamp::now();
        let stale = held.renewed().is_none_or(|renewed| now.duration_since(renewed) > fence_after);
        if !held.held() || stale {
            tracing::error!(identity = %seating.identity, "could not renew the member lease in time; publishing nothing more");
            fence.close().await;
            let _ = stop.send(true);
            return;
        }
        match lease::live_members(&client, &seating.namespace, &selector, now).await {
            Ok(members) => {
                let view = view_of(&members, &seating.identity);
                let current = fence.current().await.views;
                if current.last() != Some(&view) {
                    tracing::info!(members = ?view, "the publishers sharing the fleet changed; handing over");
                    fence.narrow(view.clone()).await;
                }
                let name = view_name(&view);
                if announced.as_ref() != Some(&name) {
                    match held.annotate(VIEW_ANNOTATION, &name).await {
                        Ok(()) => announced = Some(name.clone()),
                        Err(e) => tracing::warn!(error = %e, "could not announce the view; retrying"),
                    }
                }
                if current.len() > 1 && current.last() == Some(&view) && agreed(&members, &seating.identity, &name) {
                    fence.settle(view.clone()).await;
                    tracing::info!(members = ?view, "every publisher works under the new view; publishing its clusters");
                    changes.notify_one();
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not list the publishers sharing the fleet; retrying"),
        }
        tokio::time::sleep(poll).await;
    }
}

/// The sorted identities of the live members and this one.
fn view_of(members: &[Member], me: &str) -> Vec<String> {
    let mut view: Vec<String> = members.iter().map(|m| m.identity.clone()).collect();
    view.push(me.to_string());
    view.sort();
    view.dedup();
    view
}

/// Whether every other live member announced the view `name`.
fn agreed(members: &[Member], me: &str, name: &str) -> bool {
    members.iter().filter(|m| m.identity != me).all(|m| m.annotations.get(VIEW_ANNOTATION).map(String::as_str) == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(identity: &str, view: Option<&str>) -> Member {
        let annotations = view.map(|v| BTreeMap::from([(VIEW_ANNOTATION.to_string(), v.to_string())])).unwrap_or_default();
        Member { identity: identity.into(), until: Timestamp::now(), annotations }
    }

    #[test]
    fn the_view_is_every_live_member_and_this_one_sorted() {
        let members = [member("pod-c", None), member("pod-a", None)];
        assert_eq!(view_of(&members, "pod-b"), ["pod-a", "pod-b", "pod-c"]);
        assert_eq!(view_of(&members, "pod-a"), ["pod-a", "pod-c"]);
        assert_eq!(view_of(&[], "pod-a"), ["pod-a"]);
    }

    #[test]
    fn a_view_is_agreed_when_every_other_member_announced_it() {
        let members = [member("pod-a", Some("v2")), member("pod-b", Some("v1")), member("pod-c", Some("v2"))];
        assert!(!agreed(&members, "pod-a", "v2"), "pod-b still works under v1");
        assert!(agreed(&members, "pod-b", "v2"), "its own announcement is not read back");
        assert!(!agreed(&[member("pod-b", None)], "pod-a", "v2"), "a member that announced nothing");
    }

    #[test]
    fn lease_names_are_valid_and_differ_by_key_and_identity() {
        let seating = |key: Option<&str>, identity: &str| Seating {
            namespace: "ns".into(),
            key: key.map(str::to_string),
            identity: identity.into(),
            duration: Duration::from_secs(30),
            scale_out: true,
        };
        let unkeyed = seating(None, "host/1");
        assert_eq!(unkeyed.leader_lease().name, "airlock-publisher");
        let keyed = seating(Some("eu west/1"), "host/1");
        assert!(keyed.leader_lease().name.starts_with("airlock-publisher-key-"));
        let names = [unkeyed.member_lease().name, keyed.member_lease().name, seating(None, "host/2").member_lease().name];
        assert!(names[0] != names[1] && names[0] != names[2], "{names:?}");
        for name in names {
            assert!(name.len() <= 63 && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{name}");
        }
        assert_eq!(keyed.member_lease().labels[GROUP_LABEL], keyed.group());
        assert_eq!(keyed.member_lease().annotations[KEY_ANNOTATION], "eu west/1");
    }
}
