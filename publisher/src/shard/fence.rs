//! The signer's gate on what a replica may sign and write while the membership changes.
//!
//! A replica narrows its fence to the clusters owned under both its old and new view
//! the moment it sees a new view ([`Fence::narrow`]); it waits there for the writes
//! already admitted to finish, since each holds the fence's read side until its store
//! write returned. Only then does it tell the others it works under the new view (the
//! caller writes that on its Lease), and it widens to the new view ([`Fence::settle`])
//! only once every member said the same. So two replicas are never both admitted to
//! one cluster: the one gaining it waits until the one losing it stopped.

use tokio::sync::{RwLock, RwLockReadGuard};

use super::Shard;

/// What this replica may sign and write now.
#[derive(Debug)]
pub struct Fence {
    shard: RwLock<Shard>,
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
        Fence { shard: RwLock::new(shard) }
    }

    /// What a run may publish now.
    pub async fn current(&self) -> Shard {
        self.shard.read().await.clone()
    }

    /// Admits `clusters` when every one is owned; a narrowing waits until the returned
    /// guard is dropped, so hold it until the write returned.
    pub async fn admit<'c>(&self, clusters: impl IntoIterator<Item = &'c str>) -> Result<RwLockReadGuard<'_, Shard>, FenceError> {
        let shard = self.shard.read().await;
        for cluster in clusters {
            if !shard.owns(cluster) {
                return Err(FenceError::NotOwned { cluster: cluster.into() });
            }
        }
        Ok(shard)
    }

    /// Admits from now on only what `view` also assigns here; returns once no write
    /// admitted before is still going on.
    pub async fn narrow(&self, view: Vec<String>) {
        let mut shard = self.shard.write().await;
        if shard.views.last() != Some(&view) {
            shard.views.push(view);
        }
    }

    /// Admits what `view` alone assigns here: every member works under it.
    pub async fn settle(&self, view: Vec<String>) {
        self.shard.write().await.views = vec![view];
    }

    /// Admits nothing any more (the Lease is lost); returns once no admitted write is
    /// still going on.
    pub async fn close(&self) {
        self.shard.write().await.views = vec![Vec::new()];
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
