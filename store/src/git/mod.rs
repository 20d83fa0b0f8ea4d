//! The Git store (spec 9.5): per cluster, the directory `clusters/<namespace>/<name>/` of
//! one branch holds `envelope.json`, `keyrings.json` (optional) and every bundle file as
//! plain YAML, so a version bump is a readable diff.
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
//! Not done here: deciding whether anything read is trustworthy (the caller verifies,
//! spec 8), HTTPS and SSH (this build of libgit2 has neither), pruning the cache.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use git2::{AutotagOption, Cred, CredentialType, ErrorClass, ErrorCode, FetchOptions, ObjectType, Odb, Oid};
use git2::{PushOptions, RemoteCallbacks, Repository, Signature, Tree};

use super::{Fetched, Locator, PartCopy, PublishMeta, Store, StoreError};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::path::{MAX_COMPONENTS, check_part_name, check_path};
use airlock_bundle::statement::ProfileEntry;
use airlock_bundle::tar::{tar_size, write_canonical};

mod credentials;
pub use credentials::{GitCredentials, GitCredentialsError};

/// Pushes tried before a publish gives up on a branch other publishers keep moving.
const PUSH_ATTEMPTS: usize = 3;
/// Where fetched tips stay in the cache, so that the next fetch downloads only what is new.
const TRACKING: &str = "refs/airlock/heads/";
/// The local ref a publish pushes from (libgit2 pushes refs, not bare commit ids).
const PUBLISHING: &str = "refs/airlock/publish/";
const ENVELOPE: &str = "envelope.json";
const KEYRINGS: &str = "keyrings.json";
const BLOB: i32 = 0o100644;
const EXECUTABLE: i32 = 0o100755;
const LINK: i32 = 0o120000;
const SUBMODULE: i32 = 0o160000;
const TREE: i32 = 0o040000;

/// A branch of a Git repository reached over `file://` or `http://`.
pub struct GitStore {
    target: Arc<Target>,
}

#[derive(Clone)]
struct Target {
    /// As given, credentials included: handed to libgit2 only.
    url: String,
    /// `git+URL#BRANCH` without credentials, for messages.
    shown: String,
    /// `user:pass@` of the URL, scrubbed from libgit2's messages.
    secret: Option<String>,
    /// Given apart from the URL; libgit2 gets them when the server asks.
    credentials: Option<GitCredentials>,
    branch: String,
    cache: PathBuf,
    /// The repository directory of a `file://` remote, locked while publishing.
    local: Option<PathBuf>,
}

impl GitStore {
    /// Opens `url` (`file:///…` or `http://…`) at `branch`, cached under `$AIRLOCK_CACHE`
    /// (default `$XDG_CACHE_HOME/airlock`, else `~/.cache/airlock`).
    pub fn open(url: &str, branch: &str) -> Result<GitStore, StoreError> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let root = var("AIRLOCK_CACHE")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("airlock")))
            .or_else(|| var("HOME").map(|d| d.join(".cache/airlock")));
        match root {
            Some(root) => GitStore::with_cache(url, branch, &root),
            None => Err(StoreError::Config {
                store: format!("git+{}#{branch}", redact(url).0),
                message: "no cache directory: set AIRLOCK_CACHE, XDG_CACHE_HOME or HOME".into(),
            }),
        }
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
        let target = Target { url: url.to_string(), shown, secret, credentials: None, branch: branch.to_string(), cache, local };
        Ok(GitStore { target: Arc::new(target) })
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
}

#[async_trait]
impl Store for GitStore {
    fn describe(&self) -> String {
        self.target.shown.clone()
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        let (cluster, limits) = (cluster.clone(), *limits);
        self.run(move |t| t.fetch_envelope(&cluster, &limits)).await
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
        self.run(move |t| t.fetch_part(&cluster, &commit, &part)).await
    }

    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        if bundles.is_empty() {
            return Ok(());
        }
        // spawn_blocking wants owned data.
        let (bundles, meta) = (bundles.to_vec(), meta.clone());
        self.run(move |t| t.publish(&bundles, &meta)).await
    }

    async fn clusters(&self, _limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        self.run(Target::clusters).await
    }
}

