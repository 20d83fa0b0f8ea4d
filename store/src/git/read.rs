//! Reading a cluster's bundle out of the cache: its envelope and keyring chain from the
//! cluster directory at the branch's tip, a part's files from its directory at the commit
//! the envelope came from (every size checked before a blob is read), and the clusters the
//! branch holds. Nothing here writes to the remote.

use git2::{ObjectType, Odb, Oid, Repository, Tree};

use super::target::{Reach, Target};
use super::tree::{BLOB, ENVELOPE, EXECUTABLE, KEYRINGS, LINK, SUBMODULE, TREE, cluster_dir, cluster_tree, subtree};
use crate::error::StoreError;
use crate::fetched::{Fetched, Locator, PartCopy};
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::limits::Limits;
use airlock_bundle::path::{MAX_COMPONENTS, check_part_name, check_path};
use airlock_bundle::statement::ProfileEntry;
use airlock_bundle::tar::{tar_size, write_canonical};

/// The envelope and keyring chain of `cluster` at the branch's tip, each read within its cap.
pub(super) fn fetch_envelope(target: &Target, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
    let (repo, _lock) = target.cache()?;
    let doing = format!("fetch for {cluster}");
    let err = |e| target.git_error(&doing, e);
    let not_found = || target.not_found(format!("bundle for {cluster}"));
    let tip = target.fetch(&repo, &doing, Reach::Read { bytes: limits.git_fetch_bytes })?.ok_or_else(not_found)?;
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
                        store: target.shown.clone(),
                        cluster: cluster.to_string(),
                        size: size as u64,
                        limit: limits.envelope_bytes,
                    });
                }
                envelope = Some(read_blob(target, &odb, entry.id(), limits.envelope_bytes, &what)?)
            }
            (KEYRINGS, BLOB) => {
                let (size, _) = odb.read_header(entry.id()).map_err(err)?;
                if size as u64 > limits.keyring_chain_bytes {
                    let (store, cluster) = (target.shown.clone(), cluster.to_string());
                    return Err(StoreError::KeyringChainTooLarge { store, cluster, size: size as u64, limit: limits.keyring_chain_bytes });
                }
                keyring_chain = Some(read_blob(target, &odb, entry.id(), limits.keyring_chain_bytes, &what)?)
            }
            (part, TREE) if check_part_name(part).is_ok() => {}
            _ => {
                return Err(target.malformed(what, "not envelope.json, keyrings.json or a part directory (spec 9.5)"));
            }
        }
    }
    let envelope = envelope.ok_or_else(not_found)?;
    Ok(Fetched { envelope, keyring_chain, locator: Locator::Git { commit: tip.to_string() } })
}

/// Part `part` of `cluster` at `commit`, as the canonical tar of its directory's files.
pub(super) fn fetch_part(target: &Target, cluster: &ClusterId, commit: &str, part: &ProfileEntry) -> Result<PartCopy, StoreError> {
    let (repo, _lock) = target.cache()?;
    let doing = format!("reading part {} of {cluster}", part.name);
    let err = |e| target.git_error(&doing, e);
    let commit = Oid::from_str(commit).map_err(err)?;
    let dir = cluster_tree(&repo, commit, cluster).map_err(err)?;
    let base = cluster_dir(cluster);
    let Some(entry) = dir.as_ref().and_then(|d| d.get_name(&part.name)) else {
        // Git keeps no empty directories, so an empty part (spec 2.4) has none.
        if part.size == tar_size([]) {
            return Ok(PartCopy::Tar(write_canonical(&[])));
        }
        return Err(target.not_found(format!("part {} of {cluster} in commit {commit}", part.name)));
    };
    if entry.filemode() != TREE {
        return Err(target.malformed(format!("{base}/{}", part.name), "a part must be a directory"));
    }
    let tree = repo.find_tree(entry.id()).map_err(err)?;
    let odb = repo.odb().map_err(err)?;
    // Every file takes at least 512 bytes of the tar and sits under at most 7
    // directories, so a genuine part has at most 8 tree entries per 512 signed bytes.
    let entries_left = part.size.saturating_sub(tar_size([])) / 64;
    let mut walk = PartWalk { target, repo: &repo, odb, base, signed: part.size, bytes: 0, entries_left, files: vec![] };
    walk.dir(&tree, &part.name, 1)?;
    walk.files.sort();
    let files: Vec<(&str, &[u8])> = walk.files.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect();
    Ok(PartCopy::Tar(write_canonical(&files)))
}

/// The clusters whose directory at the tip holds an envelope.
pub(super) fn clusters(target: &Target, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
    let (repo, _lock) = target.cache()?;
    let err = |e| target.git_error("listing clusters", e);
    let Some(tip) = target.fetch(&repo, "listing clusters", Reach::Read { bytes: limits.git_fetch_bytes })? else { return Ok(vec![]) };
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
                Err(e) => tracing::warn!(store = %target.shown, "skipping clusters/{ns}/{name}: {e}"),
            }
        }
    }
    Ok(found)
}

pub(super) fn read_blob(target: &Target, odb: &Odb<'_>, id: Oid, cap: u64, what: &str) -> Result<Vec<u8>, StoreError> {
    let err = |e| target.git_error(what, e);
    let (size, kind) = odb.read_header(id).map_err(err)?;
    if kind != ObjectType::Blob {
        return Err(target.malformed(what.to_string(), format!("a {kind} where a file was expected")));
    }
    if size as u64 > cap {
        return Err(target.malformed(what.to_string(), format!("{size} bytes, over the limit of {cap}")));
    }
    Ok(odb.read(id).map_err(err)?.data().to_vec())
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
