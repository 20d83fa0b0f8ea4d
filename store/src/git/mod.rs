//! The Git store (spec 9.5): per cluster, the directory `clusters/<namespace>/<name>/` of
//! one branch holds `envelope.json`, `keyrings.json` (optional) and every bundle file as
//! plain YAML, so a version bump is a readable diff. The pullers' reports are on branches
//! of their own, `reports/<namespace>/<name>` (`reports`, spec 14.7).
//!
//! All work happens on objects in a local bare cache, `$AIRLOCK_CACHE/git/<hash of URL>`,
//! never in a checked-out working tree. git2 blocks, so every operation runs on tokio's
//! blocking pool. A publish is one commit pushed without force; when another publisher
//! moved the branch meanwhile, it is rebuilt on the new tip and pushed again, a few times.
//!
//! Concurrency: processes sharing a cache take turns through an exclusive `flock` on the
//! cache directory. Over HTTP the server's receive-pack refuses a push whose base moved.
//! libgit2's `file://` transport does not (it overwrites the ref after its own fast-forward
//! check), so a publish to a `file://` remote also holds a `flock` on that repository.
//!
//! Credentials: in the URL (`http://user:pass@host/…`, scrubbed from every message), or
//! given apart from it ([`GitStore::with_credentials`], renewable, spec 2.6) and answered
//! through libgit2's credentials callback, so they never become part of a URL at all.
//!
//! A reference with `{namespace}` and `{name}` names one repository or branch per cluster
//! (spec 9.5.1): `layout`'s [`GitClusters`] opens a `GitStore` per cluster.
//!
//! Not done here: deciding whether anything read is trustworthy (the caller verifies,
//! spec 8), HTTPS and SSH (this build of libgit2 has neither), pruning the cache.

mod credentials;
mod layout;
mod read;
mod reports;
mod target;
#[cfg(test)]
mod tests;
mod tree;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::StoreError;
use crate::fetched::{Fetched, Locator, PartCopy};
use crate::meta::PublishMeta;
use crate::reports::{Latest, LatestReports, ReportPush, ReportStore, all_at_once};
use crate::store::Store;
use crate::userinfo::redact;
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;
pub use credentials::{GitCredentials, GitCredentialsError};
pub use layout::GitClusters;
use target::Target;

/// A branch of a Git repository reached over `file://` or `http://`.
pub struct GitStore {
    target: Arc<Target>,
}

impl GitStore {
    /// Opens `url` (`file:///…` or `http://…`) at `branch`, cached under `$AIRLOCK_CACHE`
    /// (default `$XDG_CACHE_HOME/airlock`, else `~/.cache/airlock`).
    pub fn open(url: &str, branch: &str) -> Result<GitStore, StoreError> {
        GitStore::with_cache(url, branch, &cache_root(url, branch)?)
    }

    /// Like [`GitStore::open`], with `cache_root` in place of `$AIRLOCK_CACHE`.
    pub fn with_cache(url: &str, branch: &str, cache_root: &Path) -> Result<GitStore, StoreError> {
        let (plain_url, secret) = redact(url);
        let shown = format!("git+{plain_url}#{branch}");
        let bad = |message: String| Err(StoreError::Config { store: shown.clone(), message });
        let local = match url.strip_prefix("file://") {
            Some(path) => Some(PathBuf::from(path)),
            None if url.starts_with("http://") => None,
            None if url.starts_with("https://") && git2::Version::get().https() => None,
            None => return bad("this build supports git over file:// and http:// only".into()),
        };
        if !git2::Reference::is_valid_name(&format!("refs/heads/{branch}")) {
            return bad(format!("{branch:?} is not a valid branch name"));
        }
        // Hashing the URL without credentials keeps one cache per remote, and no secret in it.
        let cache = cache_root.join("git").join(Digest::of(plain_url.as_bytes()).name_hex());
        let target =
            Target { url: url.to_string(), shown, secret, credentials: None, branch: branch.to_string(), cache, local, create: false };
        Ok(GitStore { target: Arc::new(target) })
    }

    /// Lets a publish create the `file://` repository when it does not exist yet: a
    /// per-cluster layout has one per cluster, which no one creates by hand.
    fn creating_local(mut self) -> GitStore {
        Arc::make_mut(&mut self.target).create = true;
        self
    }