impl Target {
    fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        let (repo, _lock) = self.cache()?;
        let doing = format!("fetch for {cluster}");
        let err = |e| self.git_error(&doing, e);
        let not_found = || self.not_found(format!("bundle for {cluster}"));
        let tip = self.fetch(&repo, &doing)?.ok_or_else(not_found)?;
        let dir = cluster_tree(&repo, tip, cluster).map_err(err)?.ok_or_else(not_found)?;
        let odb = repo.odb().map_err(err)?;
        let (mut envelope, mut keyring_chain) = (None, None);
        for entry in dir.iter() {
            let name = String::from_utf8_lossy(entry.name_bytes());
            let what = format!("{}/{name}", cluster_dir(cluster));
            match (&*name, entry.filemode()) {
                (ENVELOPE, BLOB) => {
                    let (size, _) = odb.read_header(entry.id()).map_err(err)?;
                    if size as u64 > limits.envelope_bytes {
                        return Err(StoreError::EnvelopeTooLarge {
                            store: self.shown.clone(),
                            cluster: cluster.to_string(),
                            size: size as u64,
                            limit: limits.envelope_bytes,
                        });
                    }
                    envelope = Some(self.read_blob(&odb, entry.id(), limits.envelope_bytes, &what)?)
                }
                (KEYRINGS, BLOB) => keyring_chain = Some(self.read_blob(&odb, entry.id(), limits.keyring_chain_bytes, &what)?),
                (part, TREE) if check_part_name(part).is_ok() => {}
                _ => {
                    return Err(self.malformed(what, "not envelope.json, keyrings.json or a part directory (spec 9.5)"));
                }
            }
        }
        let envelope = envelope.ok_or_else(not_found)?;
        Ok(Fetched { envelope, keyring_chain, locator: Locator::Git { commit: tip.to_string() } })
    }

    fn fetch_part(&self, cluster: &ClusterId, commit: &str, part: &ProfileEntry) -> Result<PartCopy, StoreError> {
        let (repo, _lock) = self.cache()?;
        let doing = format!("reading part {} of {cluster}", part.name);
        let err = |e| self.git_error(&doing, e);
        let commit = Oid::from_str(commit).map_err(err)?;
        let dir = cluster_tree(&repo, commit, cluster).map_err(err)?;
        let base = cluster_dir(cluster);
        let Some(entry) = dir.as_ref().and_then(|d| d.get_name(&part.name)) else {
            // Git keeps no empty directories, so an empty part (spec 2.4) has none.
            if part.size == tar_size([]) {
                return Ok(PartCopy::Tar(write_canonical(&[])));
            }
            return Err(self.not_found(format!("part {} of {cluster} in commit {commit}", part.name)));
        };
        if entry.filemode() != TREE {
            return Err(self.malformed(format!("{base}/{}", part.name), "a part must be a directory"));
        }
        let tree = repo.find_tree(entry.id()).map_err(err)?;
        let odb = repo.odb().map_err(err)?;
        // Every file takes at least 512 bytes of the tar and sits under at most 7
        // directories, so a genuine part has at most 8 tree entries per 512 signed bytes.
        let entries_left = part.size.saturating_sub(tar_size([])) / 64;
        let mut walk = PartWalk { target: self, repo: &repo, odb, base, signed: part.size, bytes: 0, entries_left, files: vec![] };
        walk.dir(&tree, &part.name, 1)?;
        walk.files.sort();
        let files: Vec<(&str, &[u8])> = walk.files.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
        Ok(PartCopy::Tar(write_canonical(&files)))
    }

    fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        let clusters = bundles
            .iter()
            .map(|b| b.cluster().parse::<ClusterId>().map_err(|e| self.config(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let (repo, _lock) = self.cache()?;
        let _remote_lock = match &self.local {
            Some(dir) => Some(lock_dir(dir).map_err(|e| self.config(format!("locking {}: {e}", dir.display())))?),
            None => None,
        };
        let mut refusal = String::new();
        for attempt in 1..=PUSH_ATTEMPTS {
            let tip = self.fetch(&repo, "fetch before publishing")?;
            let Some(commit) = self.commit(&repo, tip, bundles, &clusters, meta)? else {
                return Ok(());
            };
            match self.push(&repo, commit)? {
                None => return Ok(()),
                Some(reason) => {
                    tracing::info!(store = %self.shown, attempt, %reason, "push refused; rebuilding on the new tip");
                    refusal = reason;
                }
            }
        }
        let message = format!("push refused {PUSH_ATTEMPTS} times, last: {refusal}");
        Err(StoreError::Unavailable { store: self.shown.clone(), message })
    }

    fn clusters(&self) -> Result<Vec<ClusterId>, StoreError> {
        let (repo, _lock) = self.cache()?;
        let err = |e| self.git_error("listing clusters", e);
        let Some(tip) = self.fetch(&repo, "listing clusters")? else { return Ok(vec![]) };
        let root = repo.find_commit(tip).and_then(|c| c.tree()).map_err(err)?;
        let Some(all) = subtree(&repo, &root, "clusters").map_err(err)? else { return Ok(vec![]) };
        let mut found = Vec::new();
        for ns in all.iter().filter(|e| e.filemode() == TREE) {
            for name in repo.find_tree(ns.id()).map_err(err)?.iter().filter(|e| e.filemode() == TREE) {
                if repo.find_tree(name.id()).map_err(err)?.get_name(ENVELOPE).is_none() {
                    continue;
                }
                let (ns, name) = (String::from_utf8_lossy(ns.name_bytes()), String::from_utf8_lossy(name.name_bytes()));
                match ClusterId::new(&ns, &name) {
                    Ok(id) => found.push(id),
                    Err(e) => tracing::warn!(store = %self.shown, "skipping clusters/{ns}/{name}: {e}"),
                }
            }
        }
        Ok(found)
    }

    /// Opens (or creates) the cache repository, holding its lock until the file is dropped.
    fn cache(&self) -> Result<(Repository, File), StoreError> {
        let fail = |e: &dyn std::fmt::Display| self.config(format!("git cache {}: {e}", self.cache.display()));
        fs::create_dir_all(&self.cache).map_err(|e| fail(&e))?;
        let lock = lock_dir(&self.cache).map_err(|e| fail(&e))?;
        let repo = if self.cache.join("HEAD").exists() { Repository::open_bare(&self.cache) } else { Repository::init_bare(&self.cache) };
        Ok((repo.map_err(|e| fail(&e))?, lock))
    }

    /// Fetches the branch into the cache; its tip, or None when the remote has no such branch.
    fn fetch(&self, repo: &Repository, doing: &str) -> Result<Option<Oid>, StoreError> {
        let err = |e| self.git_error(doing, e);
        let mut remote = repo.remote_anonymous(&self.url).map_err(err)?;
        let mut opts = FetchOptions::new();
        opts.download_tags(AutotagOption::None).update_fetchhead(false).remote_callbacks(self.callbacks());
        let spec = format!("+refs/heads/{0}:{TRACKING}{0}", self.branch);
        remote.fetch(&[spec.as_str()], Some(&mut opts), None).map_err(err)?;
        // What the remote advertised, not the tracking ref, which outlives a deleted branch.
        let head = format!("refs/heads/{}", self.branch);
        Ok(remote.list().map_err(err)?.iter().find(|h| h.name() == head).map(|h| h.oid()))
    }

    /// The commit of `bundles` on top of `tip`, or None when the remote has them already.
    fn commit(
        &self,
        repo: &Repository,
        tip: Option<Oid>,
        bundles: &[SignedBundle],
        clusters: &[ClusterId],
        meta: &PublishMeta,
    ) -> Result<Option<Oid>, StoreError> {
        let err = |e| self.git_error("building the publish commit", e);
        let parent = tip.map(|t| repo.find_commit(t)).transpose().map_err(err)?;
        let mut root = match &parent {
            Some(c) => c.tree_id(),
            None => repo.treebuilder(None).and_then(|b| b.write()).map_err(err)?,
        };
        let mut lines = Vec::new();
        for (bundle, cluster) in bundles.iter().zip(clusters) {
            let dir = cluster_dir_tree(repo, bundle).map_err(err)?;
            let tree = repo.find_tree(root).map_err(err)?;
            if tree.get_path(Path::new(&cluster_dir(cluster))).is_ok_and(|e| e.id() == dir) {
                continue;
            }
            let path = ["clusters", cluster.namespace(), cluster.name()];
            root = put(repo, Some(&tree), &path, dir, TREE).map_err(err)?;
            lines.push(format!("{cluster} v{} {}", bundle.version(), bundle.digest()));
        }
        if lines.is_empty() {
            return Ok(None);
        }
        let mut message = format!("airlock: publish {} cluster(s)\n\n{}\n", lines.len(), lines.join("\n"));
        let trailers: Vec<String> = [("Source", &meta.source), ("Revision", &meta.revision)]
            .into_iter()
            .filter_map(|(key, value)| value.as_ref().map(|v| format!("{key}: {}", v.replace(['\n', '\r'], " "))))
            .collect();
        if !trailers.is_empty() {
            message.push_str(&format!("\n{}\n", trailers.join("\n")));
        }
        let who = Signature::now("Airlock Publisher", "airlock@localhost").map_err(err)?;
        let tree = repo.find_tree(root).map_err(err)?;
        let parents: Vec<_> = parent.iter().collect();
        repo.commit(None, &who, &who, &message, &tree, &parents).map(Some).map_err(err)
    }

    /// Pushes `commit` to the branch without force. `Some(reason)` when the remote refused
    /// it, which mostly means another publisher moved the branch.
    fn push(&self, repo: &Repository, commit: Oid) -> Result<Option<String>, StoreError> {
        let err = |e| self.git_error("push", e);
        let local = format!("{PUBLISHING}{}", self.branch);
        repo.reference(&local, commit, true, "airlock publish").map_err(err)?;
        let mut remote = repo.remote_anonymous(&self.url).map_err(err)?;
        let mut refused = None;
        let mut callbacks = self.callbacks();
        callbacks.push_update_reference(|_, status| {
            refused = status.map(str::to_string);
            Ok(())
        });
        let mut opts = PushOptions::new();
        opts.remote_callbacks(callbacks);
        let spec = format!("{local}:refs/heads/{}", self.branch);
        let pushed = remote.push(&[spec.as_str()], Some(&mut opts));
        drop(opts);
        match pushed {
            Err(e) if e.code() == ErrorCode::NotFastForward => Ok(Some(self.scrub(e.message()))),
            Err(e) => Err(err(e)),
            Ok(()) => Ok(refused.map(|r| self.scrub(&r))),
        }
    }

    /// The callbacks of every fetch and push: the credentials given apart from the URL, once.
    fn callbacks(&self) -> RemoteCallbacks<'_> {
        let mut callbacks = RemoteCallbacks::new();
        if let Some(credentials) = &self.credentials {
            let mut answered = false;
            callbacks.credentials(move |_, _, allowed| {
                // libgit2 asks again after each refusal; the same answer would be refused
                // again, until its replay limit gives a less telling error.
                if answered || !allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
                    let message = format!("the server refused the credentials of user {:?}", credentials.username);
                    return Err(git2::Error::new(ErrorCode::Auth, ErrorClass::Http, message));
                }
                answered = true;
                Cred::userpass_plaintext(&credentials.username, &credentials.password)
            });
        }
        callbacks
    }

    fn read_blob(&self, odb: &Odb<'_>, id: Oid, cap: u64, what: &str) -> Result<Vec<u8>, StoreError> {
        let err = |e| self.git_error(what, e);
        let (size, kind) = odb.read_header(id).map_err(err)?;
        if kind != ObjectType::Blob {
            return Err(self.malformed(what.to_string(), format!("a {kind} where a file was expected")));
        }
        if size as u64 > cap {
            return Err(self.malformed(what.to_string(), format!("{size} bytes, over the limit of {cap}")));
        }
        Ok(odb.read(id).map_err(err)?.data().to_vec())
    }

    fn git_error(&self, doing: &str, e: git2::Error) -> StoreError {
        let message = format!("{doing}: {}", self.scrub(e.message()));
        match e.code() {
            ErrorCode::Auth | ErrorCode::Certificate => self.config(message),
            _ => StoreError::Unavailable { store: self.shown.clone(), message },
        }
    }

    fn scrub(&self, message: &str) -> String {
        match &self.secret {
            Some(secret) => message.replace(secret.as_str(), ""),
            None => message.to_string(),
        }
    }

    fn config(&self, message: String) -> StoreError {
        StoreError::Config { store: self.shown.clone(), message }
    }

    fn not_found(&self, what: String) -> StoreError {
        StoreError::NotFound { store: self.shown.clone(), what }
    }

    fn malformed(&self, what: String, message: impl Into<String>) -> StoreError {
        StoreError::Malformed { store: self.shown.clone(), what, message: message.into() }
    }
}

