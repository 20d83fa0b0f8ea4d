//! The named files of a layout, wherever they are kept: the fixed names (`oci-layout`,
//! `index.json`, `blobs/sha256/<hex>`), reading one with a cap, and the stamp that tells,
//! without reading it, that a file is unchanged. [`DirFiles`] keeps them in a directory;
//! the archive store keeps them in a tar.

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::error::StoreError;
use airlock_bundle::digest::Digest;

pub(crate) const OCI_LAYOUT_FILE: &str = "oci-layout";
pub(crate) const OCI_LAYOUT_CONTENT: &[u8] = br#"{"imageLayoutVersion":"1.0.0"}"#;
pub(crate) const INDEX_FILE: &str = "index.json";

/// Named files of a layout, wherever they are kept (a directory or a tar).
pub(crate) trait LayoutFiles: Send + Sync {
    /// Reads `name` (e.g. `blobs/sha256/<hex>`), refusing more than `cap` bytes.
    /// `Ok(None)` when there is no such file.
    fn read(&self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, StoreError>;
    fn describe(&self) -> String;
    /// What tells, without reading it, that `name` still holds what was read before;
    /// `None` when these files cannot tell (nothing is then kept between reads).
    fn stamp(&self, _name: &str) -> Option<Stamp> {
        None
    }
}

/// A file's size, modification time and inode. Writers replace files by renaming a new
/// one over them, which changes the inode, so an equal stamp means the same content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) len: u64,
    pub(crate) modified: SystemTime,
    pub(crate) inode: u64,
}

pub(crate) fn blob_name(digest: &Digest) -> String {
    format!("blobs/sha256/{}", digest.hex())
}

/// A layout's files in a directory.
pub(crate) struct DirFiles(pub(crate) PathBuf);

impl LayoutFiles for DirFiles {
    fn read(&self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.0.join(name);
        let file = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&self.describe(), name, e)),
        };
        let mut bytes = Vec::new();
        file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| io_error(&self.describe(), name, e))?;
        if bytes.len() as u64 > cap {
            return Err(StoreError::Malformed {
                store: self.describe(),
                what: name.to_string(),
                message: format!("larger than its cap of {cap} bytes"),
            });
        }
        Ok(Some(bytes))
    }

    fn describe(&self) -> String {
        format!("oci-layout:{}", self.0.display())
    }

    fn stamp(&self, name: &str) -> Option<Stamp> {
        let m = fs::metadata(self.0.join(name)).ok()?;
        Some(Stamp { len: m.len(), modified: m.modified().ok()?, inode: m.ino() })
    }
}

pub(crate) fn io_error(store: &str, what: &str, e: std::io::Error) -> StoreError {
    StoreError::Config { store: store.to_string(), message: format!("{what}: {e}") }
}
