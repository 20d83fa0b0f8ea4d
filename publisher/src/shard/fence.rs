//! The signer's gate on what a replica may sign and write while the membership changes.
//!
//! A replica narrows its fence to the clusters owned under both its old and new view
//! the moment it sees a new view ([`Fence::narrow`]); it waits there for the writes
//! already admitted to finish, since each holds the fence's read side until its store
//! write returned. Only then does it tell the others it works under the new view (the
//! caller writes that on its Lease), and it widens to the new view ([`Fence::settle`])
//! only once every member said the same. So two replicas are never both admitted to
//! one cluster: the one gaining it waits until the one losing it stopped.

use std::sync::Mutex;

use tokio::sync::watch;

use super::Shard;

/// What this replica may sign and write now, and how many admitted writes are going on.
///
/// Admitting never waits: a narrowing that made new admissions wait behind it would
/// deadlock a batch whose earlier writes end only once its later ones were admitted.
/// What keeps two replicas apart is that the narrowing returns, and the new view is
/// announced, only once no write admitted under the old view is still going on.
#[derive(Debug)]
pub struct Fence {
    shard: Mutex<Shard>,
    writing: watch::Sender<usize>,
}

/// A write admitted through the fence; a narrowing waits until it is dropped.
#[derive(Debug)]
pub struct Admitted<'f> {
    fence: &'f Fence,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.fence.writing.send_modify(|n| *n -= 1);
    }
}

/// Why a cluster was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FenceError {
    #[error("refused to write cluster {cluster}: another publisher replica owns it now")]
    NotOwned { cluster: String },
}

impl Fence {
    /// A fence admitting what `shard` owns.
    pub fn new(shard: Shard) -> Fence {
        Fence { shard: Mutex::new(shard), writing: watch::channel(0).0 }
    }

    fn shard(&self) -> std::sync::MutexGuard<'_, Shard> {
        self.shard.lock().expect("no panic holds the fence")
    }

    /// What a run may publish now.
    pub async fn current(&self) -> Shard {
        self.shard().clone()
    }

    /// Admits `clusters` when every one is owned; a narrowing waits until the returned
    /// guard is dropped, so hold it until the write returned.
    pub async fn admit<'c>(&self, clusters: impl IntoIterator<Item = &'c str>) -> Result<Admitted<'_>, FenceError> {
        let shard = self.shard();
        for cluster in clusters {
            if !shard.owns(cluster) {
                return Err(FenceError::NotOwned { cluster: cluster.into() });
            }
        }
        // Counted while the shard is locked: a narrowing after this waits for it.
        self.writing.send_modify(|n| *n += 1);
        Ok(Admitted { fence: self })
    }

    /// Admits from now on only what `view` also assigns here; returns once no write
    /// admitted before is still going on.
    pub async fn narrow(&self, view: Vec<String>) {
        {
            let mut shard = self.shard();
            if shard.views.last() != Some(&view) {
                shard.views.push(view);
            }
        }
        self.drained().await;
    }

    /// Admits what `view` alone assigns here: every member works under it.
    pub async fn settle(&self, view: Vec<String>) {
        self.shard().views = vec![view];
    }

    /// Admits nothing any more (the Lease is lost); returns once no admitted write is
    /// still going on.
    pub async fn close(&self) {
        self.shard().views = vec![Vec::new()];
        self.drained().await;
    }

    /// Returns once no admitted write is going on.
    async fn drained(&self) {
        let mut writing = self.writing.subscribe();
        let _ = writing.wait_for(|n| *n == 0).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::owner;
    use super::*;

    fn view(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// A cluster `me` owns under `first` and not under `second`.
    fn losing(me: &str, first: &[String], second: &[String]) -> String {
        (0..).map(|i| format!("fleet/edge-{i}")).find(|c| owner(first, c) == Some(me) && owner(second, c) != Some(me)).unwrap()
    }

    #[tokio::test]
    async fn narrowing_waits_for_admitted_writes_and_refuses_lost_clusters_after() {
        let (three, four) = (view(&["a", "b", "c"]), view(&["a", "b", "c", "d"]));
        let fence = Arc::new(Fence::new(Shard { me: "a".into(), views: vec![three.clone()], ..Shard::default() }));
        let lost = losing("a", &three, &four);
        let writing = fence.admit([lost.as_str()]).await.expect("owned before d joined");
        let narrowing = tokio::spawn({
            let fence = Arc::clone(&fence);
            let four = four.clone();
            async move { fence.narrow(four).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!narrowing.is_finished(), "narrowed while a write was admitted");
        drop(writing);
        narrowing.await.unwrap();
        assert_eq!(fence.admit([lost.as_str()]).await.unwrap_err(), FenceError::NotOwned { cluster: lost.clone() });
        assert_eq!(fence.current().await.views, [three, four.clone()]);
        fence.settle(four.clone()).await;
        assert_eq!(fence.current().await.views, [four]);
        fence.close().await;
        assert!(fence.current().await.owns_nothing());
    }

    #[tokio::test]
    async fn a_narrowing_holds_back_no_admission_of_a_cluster_kept() {
        let (three, four) = (view(&["a", "b", "c"]), view(&["a", "b", "c", "d"]));
        let fence = Arc::new(Fence::new(Shard { me: "a".into(), views: vec![three.clone()], ..Shard::default() }));
        let kept =
            (0..).map(|i| format!("fleet/edge-{i}")).find(|c| owner(&three, c) == Some("a") && owner(&four, c) == Some("a")).unwrap();
        let first = fence.admit([kept.as_str()]).await.expect("owned");
        let narrowing = tokio::spawn({
            let fence = Arc::clone(&fence);
            async move { fence.narrow(four).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        // A batch whose first write ends only after its second was admitted goes on.
        let second = tokio::time::timeout(Duration::from_secs(1), fence.admit([kept.as_str()])).await;
        let second = second.expect("not held back by the narrowing").expect("still owned");
        assert!(!narrowing.is_finished(), "narrowed while writes were admitted");
        drop((first, second));
        narrowing.await.unwrap();
    }

    #[tokio::test]
    async fn a_gained_cluster_is_admitted_only_once_settled() {
        let (four, three) = (view(&["a", "b", "c", "d"]), view(&["a", "b", "c"]));
        let fence = Fence::new(Shard { me: "a".into(), views: vec![four.clone()], ..Shard::default() });
        let gained =
            (0..).map(|i| format!("fleet/edge-{i}")).find(|c| owner(&four, c) == Some("d") && owner(&three, c) == Some("a")).unwrap();
        fence.narrow(three.clone()).await;
        assert!(fence.admit([gained.as_str()]).await.is_err(), "admitted before every member moved");
        fence.settle(three).await;
        assert!(fence.admit([gained.as_str()]).await.is_ok());
    }
}
