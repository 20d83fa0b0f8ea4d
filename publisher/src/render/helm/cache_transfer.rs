//! The chart cache carried across an air gap: [`export`] writes every archive and record
//! of a chart cache into one tar, in the form of the bundles' own archives
//! (`airlock_store::write_tar`), and [`import`] adds them to another cache, so a publisher
//! inside the enclave renders the exact chart versions the one outside fetched, with no
//! network and no mirror. Not a chart repository: nothing here serves charts to helm.
//!
//! The tar holds the cache's own layout (`blobs/<sha256>.tgz`, `refs/<key>.json`). Import
//! reads it entry by entry under the caps below and checks every entry (its name, its
//! size, an archive against the digest it is named by, a record's form and that its
//! archive is there) before it changes anything: archives are staged beside the cache and
//! moved in, then the records written, only once the whole tar was read.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use airlock_bundle::Digest;

use super::cache::{ChartCache, RefFile, write_atomically};
use super::fetch::MAX_ARCHIVE_BYTES;

/// A record is a few names and a digest.
const MAX_RECORD_BYTES: u64 = 64 << 10;
/// Entries in one tar: a cache of every version of the largest public repositories holds
/// a few thousand.
const MAX_ENTRIES: usize = 20_000;
/// The archives of one tar together: what fits a removable disk with room to spare.
const MAX_TOTAL_BYTES: u64 = 64 << 30;

/// What one export or import carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Carried {
    /// Records: a repository's chart at a version.
    pub records: usize,
    pub archives: usize,
    /// The archives' bytes.
    pub bytes: u64,
}

/// Why a chart cache could not be exported or imported; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{archive}: entry {entry:?} is not part of a chart cache (blobs/<sha256>.tgz, refs/<sha256>.json)")]
    UnexpectedEntry { archive: String, entry: String },
    #[error("{archive}: entry {entry} is larger than {limit} bytes")]
    TooLarge { archive: String, entry: String, limit: u64 },
    #[error("{archive}: more than {limit} {what}")]
    TooMany { archive: String, what: &'static str, limit: u64 },
    #[error("{archive}: entry {entry} has digest {actual}, not the one it is named by")]
    DigestMismatch { archive: String, entry: String, actual: String },
    #[error("{archive}: entry {entry}: {message}")]
    Record { archive: String, entry: String, message: String },
    #[error("{archive}: entry {entry} names archive {digest}, which neither the tar nor the cache holds")]
    MissingArchive { archive: String, entry: String, digest: String },
    #[error("the chart cache {path} holds no chart")]
    Empty { path: String },
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> TransferError + '_ {
    move |e| TransferError::Io { path: path.display().to_string(), message: e.to_string() }
}

/// Writes the records of the chart cache in `dir` whose archives it holds intact, and
/// those archives, as a tar at `out` (replaced once written).
pub fn export(dir: &Path, out: &Path) -> Result<Carried, TransferError> {
    if !dir.join("refs").is_dir() {
        return Err(TransferError::Empty { path: dir.display().to_string() });
    }
    let cache = ChartCache::open(dir).map_err(|e| TransferError::Io { path: dir.display().to_string(), message: e.to_string() })?;
    let refs = cache.dir().join("refs");
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut carried = Carried::default();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&refs).map_err(io(&refs))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    names.sort();
    for path in names {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).filter(|n| record_key(n).is_some()) else { continue };
        let Some(record) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<RefFile>(&b).ok().map(|r| (r, b))) else {
            tracing::warn!(record = %path.display(), "left out: not a chart record");
            continue;
        };
        let (record, bytes) = record;
        if let std::collections::btree_map::Entry::Vacant(blob) = files.entry(format!("blobs/{}.tgz", record.digest.hex())) {
            let archive = cache.blob_path(&record.digest);
            match std::fs::read(&archive) {
                Ok(a) if Digest::of(&a) == record.digest => {
                    carried.archives += 1;
                    carried.bytes += a.len() as u64;
                    blob.insert(a);
                }
                _ => {
                    tracing::warn!(record = %path.display(), archive = %archive.display(), "left out: its archive is missing or damaged");
                    continue;
                }
            }
        }
        carried.records += 1;
        files.insert(format!("refs/{name}"), bytes);
    }
    if carried.records == 0 {
        return Err(TransferError::Empty { path: dir.display().to_string() });
    }
    let borrowed: BTreeMap<String, &[u8]> = files.iter().map(|(k, v)| (k.clone(), v.as_slice())).collect();
    airlock_store::write_tar(out, &["blobs/", "refs/"], &borrowed)
        .map_err(|e| TransferError::Io { path: out.display().to_string(), message: e.to_string() })?;
    Ok(carried)
}

