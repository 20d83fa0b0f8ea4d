//! A kustomization's source tree on disk, in a temporary directory: directories and regular
//! files only, written from a tarball (Sveltos's ConfigMap and Secret sources) or from a
//! Git commit's tree (`git`).
//!
//! As Sveltos's `extractTarGz`: the tarball is gzip'ed or plain (told by gzip's magic
//! bytes); symbolic links, devices and other entry types are skipped, and so are macOS's
//! AppleDouble files (`._name`) and pax headers written as files (`skipped_tar_entry`, the
//! rule `remoteURL` tars follow too); an entry name is cleaned as Go's `filepath.Join`
//! cleans it (a leading `/` is the tree's root, `..` steps back); the stream and each file
//! are capped at [`MAX_FILE_BYTES`]. Stricter than it: a name that steps above the tree is
//! refused rather than compared as a string prefix, and the whole tree is capped too.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use flate2::read::GzDecoder;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

use super::error::{KustomizeError, io_error};
use crate::sources::remote::skipped_tar_entry;

/// Sveltos's cap on the gzip stream and on each file.
pub const MAX_FILE_BYTES: u64 = 20 << 20;
/// All files of a tree together.
pub const MAX_TREE_BYTES: u64 = 100 << 20;
/// Files and directories of a tree.
pub const MAX_ENTRIES: usize = 10_000;

/// A source tree being written, and the directory it lives in.
#[derive(Debug)]
pub(super) struct SourceTree {
    dir: tempfile::TempDir,
    bytes: u64,
    entries: usize,
    origin: String,
}

impl SourceTree {
    pub(super) fn new(origin: &str) -> Result<SourceTree, KustomizeError> {
        let dir = tempfile::Builder::new().prefix("airlock-kustomize-").tempdir().map_err(|e| io_error(&std::env::temp_dir(), e))?;
        Ok(SourceTree { dir, bytes: 0, entries: 0, origin: origin.into() })
    }

    pub(super) fn root(&self) -> &Path {
        self.dir.path()
    }

    fn refuse(&self, message: String) -> KustomizeError {
        KustomizeError::Source { origin: self.origin.clone(), message }
    }

    /// Where `name` goes in the tree, or why it may not.
    fn place(&mut self, name: &str) -> Result<PathBuf, KustomizeError> {
        let Some(relative) = inside_tree(name) else {
            return Err(self.refuse(format!("entry {name:?} leaves the source tree")));
        };
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(self.refuse(format!("more than {MAX_ENTRIES} entries")));
        }
        Ok(self.root().join(relative))
    }

    pub(super) fn add_dir(&mut self, name: &str) -> Result<(), KustomizeError> {
        let at = self.place(name)?;
        std::fs::create_dir_all(&at).map_err(|e| io_error(&at, e))
    }

    /// Writes one file of at most [`MAX_FILE_BYTES`] read from `from`.
    pub(super) fn add_file(&mut self, name: &str, from: impl Read) -> Result<(), KustomizeError> {
        let at = self.place(name)?;
        let mut bytes = Vec::new();
        from.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| self.refuse(format!("{name}: {e}")))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(self.refuse(format!("{name} is larger than {MAX_FILE_BYTES} bytes")));
        }
        self.bytes += bytes.len() as u64;
        if self.bytes > MAX_TREE_BYTES {
            return Err(self.refuse(format!("the files hold more than {MAX_TREE_BYTES} bytes")));
        }
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
        }
        std::fs::write(&at, bytes).map_err(|e| io_error(&at, e))
    }

    /// Unpacks a `kustomize.tar.gz`, which Sveltos also takes as a plain tar.
    pub(super) fn unpack(&mut self, tarball: &[u8]) -> Result<(), KustomizeError> {
        let stream: Box<dyn Read> =
            if tarball.starts_with(&GZIP_MAGIC) { Box::new(GzDecoder::new(tarball).take(MAX_FILE_BYTES)) } else { Box::new(tarball) };
        let mut archive = tar::Archive::new(stream);
        let entries = archive.entries().map_err(|e| self.refuse(format!("kustomize.tar.gz: {e}")))?;
        for entry in entries {
            let entry = entry.map_err(|e| self.refuse(format!("kustomize.tar.gz: {e}")))?;
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            if skipped_tar_entry(&name) {
                continue;
            }
            match entry.header().entry_type() {
                tar::EntryType::Directory => self.add_dir(&name)?,
                tar::EntryType::Regular | tar::EntryType::Continuous => self.add_file(&name, entry)?,
                _ => {}
            }
        }
        Ok(())
    }
}

