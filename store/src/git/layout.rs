//! The per-cluster Git layouts (spec 9.5.1): a reference whose URL path or `#BRANCH` holds
//! `{namespace}` and `{name}` names one repository, or one branch, per cluster. Each
//! cluster's is a [`GitStore`] of its own, opened when that cluster is first asked for, so
//! that a server's per-repository or per-branch rights are what keep one cluster from
//! reading another's bundles. Inside it the tree is the shared layout's (9.5), so readers
//! are the same.
//!
//! What works on one cluster goes to its store. A publish writes one commit per repository
//! or branch, holding that cluster's bundle only; reports go to the cluster's own
//! repository (14.7). Listing every cluster is refused: no one place holds them all, and
//! whoever asks knows its clusters (the publisher reads them from the management side).

use std::collections::BTreeMap;
use std::path::PathBuf;

use async_trait::async_trait;
use futures::StreamExt;

use super::GitStore;
use crate::error::StoreError;
use crate::fetched::{Fetched, PartCopy};
use crate::meta::PublishMeta;
use crate::reference::expand;
use crate::reports::{Latest, LatestReports, ReportPush, ReportStore, all_at_once};
use crate::store::Store;
use crate::userinfo::redact;
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;

/// Repositories read at once when reports of many clusters are asked for.
const READS_IN_FLIGHT: usize = 8;

/// Items by the store of their cluster, one entry per repository or branch.
type Groups<T> = Vec<(GitStore, Vec<T>)>;

/// One Git repository or branch per cluster, named by a reference with placeholders.
pub struct GitClusters {
    /// The URL and branch with placeholders; the URL with its credentials, if any.
    url: String,
    branch: String,
    cache_root: PathBuf,
}

impl GitClusters {
    /// `url` and `branch` with placeholders, caching each cluster's under `cache_root`.
    pub(super) fn with_cache(url: &str, branch: &str, cache_root: PathBuf) -> GitClusters {
        GitClusters { url: url.to_string(), branch: branch.to_string(), cache_root }
    }

    /// `cluster`'s own store: the placeholders replaced. A `file://` repository that does
    /// not exist yet is created by its first publish.
    fn store(&self, cluster: &ClusterId) -> Result<GitStore, StoreError> {
        Ok(GitStore::with_cache(&expand(&self.url, cluster), &expand(&self.branch, cluster), &self.cache_root)?.creating_local())
    }

    /// `items` grouped by what `key` gives for their cluster's store, in first-seen order;
    /// apart, those whose store cannot be opened (a cluster name that makes a bad branch).
    fn group<T: Clone>(
        &self,
        items: &[T],
        cluster: impl Fn(&T) -> Result<ClusterId, StoreError>,
        key: impl Fn(&GitStore) -> String,
    ) -> (Groups<T>, Vec<(T, StoreError)>) {
        let (mut groups, mut failed): (Groups<T>, _) = (Vec::new(), Vec::new());
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for item in items {
            let store = match cluster(item).and_then(|c| self.store(&c)) {
                Ok(store) => store,
                Err(e) => {
                    failed.push((item.clone(), e));
                    continue;
                }
            };
            match index.get(&key(&store)) {
                Some(&i) => groups[i].1.push(item.clone()),
                None => {
                    index.insert(key(&store), groups.len());
                    groups.push((store, vec![item.clone()]));
                }
            }
        }
        (groups, failed)
    }

    /// The newest report of each of `wanted`, in its order: one listing per repository.
    async fn read_reports(&self, wanted: &[(ClusterId, Option<String>)], limits: &Limits) -> Vec<Result<Latest, StoreError>> {
        let (groups, failed) = self.group(wanted, |(c, _)| Ok(c.clone()), |s| s.target.url.clone());
        let reads: Vec<_> = groups.iter().map(|(store, wanted)| store.read_reports(wanted, limits)).collect();
        let found: Vec<_> = futures::stream::iter(reads).buffered(READS_IN_FLIGHT).collect().await;
        // Back into the order asked.
        let mut by_cluster: BTreeMap<ClusterId, Result<Latest, StoreError>> = failed.into_iter().map(|((c, _), e)| (c, Err(e))).collect();
        for ((_, wanted), found) in groups.iter().zip(found) {
            by_cluster.extend(wanted.iter().map(|(c, _)| c.clone()).zip(found));
        }
        wanted.iter().map(|(c, _)| by_cluster.get(c).cloned().unwrap_or(Ok(Latest::None))).collect()
    }