/// Adds the charts of the tar at `archive` to the chart cache in `dir`, all of them or,
/// when any entry is refused, none.
pub fn import(dir: &Path, archive: &Path) -> Result<Carried, TransferError> {
    let cache = ChartCache::open(dir).map_err(|e| TransferError::Io { path: dir.display().to_string(), message: e.to_string() })?;
    let shown = archive.display().to_string();
    let staging = tempfile::tempdir_in(cache.dir()).map_err(io(cache.dir()))?;
    let file = std::fs::File::open(archive).map_err(io(archive))?;
    let mut tar = tar::Archive::new(std::io::BufReader::new(file));
    let (mut staged, mut records) = (BTreeSet::new(), Vec::new());
    let mut carried = Carried::default();
    for (n, entry) in tar.entries().map_err(io(archive))?.enumerate() {
        if n >= MAX_ENTRIES {
            return Err(TransferError::TooMany { archive: shown, what: "entries", limit: MAX_ENTRIES as u64 });
        }
        let mut entry = entry.map_err(io(archive))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let unexpected = || TransferError::UnexpectedEntry { archive: shown.clone(), entry: name.clone() };
        if entry.header().entry_type().is_dir() {
            if name == "blobs/" || name == "refs/" {
                continue;
            }
            return Err(unexpected());
        }
        if !entry.header().entry_type().is_file() {
            return Err(unexpected());
        }
        let (kind, file_name) = name.split_once('/').ok_or_else(unexpected)?;
        let limit = match kind {
            "blobs" if blob_digest(file_name).is_some() => MAX_ARCHIVE_BYTES,
            "refs" if record_key(file_name).is_some() => MAX_RECORD_BYTES,
            _ => return Err(unexpected()),
        };
        let bytes = read_capped(&mut entry, limit).map_err(io(archive))?;
        let bytes = bytes.ok_or_else(|| TransferError::TooLarge { archive: shown.clone(), entry: name.clone(), limit })?;
        if kind == "refs" {
            let record: RefFile = serde_json::from_slice(&bytes).map_err(|e| TransferError::Record {
                archive: shown.clone(),
                entry: name.clone(),
                message: e.to_string(),
            })?;
            records.push((name.clone(), file_name.to_string(), record, bytes));
            continue;
        }
        let digest = Digest::of(&bytes);
        if Some(digest.hex()) != blob_digest(file_name).map(str::to_string) {
            return Err(TransferError::DigestMismatch { archive: shown, entry: name, actual: digest.to_string() });
        }
        carried.bytes += bytes.len() as u64;
        if carried.bytes > MAX_TOTAL_BYTES {
            return Err(TransferError::TooMany { archive: shown, what: "archive bytes", limit: MAX_TOTAL_BYTES });
        }
        std::fs::write(staging.path().join(file_name), &bytes).map_err(io(staging.path()))?;
        carried.archives += staged.insert(digest) as usize;
    }
    for (entry, _, record, _) in &records {
        let intact = || std::fs::read(cache.blob_path(&record.digest)).is_ok_and(|b| Digest::of(&b) == record.digest);
        if !staged.contains(&record.digest) && !intact() {
            return Err(TransferError::MissingArchive { archive: shown, entry: entry.clone(), digest: record.digest.to_string() });
        }
    }
    for digest in &staged {
        let (from, to) = (staging.path().join(format!("{}.tgz", digest.hex())), cache.blob_path(digest));
        std::fs::rename(&from, &to).map_err(io(&to))?;
    }
    for (_, file_name, _, bytes) in &records {
        write_atomically(&cache.dir().join("refs").join(file_name), bytes)
            .map_err(|e| TransferError::Io { path: file_name.clone(), message: e.to_string() })?;
    }
    carried.records = records.len();
    Ok(carried)
}

/// `<64 hex>.tgz`'s hex.
fn blob_digest(file_name: &str) -> Option<&str> {
    file_name.strip_suffix(".tgz").filter(|h| is_hex64(h))
}

/// `<64 hex>.json`'s hex.
fn record_key(file_name: &str) -> Option<&str> {
    file_name.strip_suffix(".json").filter(|h| is_hex64(h))
}

fn is_hex64(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The rest of `reader`, or `None` when it holds more than `limit` bytes.
fn read_capped(reader: &mut impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

#[cfg(test)]
#[path = "cache_transfer_tests.rs"]
mod tests;
