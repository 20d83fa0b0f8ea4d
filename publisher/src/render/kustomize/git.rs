//! A Git commit's tree as a kustomization source: fetched with libgit2 into a throw-away
//! bare repository, then written file by file into a [`SourceTree`], so a checkout has
//! exactly the tarball's rules (regular files and directories; symbolic links and
//! submodules skipped, never followed).
//!
//! Anonymous fetches only: a Flux GitRepository's `secretRef` is refused by `source`.

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

use super::error::{KustomizeError, fetch_error};
use super::source::GitRef;
use super::tree::{MAX_FILE_BYTES, SourceTree};

/// Regular and executable files; links (0o120000) and submodules (0o160000) are skipped.
const BLOB_MODES: [i32; 2] = [0o100644, 0o100755];

/// Fetches `reference` of `url` and writes its tree into `tree`; the commit's id.
pub(super) fn checkout(origin: &str, url: &str, reference: &GitRef, tree: &mut SourceTree) -> Result<String, KustomizeError> {
    let fetch_err = |e: git2::Error| fetch_error(origin, url, e.message());
    let scratch = tempfile::tempdir().map_err(|e| super::error::io_error(&std::env::temp_dir(), e))?;
    let repo = Repository::init_bare(scratch.path()).map_err(fetch_err)?;
    let mut remote = repo.remote_anonymous(url).map_err(fetch_err)?;
    const TIP: &str = "refs/airlock/tip";
    let refspec = match reference {
        GitRef::Default => format!("+HEAD:{TIP}"),
        GitRef::Branch(b) => format!("+refs/heads/{b}:{TIP}"),
        GitRef::Tag(t) => format!("+refs/tags/{t}:{TIP}"),
        GitRef::Name(n) => format!("+{n}:{TIP}"),
        // A commit is fetched with every branch and tag; servers need not allow fetching
        // an arbitrary object by id.
        GitRef::Commit(_) => "+refs/heads/*:refs/airlock/heads/*".into(),
    };
    remote.fetch(&[refspec.as_str(), "+refs/tags/*:refs/tags/*"], None, None).map_err(fetch_err)?;
    let commit = match reference {
        GitRef::Commit(id) => {
            let oid = Oid::from_str(id).map_err(fetch_err)?;
            repo.find_commit(oid).map_err(fetch_err)?
        }
        _ => repo.find_reference(TIP).and_then(|r| r.peel_to_commit()).map_err(fetch_err)?,
    };
    let root = commit.tree().map_err(fetch_err)?;
    let mut failure = None;
    root.walk(TreeWalkMode::PreOrder, |dir, entry| {
        let name = format!("{dir}{}", String::from_utf8_lossy(entry.name_bytes()));
        let written = match entry.kind() {
            Some(ObjectType::Tree) => tree.add_dir(&name),
            Some(ObjectType::Blob) if BLOB_MODES.contains(&entry.filemode()) => {
                // The size first: a blob is read whole into memory.
                match repo.odb().and_then(|odb| odb.read_header(entry.id())) {
                    Ok((size, _)) if size as u64 > MAX_FILE_BYTES => Err(KustomizeError::Source {
                        origin: origin.into(),
                        message: format!("{name} is larger than {MAX_FILE_BYTES} bytes"),
                    }),
                    Ok(_) => repo.find_blob(entry.id()).map_err(fetch_err).and_then(|blob| tree.add_file(&name, blob.content())),
                    Err(e) => Err(fetch_err(e)),
                }
            }
            _ => Ok(()),
        };
        match written {
            Ok(()) => TreeWalkResult::Ok,
            Err(e) => {
                failure = Some(e);
                TreeWalkResult::Abort
            }
        }
    })
    .or_else(|e| if failure.is_some() { Ok(()) } else { Err(fetch_err(e)) })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(commit.id().to_string()),
    }
}