    fn config(&self, message: String) -> StoreError {
        StoreError::Config { store: self.describe(), message }
    }
}

#[async_trait]
impl Store for GitClusters {
    fn describe(&self) -> String {
        format!("git+{}#{}", redact(&self.url).0, self.branch)
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        self.store(cluster)?.fetch_envelope(cluster, limits).await
    }

    async fn fetch_part(
        &self,
        cluster: &ClusterId,
        fetched: &Fetched,
        part: &ProfileEntry,
        limits: &Limits,
    ) -> Result<PartCopy, StoreError> {
        self.store(cluster)?.fetch_part(cluster, fetched, part, limits).await
    }

    /// One commit per repository or branch. A cluster without a valid place fails the
    /// publish before anything is written. Every place is tried, so that one repository
    /// missing on the server keeps no other cluster from its bundle; the first failure is
    /// returned, the others logged.
    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        let cluster = |b: &SignedBundle| b.cluster().parse::<ClusterId>().map_err(|e| self.config(e.to_string()));
        let (groups, failed) = self.group(bundles, cluster, Store::describe);
        if let Some((_, e)) = failed.into_iter().next() {
            return Err(e);
        }
        let mut first = None;
        for (store, bundles) in groups {
            if let Err(e) = store.publish(&bundles, meta).await {
                tracing::warn!(store = %store.describe(), "publish failed: {e}");
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    async fn clusters(&self, _limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        Err(self
            .config("a per-cluster layout ({namespace} or {name} in the reference) cannot list its clusters: name them (--cluster)".into()))
    }

    fn reports(&self) -> Option<&dyn ReportStore> {
        Some(self)
    }
}

/// Reports on the branches `reports/<namespace>/<name>` of each cluster's own repository.
#[async_trait]
impl ReportStore for GitClusters {
    fn describe_reports(&self) -> String {
        self.describe()
    }

    async fn push_report(&self, report: &ReportPush) -> Result<(), StoreError> {
        self.store(&report.cluster)?.push_report(report).await
    }

    async fn latest_report(&self, cluster: &ClusterId, seen: Option<&str>, limits: &Limits) -> Result<Latest, StoreError> {
        self.store(cluster)?.latest_report(cluster, seen, limits).await
    }

    /// The branch layout's clusters share one listing; every report is handed over once
    /// all are read.
    fn latest_reports<'a>(&'a self, wanted: &'a [(ClusterId, Option<String>)], limits: &'a Limits) -> LatestReports<'a> {
        all_at_once(self.read_reports(wanted, limits))
    }
}

#[cfg(test)]
mod tests {
    use git2::Repository;
    use jiff::Timestamp;

    use super::*;
    use airlock_bundle::testkit::Fixture;

    fn fixture(cluster: &str) -> Fixture {
        Fixture { cluster: cluster.parse().unwrap(), ..Fixture::new(1) }
    }