    /// Logs in with `credentials` whenever the server asks (HTTP basic auth). The URL must
    /// carry none of its own: libgit2 would try those first, and the renewed ones never.
    pub fn with_credentials(mut self, credentials: GitCredentials) -> Result<GitStore, StoreError> {
        let target = Arc::make_mut(&mut self.target);
        if target.local.is_some() {
            return Err(target.config("credentials apply to http:// and https:// remotes only".into()));
        }
        if target.secret.is_some() {
            return Err(target.config("the URL carries credentials already; give them in one place only".into()));
        }
        target.credentials = Some(credentials);
        Ok(self)
    }

    async fn run<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Target) -> Result<T, StoreError> + Send + 'static,
    {
        let target = Arc::clone(&self.target);
        tokio::task::spawn_blocking(move || job(&target))
            .await
            .unwrap_or_else(|e| Err(StoreError::Unavailable { store: self.describe(), message: format!("git task failed: {e}") }))
    }

    /// The newest report of each of `wanted`, in its order, from one listing of the branches.
    pub(super) async fn read_reports(&self, wanted: &[(ClusterId, Option<String>)], limits: &Limits) -> Vec<Result<Latest, StoreError>> {
        let (owned, limits) = (wanted.to_vec(), *limits);
        match self.run(move |t| reports::latest_reports(t, &owned, &limits)).await {
            Ok(found) => found,
            Err(e) => wanted.iter().map(|_| Err(e.clone())).collect(),
        }
    }
}

impl GitClusters {
    /// Opens the per-cluster layout `url` and `branch` name (placeholders in either),
    /// cached as [`GitStore::open`] caches.
    pub fn open(url: &str, branch: &str) -> Result<GitClusters, StoreError> {
        Ok(GitClusters::with_cache(url, branch, cache_root(url, branch)?))
    }
}

/// `$AIRLOCK_CACHE`, else `$XDG_CACHE_HOME/airlock`, else `~/.cache/airlock`.
fn cache_root(url: &str, branch: &str) -> Result<PathBuf, StoreError> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let root = var("AIRLOCK_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("airlock")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/airlock")));
    root.ok_or_else(|| StoreError::Config {
        store: format!("git+{}#{branch}", redact(url).0),
        message: "no cache directory: set AIRLOCK_CACHE, XDG_CACHE_HOME or HOME".into(),
    })
}

#[async_trait]
impl Store for GitStore {
    fn describe(&self) -> String {
        self.target.shown.clone()
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        let (cluster, limits) = (cluster.clone(), *limits);
        self.run(move |t| read::fetch_envelope(t, &cluster, &limits)).await
    }

    async fn fetch_part(
        &self,
        cluster: &ClusterId,
        fetched: &Fetched,
        part: &ProfileEntry,
        _limits: &Limits,
    ) -> Result<PartCopy, StoreError> {
        let Locator::Git { commit } = &fetched.locator else {
            let message = format!("the envelope of {cluster} was not fetched from a git store");
            return Err(StoreError::Config { store: self.describe(), message });
        };
        let (cluster, commit, part) = (cluster.clone(), commit.clone(), part.clone());
        self.run(move |t| read::fetch_part(t, &cluster, &commit, &part)).await
    }

    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        if bundles.is_empty() {
            return Ok(());
        }
        // spawn_blocking wants owned data.
        let (bundles, meta) = (bundles.to_vec(), meta.clone());
        self.run(move |t| write::publish(t, &bundles, &meta)).await
    }

    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        let limits = *limits;
        self.run(move |t| read::clusters(t, &limits)).await
    }

    fn reports(&self) -> Option<&dyn ReportStore> {
        Some(self)
    }
}

/// The reports of spec 14.7 on the branches `reports/<namespace>/<name>` (`reports`).
#[async_trait]
impl ReportStore for GitStore {
    fn describe_reports(&self) -> String {
        self.describe()
    }

    async fn push_report(&self, report: &ReportPush) -> Result<(), StoreError> {
        let report = report.clone();
        self.run(move |t| reports::push_report(t, &report)).await
    }

    async fn latest_report(&self, cluster: &ClusterId, seen: Option<&str>, limits: &Limits) -> Result<Latest, StoreError> {
        let wanted = [(cluster.clone(), seen.map(str::to_string))];
        let mut found = self.read_reports(&wanted, limits).await;
        found.pop().expect("one answer per cluster")
    }

    /// Every report at once, after the one listing of the branches.
    fn latest_reports<'a>(&'a self, wanted: &'a [(ClusterId, Option<String>)], limits: &'a Limits) -> LatestReports<'a> {
        all_at_once(self.read_reports(wanted, limits))
    }
}