/// Collects one part directory's files, checking each blob's size before reading it.
struct PartWalk<'a> {
    target: &'a Target,
    repo: &'a Repository,
    odb: Odb<'a>,
    base: String,
    signed: u64,
    bytes: u64,
    entries_left: u64,
    files: Vec<(String, Vec<u8>)>,
}

impl PartWalk<'_> {
    /// `rel` is the directory's path relative to the cluster directory, `depth` its
    /// number of components.
    fn dir(&mut self, tree: &Tree<'_>, rel: &str, depth: usize) -> Result<(), StoreError> {
        for entry in tree.iter() {
            let path = format!("{rel}/{}", String::from_utf8_lossy(entry.name_bytes()));
            let what = format!("{}/{path}", self.base);
            let bad = |message: String| Err(self.target.malformed(what.clone(), message));
            if self.entries_left == 0 {
                return bad("the part directory holds more entries than its signed size allows".into());
            }
            self.entries_left -= 1;
            match entry.filemode() {
                TREE if depth + 1 < MAX_COMPONENTS => {
                    let sub = self.repo.find_tree(entry.id()).map_err(|e| self.target.git_error(&what, e))?;
                    self.dir(&sub, &path, depth + 1)?;
                }
                TREE => return bad("nested deeper than a bundle path may be (spec 2.2)".into()),
                BLOB => {
                    let (size, kind) = self.odb.read_header(entry.id()).map_err(|e| self.target.git_error(&what, e))?;
                    self.bytes += size as u64;
                    if kind != ObjectType::Blob {
                        return bad(format!("a {kind} where a file was expected"));
                    }
                    // The canonical tar holds every file's bytes, so they cannot add up to
                    // more than its signed size.
                    if self.bytes > self.signed {
                        return bad(format!("the part's files exceed its signed size of {} bytes", self.signed));
                    }
                    if let Err(e) = check_path(&path) {
                        return bad(e.to_string());
                    }
                    let data = self.odb.read(entry.id()).map_err(|e| self.target.git_error(&what, e))?;
                    self.files.push((path, data.data().to_vec()));
                }
                LINK => return bad("symbolic links are not allowed (spec 9.5)".into()),
                SUBMODULE => return bad("submodules are not allowed (spec 9.5)".into()),
                EXECUTABLE => return bad("executable files are not allowed (spec 9.5)".into()),
                mode => return bad(format!("unexpected file mode {mode:o}")),
            }
        }
        Ok(())
    }
}

