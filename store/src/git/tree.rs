//! How a bundle lies in a branch (spec 9.5): the cluster directory
//! `clusters/<namespace>/<name>/`, the names of its two files and the modes of tree
//! entries, and finding trees by path. Reading and writing them is `read`'s and `write`'s.

use std::path::Path;

use git2::{ErrorCode, Oid, Repository, Tree};

use airlock_bundle::cluster::ClusterId;

pub(super) const ENVELOPE: &str = "envelope.json";
pub(super) const KEYRINGS: &str = "keyrings.json";
/// Tree entry modes: a plain file and a directory are what a bundle is made of; the
/// others are named to be refused.
pub(super) const BLOB: i32 = 0o100644;
pub(super) const TREE: i32 = 0o040000;
pub(super) const EXECUTABLE: i32 = 0o100755;
pub(super) const LINK: i32 = 0o120000;
pub(super) const SUBMODULE: i32 = 0o160000;

/// `clusters/<namespace>/<name>`.
pub(super) fn cluster_dir(cluster: &ClusterId) -> String {
    format!("clusters/{}/{}", cluster.namespace(), cluster.name())
}

/// The cluster's directory in `commit`, if it has one.
pub(super) fn cluster_tree<'r>(repo: &'r Repository, commit: Oid, cluster: &ClusterId) -> Result<Option<Tree<'r>>, git2::Error> {
    let root = repo.find_commit(commit)?.tree()?;
    subtree(repo, &root, &cluster_dir(cluster))
}

pub(super) fn subtree<'r>(repo: &'r Repository, tree: &Tree<'_>, path: &str) -> Result<Option<Tree<'r>>, git2::Error> {
    match tree.get_path(Path::new(path)) {
        Ok(entry) if entry.filemode() == TREE => repo.find_tree(entry.id()).map(Some),
        Ok(_) => Ok(None),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