/// `path` below the tree's root, resolved as Sveltos joins it to the directory the source
/// was unpacked in (Go's `filepath.Join`): a leading `/` is the tree's root and `..` steps
/// back lexically. `None` when it steps above the root, which Sveltos would read from the
/// controller's own file system.
pub(super) fn inside_tree(path: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn tar_gz(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (path, kind, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            if *kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/passwd").expect("link name");
            }
            // Bypasses the builder's own path checks, as a hostile archive would.
            let name = header.as_old_mut().name.as_mut();
            name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, *bytes).expect("append");
        }
        builder.into_inner().expect("tar").finish().expect("gzip")
    }

    #[test]
    fn unpacks_files_and_skips_links() {
        let mut tree = SourceTree::new("test").expect("tree");
        let archive = tar_gz(&[
            ("./", tar::EntryType::Directory, b""),
            ("./base/kustomization.yaml", tar::EntryType::Regular, b"resources: []\n"),
            ("./base/link", tar::EntryType::Symlink, b""),
        ]);
        tree.unpack(&archive).expect("unpacks");
        assert_eq!(std::fs::read(tree.root().join("base/kustomization.yaml")).expect("written"), b"resources: []\n");
        assert!(!tree.root().join("base/link").exists());
    }

    #[test]
    fn unpacks_as_sveltos_extracts_a_plain_tar_skipping_apple_double_files() {
        let mut tree = SourceTree::new("test").expect("tree");
        let gzipped = tar_gz(&[
            ("/base/kustomization.yaml", tar::EntryType::Regular, b"resources: []\n"),
            ("base/._kustomization.yaml", tar::EntryType::Regular, b"\x00\x05\x16\x07"),
            ("PaxHeader/base/x.yaml", tar::EntryType::Regular, b"path=x"),
            ("base/../extra/cm.yaml", tar::EntryType::Regular, b"a: 1\n"),
        ]);
        let mut plain = Vec::new();
        GzDecoder::new(&gzipped[..]).read_to_end(&mut plain).expect("a gzip stream");
        tree.unpack(&plain).expect("a plain tar unpacks");
        assert!(tree.root().join("base/kustomization.yaml").is_file(), "a leading slash is the tree's root");
        assert!(tree.root().join("extra/cm.yaml").is_file(), ".. steps back inside the tree");
        assert!(!tree.root().join("base/._kustomization.yaml").exists() && !tree.root().join("PaxHeader").exists());
    }

    #[test]
    fn rejects_entries_that_leave_the_tree() {
        for name in ["../evil", "a/../../evil"] {
            let mut tree = SourceTree::new("test").expect("tree");
            let err = tree.unpack(&tar_gz(&[(name, tar::EntryType::Regular, b"x")])).unwrap_err();
            assert!(matches!(&err, KustomizeError::Source { message, .. } if message.contains("leaves the source tree")), "{name}: {err}");
        }
    }

    #[test]
    fn rejects_a_file_over_its_cap() {
        let mut tree = SourceTree::new("test").expect("tree");
        let big = vec![b'a'; (MAX_FILE_BYTES + 1) as usize];
        assert!(matches!(tree.add_file("big", &big[..]), Err(KustomizeError::Source { .. })));
    }
}
