//! One remote branch as every Git operation of the store reaches it: its URL, the
//! credentials libgit2 is given, the local bare cache and its lock, fetching the branch into
//! the cache, and the store's errors with secrets scrubbed from them.

use std::cell::Cell;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use git2::{AutotagOption, Cred, CredentialType, ErrorClass, ErrorCode, FetchOptions, Oid, RemoteCallbacks, Repository};

use super::credentials::GitCredentials;
use crate::error::StoreError;

/// Where fetched tips stay in the cache, so that the next fetch downloads only what is new.
const TRACKING: &str = "refs/airlock/heads/";

/// What a fetch may download.
#[derive(Debug, Clone, Copy)]
pub(super) enum Reach {
    /// All the refspec names: publishing and reporting build on the branch's tip and push.
    Whole,
    /// Reading a bundle: at most `bytes` received, and the tip's commit alone when the cache
    /// holds no copy of the branch yet.
    Read { bytes: u64 },
}

/// A remote branch, how to log in to it, and the local cache it is fetched into.
#[derive(Clone)]
pub(super) struct Target {
    /// As given, credentials included: handed to libgit2 only.
    pub(super) url: String,
    /// `git+URL#BRANCH` without credentials, for messages.
    pub(super) shown: String,
    /// `user:pass@` of the URL, scrubbed from libgit2's messages.
    pub(super) secret: Option<String>,
    /// Given apart from the URL; libgit2 gets them when the server asks.
    pub(super) credentials: Option<GitCredentials>,
    pub(super) branch: String,
    pub(super) cache: PathBuf,
    /// The repository directory of a `file://` remote, locked while publishing.
    pub(super) local: Option<PathBuf>,
    /// Whether publishing creates that directory's repository when there is none.
    pub(super) create: bool,
}

impl Target {
    /// Opens (or creates) the cache repository, holding its lock until the file is dropped.
    pub(super) fn cache(&self) -> Result<(Repository, File), StoreError> {
        let fail = |e: &dyn std::fmt::Display| self.config(format!("git cache {}: {e}", self.cache.display()));
        fs::create_dir_all(&self.cache).map_err(|e| fail(&e))?;
        let lock = lock_dir(&self.cache).map_err(|e| fail(&e))?;
        let repo = if self.cache.join("HEAD").exists() { Repository::open_bare(&self.cache) } else { Repository::init_bare(&self.cache) };
        Ok((repo.map_err(|e| fail(&e))?, lock))
    }

    /// Fetches the branch into the cache; its tip, or None when the remote has no such branch.
    pub(super) fn fetch(&self, repo: &Repository, doing: &str, reach: Reach) -> Result<Option<Oid>, StoreError> {
        self.fetch_branch(repo, &self.branch, doing, reach)
    }

    /// Fetches `branch` of the remote into the cache; its tip, or None when there is none.
    pub(super) fn fetch_branch(&self, repo: &Repository, branch: &str, doing: &str, reach: Reach) -> Result<Option<Oid>, StoreError> {
        let tracking = format!("{TRACKING}{branch}");
        let spec = format!("+refs/heads/{branch}:{tracking}");
        let head = format!("refs/heads/{branch}");
        // A cache that holds no copy of the branch yet takes its tip alone: a reader needs
        // nothing older, and a long history is the server's to keep, not every puller's.
        let depth = match reach {
            Reach::Read { .. } if !self.is_local() && repo.find_reference(&tracking).is_err() => Some(1),
            _ => None,
        };
        Ok(self.fetch_into(repo, &spec, doing, reach, depth)?.into_iter().find(|(name, _)| *name == head).map(|(_, oid)| oid))
    }

    /// Fetches what `refspec` names into the cache, in one connection; every ref the
    /// remote advertised, with its id. What the remote advertised is what counts, not the
    /// tracking refs, which outlive a deleted branch.
    pub(super) fn fetch_refs(&self, repo: &Repository, refspec: &str, doing: &str, reach: Reach) -> Result<Vec<(String, Oid)>, StoreError> {
        self.fetch_into(repo, refspec, doing, reach, None)
    }

    fn fetch_into(
        &self,
        repo: &Repository,
        refspec: &str,
        doing: &str,
        reach: Reach,
        depth: Option<i32>,
    ) -> Result<Vec<(String, Oid)>, StoreError> {
        let err = |e| self.git_error(doing, e);
        let mut remote = repo.remote_anonymous(&self.url).map_err(err)?;
        let over_cap = Cell::new(false);
        let mut callbacks = self.callbacks();
        if let Reach::Read { bytes } = reach {
            let over = &over_cap;
            callbacks.transfer_progress(move |progress| {
                over.set(progress.received_bytes() as u64 > bytes);
                !over.get()
            });
        }
        let mut opts = FetchOptions::new();
        opts.download_tags(AutotagOption::None).update_fetchhead(false).remote_callbacks(callbacks);
        if let Some(depth) = depth {
            opts.depth(depth);
        }
        let fetched = remote.fetch(&[refspec], Some(&mut opts), None);
        drop(opts);
        match (fetched, reach) {
            (Err(_), Reach::Read { bytes }) if over_cap.get() => {
                Err(self.malformed(doing.to_string(), format!("the remote sent more than {bytes} bytes, the limit of one read (spec 10)")))
            }
            (result, _) => {
                result.map_err(err)?;
                Ok(remote.list().map_err(err)?.iter().map(|h| (h.name().to_string(), h.oid())).collect())
            }
        }
    }

    /// Whether the remote is a repository on this machine (`file://`), which libgit2 fetches
    /// from without a server: it has no shallow fetch, and costs no transfer.
    fn is_local(&self) -> bool {
        self.local.is_some()
    }

    /// The callbacks of every fetch and push: the credentials given apart from the URL, once.
    pub(super) fn callbacks(&self) -> RemoteCallbacks<'_> {
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

    pub(super) fn git_error(&self, doing: &str, e: git2::Error) -> StoreError {
        let message = format!("{doing}: {}", self.scrub(e.message()));
        // libgit2 reports other HTTP answers than 200 and 401 by their status alone.
        let status = (e.class() == ErrorClass::Http).then(|| e.message().strip_prefix("unexpected http status code: ")).flatten();
        match (e.code(), status) {
            (ErrorCode::Auth | ErrorCode::Certificate, _) => self.config(message),
            (_, Some("403")) => {
                self.config(format!("{doing}: the server refused access (HTTP 403): these credentials may not reach this repository"))
            }
            (_, Some("404")) => self.config(format!("{doing}: the server has no such repository (HTTP 404)")),
            _ => StoreError::Unavailable { store: self.shown.clone(), message },
        }
    }

    pub(super) fn scrub(&self, message: &str) -> String {
        match &self.secret {
            Some(secret) => message.replace(secret.as_str(), ""),
            None => message.to_string(),
        }
    }

    pub(super) fn config(&self, message: String) -> StoreError {
        StoreError::Config { store: self.shown.clone(), message }
    }

    pub(super) fn not_found(&self, what: String) -> StoreError {
        StoreError::NotFound { store: self.shown.clone(), what }
    }

    pub(super) fn malformed(&self, what: String, message: impl Into<String>) -> StoreError {
        StoreError::Malformed { store: self.shown.clone(), what, message: message.into() }
    }
}

/// Holds an exclusive `flock` on a directory until the returned file is dropped.
pub(super) fn lock_dir(dir: &Path) -> std::io::Result<File> {
    let file = File::open(dir)?;
    file.lock()?;
    Ok(file)
}