fn cluster_dir(cluster: &ClusterId) -> String {
    format!("clusters/{}/{}", cluster.namespace(), cluster.name())
}

/// The cluster's directory in `commit`, if it has one.
fn cluster_tree<'r>(repo: &'r Repository, commit: Oid, cluster: &ClusterId) -> Result<Option<Tree<'r>>, git2::Error> {
    let root = repo.find_commit(commit)?.tree()?;
    subtree(repo, &root, &cluster_dir(cluster))
}

fn subtree<'r>(repo: &'r Repository, tree: &Tree<'_>, path: &str) -> Result<Option<Tree<'r>>, git2::Error> {
    match tree.get_path(Path::new(path)) {
        Ok(entry) if entry.filemode() == TREE => repo.find_tree(entry.id()).map(Some),
        Ok(_) => Ok(None),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes a cluster directory holding exactly this bundle (spec 9.5).
fn cluster_dir_tree(repo: &Repository, bundle: &SignedBundle) -> Result<Oid, git2::Error> {
    #[derive(Default)]
    struct Dir {
        blobs: BTreeMap<String, Oid>,
        dirs: BTreeMap<String, Dir>,
    }
    impl Dir {
        fn add(&mut self, path: &str, blob: Oid) {
            match path.split_once('/') {
                Some((dir, rest)) => self.dirs.entry(dir.to_string()).or_default().add(rest, blob),
                None => {
                    self.blobs.insert(path.to_string(), blob);
                }
            }
        }
        fn write(&self, repo: &Repository) -> Result<Oid, git2::Error> {
            let mut builder = repo.treebuilder(None)?;
            for (name, blob) in &self.blobs {
                builder.insert(name, *blob, BLOB)?;
            }
            for (name, dir) in &self.dirs {
                builder.insert(name, dir.write(repo)?, TREE)?;
            }
            builder.write()
        }
    }
    let mut dir = Dir::default();
    dir.add(ENVELOPE, repo.blob(&bundle.envelope)?);
    if let Some(chain) = &bundle.keyring_chain {
        dir.add(KEYRINGS, repo.blob(chain)?);
    }
    for (path, bytes) in bundle.bundle.files() {
        dir.add(path, repo.blob(bytes)?);
    }
    dir.write(repo)
}

/// `tree` with the entry at `path` set to `leaf` with `mode`, as a new tree.
fn put(repo: &Repository, tree: Option<&Tree<'_>>, path: &[&str], leaf: Oid, mode: i32) -> Result<Oid, git2::Error> {
    let (first, rest) = path.split_first().expect("put needs a path");
    let mut builder = repo.treebuilder(tree)?;
    if rest.is_empty() {
        builder.insert(first, leaf, mode)?;
        return builder.write();
    }
    let below = match builder.get(first)? {
        Some(e) if e.filemode() == TREE => Some(repo.find_tree(e.id())?),
        _ => None,
    };
    let id = put(repo, below.as_ref(), rest, leaf, mode)?;
    builder.insert(first, id, TREE)?;
    builder.write()
}

/// Holds an exclusive `flock` on a directory until the returned file is dropped.
fn lock_dir(dir: &Path) -> std::io::Result<File> {
    let file = File::open(dir)?;
    file.lock()?;
    Ok(file)
}

/// The URL without `user:pass@`, and that `user:pass@` if there was one.
fn redact(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_string(), None) };
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    match authority.rfind('@') {
        Some(at) => (format!("{scheme}://{}", &rest[at + 1..]), Some(rest[..=at].to_string())),
        None => (url.to_string(), None),
    }
}

#[cfg(test)]
mod tests;
