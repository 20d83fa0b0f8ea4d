//! Publishing into the branch: one commit holding every bundle of a publish, each
//! cluster directory rebuilt to hold exactly its bundle, pushed without force and rebuilt
//! on the new tip when another publisher moved the branch meanwhile.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{ErrorCode, Oid, PushOptions, Repository, Signature, Tree};

use super::target::{Reach, Target, lock_dir};
use super::tree::{BLOB, ENVELOPE, KEYRINGS, TREE, cluster_dir};
use crate::error::StoreError;
use crate::meta::PublishMeta;
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;

/// Pushes tried before a publish gives up on a branch other publishers keep moving.
pub(super) const PUSH_ATTEMPTS: usize = 3;
/// The local ref a publish pushes from (libgit2 pushes refs, not bare commit ids).
const PUBLISHING: &str = "refs/airlock/publish/";

/// Writes `bundles` as one commit on the branch, retried on a new tip when refused.
pub(super) fn publish(target: &Target, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
    let clusters = bundles
        .iter()
        .map(|b| b.cluster().parse::<ClusterId>().map_err(|e| target.config(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let (repo, _lock) = target.cache()?;
    let _remote_lock = lock_local_remote(target)?;
    let mut refusal = String::new();
    for attempt in 1..=PUSH_ATTEMPTS {
        let tip = target.fetch(&repo, "fetch before publishing", Reach::Whole)?;
        let Some(commit) = commit(target, &repo, tip, bundles, &clusters, meta)? else {
            return Ok(());
        };
        match push(target, &repo, commit)? {
            None => return Ok(()),
            Some(reason) => {
                tracing::info!(store = %target.shown, attempt, %reason, "push refused; rebuilding on the new tip");
                refusal = reason;
            }
        }
    }
    let message = format!("push refused {PUSH_ATTEMPTS} times, last: {refusal}");
    Err(StoreError::Unavailable { store: target.shown.clone(), message })
}

/// The lock on a `file://` remote, held while pushing to it: libgit2's file transport
/// checks a fast-forward, then overwrites the ref, with no lock of its own between.
/// A per-cluster layout's repository that does not exist yet is created first.
pub(super) fn lock_local_remote(target: &Target) -> Result<Option<std::fs::File>, StoreError> {
    let Some(dir) = &target.local else { return Ok(None) };
    if target.create && !dir.exists() {
        Repository::init_bare(dir).map_err(|e| target.config(format!("creating {}: {}", dir.display(), e.message())))?;
    }
    Ok(Some(lock_dir(dir).map_err(|e| target.config(format!("locking {}: {e}", dir.display())))?))
}

/// The commit of `bundles` on top of `tip`, or None when the remote has them already.
pub(super) fn commit(
    target: &Target,
    repo: &Repository,
    tip: Option<Oid>,
    bundles: &[SignedBundle],
    clusters: &[ClusterId],
    meta: &PublishMeta,
) -> Result<Option<Oid>, StoreError> {
    let err = |e| target.git_error("building the publish commit", e);
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
pub(super) fn push(target: &Target, repo: &Repository, commit: Oid) -> Result<Option<String>, StoreError> {
    push_to(target, repo, commit, &target.branch)
}

/// [`push`] to any branch of the remote.
pub(super) fn push_to(target: &Target, repo: &Repository, commit: Oid, branch: &str) -> Result<Option<String>, StoreError> {
    let err = |e| target.git_error("push", e);
    let local = format!("{PUBLISHING}{branch}");
    repo.reference(&local, commit, true, "airlock publish").map_err(err)?;
    let mut remote = repo.remote_anonymous(&target.url).map_err(err)?;
    let mut refused = None;
    let mut callbacks = target.callbacks();
    callbacks.push_update_reference(|_, status| {
        refused = status.map(str::to_string);
        Ok(())
    });
    let mut opts = PushOptions::new();
    opts.remote_callbacks(callbacks);
    let spec = format!("{local}:refs/heads/{branch}");
    let pushed = remote.push(&[spec.as_str()], Some(&mut opts));
    drop(opts);
    match pushed {
        Err(e) if e.code() == ErrorCode::NotFastForward => Ok(Some(target.scrub(e.message()))),
        Err(e) => Err(err(e)),
        Ok(()) => Ok(refused.map(|r| target.scrub(&r))),
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
pub(super) fn put(repo: &Repository, tree: Option<&Tree<'_>>, path: &[&str], leaf: Oid, mode: i32) -> Result<Oid, git2::Error> {
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
