//! Finding the layout files inside an archive without unpacking it: the tar's headers are
//! walked once, each file's offset and size kept, and files then read by offset with caps.
//! Anything that is not a layout file (links, devices, other names), an entry repeated or
//! cut short, or a missing end-of-archive marker makes the archive malformed.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::oci_layout::{INDEX_FILE, LayoutFiles, OCI_LAYOUT_FILE, io_error};
use airlock_bundle::limits::Limits;

/// A tar block: headers and file data are padded to it.
pub(super) const BLOCK: u64 = 512;

/// Whether the two zeroed blocks that end every tar archive follow byte `end`.
fn ends_with_marker(file: &fs::File, end: u64, len: u64) -> std::io::Result<bool> {
    if len < end + 2 * BLOCK {
        return Ok(false);
    }
    let mut marker = [0u8; 2 * BLOCK as usize];
    std::os::unix::fs::FileExt::read_exact_at(file, &mut marker, end)?;
    Ok(marker.iter().all(|&b| b == 0))
}

/// Where each layout file sits inside an archive: name → (offset, size).
pub(crate) struct ArchiveFiles {
    path: PathBuf,
    pub(super) entries: HashMap<String, (u64, u64)>,
}

pub(super) fn is_layout_name(name: &str) -> bool {
    name == OCI_LAYOUT_FILE
        || name == INDEX_FILE
        || name.strip_prefix("blobs/sha256/").is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl ArchiveFiles {
    /// Walks the archive's headers. A missing file is an empty archive.
    pub(crate) fn scan(path: &Path, limits: &Limits) -> Result<ArchiveFiles, StoreError> {
        let store = format!("oci-archive:{}", path.display());
        let malformed = |message: String| StoreError::Malformed { store: store.clone(), what: "archive".into(), message };
        let mut entries = HashMap::new();
        let file = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ArchiveFiles { path: path.into(), entries }),
            Err(e) => return Err(io_error(&store, "archive", e)),
        };
        let len = file.metadata().map_err(|e| io_error(&store, "archive", e))?.len();
        let mut archive = tar::Archive::new(&file);
        // Where the entries end. A cut that falls between two entries leaves a shorter
        // archive every header of which reads fine; only the end-of-archive marker after
        // the last entry tells it from a whole one.
        let mut end = 0;
        for (count, entry) in archive.entries().map_err(|e| malformed(e.to_string()))?.enumerate() {
            if count >= limits.archive_entries {
                return Err(malformed(format!("more than {} entries", limits.archive_entries)));
            }
            let entry = entry.map_err(|e| malformed(format!("is truncated or corrupt: {e}")))?;
            let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let name = raw.trim_start_matches("./").to_string();
            let kind = entry.header().entry_type();
            if kind.is_dir() && matches!(name.as_str(), "" | "blobs/" | "blobs/sha256/" | "blobs" | "blobs/sha256") {
                continue;
            }
            if !kind.is_file() || !is_layout_name(&name) {
                return Err(malformed(format!("entry {raw:?} is not a file of an OCI layout")));
            }
            let size = entry.header().size().map_err(|e| malformed(e.to_string()))?;
            let offset = entry.raw_file_position();
            if offset + size > len {
                return Err(malformed(format!("entry {name:?} is truncated")));
            }
            end = offset + size.next_multiple_of(BLOCK);
            if entries.insert(name.clone(), (offset, size)).is_some() {
                return Err(malformed(format!("entry {name:?} appears twice")));
            }
        }
        if len > 0 && !ends_with_marker(&file, end, len).map_err(|e| io_error(&store, "archive", e))? {
            return Err(malformed(format!("is truncated: no end-of-archive marker after the last entry, at byte {end} of {len}")));
        }
        Ok(ArchiveFiles { path: path.into(), entries })
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }
}

impl LayoutFiles for ArchiveFiles {
    fn read(&self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(&(offset, size)) = self.entries.get(name) else { return Ok(None) };
        if size > cap {
            return Err(StoreError::Malformed {
                store: self.describe(),
                what: name.to_string(),
                message: format!("{size} bytes, over its cap of {cap}"),
            });
        }
        let err = |e| io_error(&self.describe(), name, e);
        let mut f = fs::File::open(&self.path).map_err(err)?;
        f.seek(SeekFrom::Start(offset)).map_err(err)?;
        let mut bytes = Vec::with_capacity(size as usize);
        f.take(size).read_to_end(&mut bytes).map_err(err)?;
        Ok(Some(bytes))
    }

    fn describe(&self) -> String {
        format!("oci-archive:{}", self.path.display())
    }
}