    /// The clusters whose directories the tree of `branch` of the repository at `path` holds.
    fn clusters_in(path: &std::path::Path, branch: &str) -> Vec<String> {
        let repo = Repository::open_bare(path).unwrap();
        let tree = repo.find_reference(&format!("refs/heads/{branch}")).unwrap().peel_to_tree().unwrap();
        let mut found = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.name() == Ok("envelope.json") {
                found.push(dir.trim_end_matches('/').to_string());
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
        found
    }

    #[tokio::test]
    async fn a_repository_per_cluster_holds_its_bundle_and_reports_only() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}/{{namespace}}/{{name}}.git", dir.path().display());
        let store = GitClusters::with_cache(&url, "main", dir.path().join("cache"));
        let (a, b) = (fixture("fleet/edge-1"), fixture("fleet/edge-2"));
        store.publish(&[a.signed(1, Fixture::files()), b.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
        assert_eq!(clusters_in(&dir.path().join("fleet/edge-1.git"), "main"), ["clusters/fleet/edge-1"]);
        assert_eq!(clusters_in(&dir.path().join("fleet/edge-2.git"), "main"), ["clusters/fleet/edge-2"]);
        for fx in [&a, &b] {
            let fetched = store.fetch_envelope(&fx.cluster, &Limits::SPEC).await.unwrap();
            assert_eq!(fetched.envelope, fx.signed(1, Fixture::files()).envelope);
        }
        let err = store.fetch_envelope(&"fleet/edge-3".parse().unwrap(), &Limits::SPEC).await.unwrap_err();
        assert!(err.to_string().contains("fleet/edge-3.git"), "the error names the cluster's own repository: {err}");
        let err = store.clusters(&Limits::SPEC).await.unwrap_err();
        assert!(matches!(&err, StoreError::Config { message, .. } if message.contains("cannot list its clusters")), "{err:?}");

        let at: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
        for (fx, body) in [(&b, "bee"), (&a, "ay")] {
            let report = ReportPush { cluster: fx.cluster.clone(), finished_at: at, result: "applied".into(), envelope: body.into() };
            store.push_report(&report).await.unwrap();
        }
        let own = Repository::open_bare(dir.path().join("fleet/edge-1.git")).unwrap();
        assert!(own.find_reference("refs/heads/reports/fleet/edge-1").is_ok());
        assert!(own.find_reference("refs/heads/reports/fleet/edge-2").is_err(), "edge-2 reports to its own repository");
        let wanted: Vec<_> = [&a, &b].iter().map(|fx| (fx.cluster.clone(), None)).collect();
        let found: Vec<_> =
            store.latest_reports(&wanted, &Limits::SPEC).collect::<Vec<_>>().await.into_iter().map(Result::unwrap).collect();
        let bodies: Vec<_> = found
            .iter()
            .map(|l| match l {
                Latest::Report { envelope, .. } => envelope.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(bodies, [b"ay".to_vec(), b"bee".to_vec()], "in the order asked");
    }

    #[tokio::test]
    async fn a_branch_per_cluster_shares_one_repository() {
        let dir = tempfile::tempdir().unwrap();
        let remote = dir.path().join("fleet.git");
        Repository::init_bare(&remote).unwrap();
        let url = format!("file://{}", remote.display());
        let store = GitClusters::with_cache(&url, "airlock/{namespace}/{name}", dir.path().join("cache"));
        let (a, b) = (fixture("fleet/edge-1"), fixture("fleet/edge-2"));
        store.publish(&[a.signed(1, Fixture::files()), b.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
        assert_eq!(clusters_in(&remote, "airlock/fleet/edge-1"), ["clusters/fleet/edge-1"]);
        assert_eq!(clusters_in(&remote, "airlock/fleet/edge-2"), ["clusters/fleet/edge-2"]);
        let repo = Repository::open_bare(&remote).unwrap();
        assert!(repo.find_reference("refs/heads/main").is_err(), "no shared branch");
        let one = repo.find_reference("refs/heads/airlock/fleet/edge-1").unwrap().peel_to_commit().unwrap();
        assert_eq!(one.parent_count(), 0, "each cluster's branch has a history of its own");
        let fetched = store.fetch_envelope(&b.cluster, &Limits::SPEC).await.unwrap();
        assert_eq!(fetched.envelope, b.signed(1, Fixture::files()).envelope);
        assert_eq!(store.describe(), format!("git+{url}#airlock/{{namespace}}/{{name}}"));

        // A cluster name that makes no valid branch fails alone, and a publish before it writes.
        let dotted = fixture("fleet/edge.lock");
        let before = repo.references().unwrap().count();
        let err = store.publish(&[a.signed(2, Fixture::files()), dotted.signed(1, Fixture::files())], &PublishMeta::default()).await;
        assert!(matches!(&err, Err(StoreError::Config { message, .. }) if message.contains("not a valid branch name")), "{err:?}");
        assert_eq!(repo.references().unwrap().count(), before, "nothing written");
        let wanted = [(a.cluster.clone(), None), (dotted.cluster.clone(), None)];
        let found: Vec<_> = store.latest_reports(&wanted, &Limits::SPEC).collect().await;
        assert!(matches!((&found[0], &found[1]), (Ok(Latest::None), Err(StoreError::Config { .. }))), "{found:?}");
    }
}
