//! Writing an archive in the one form every archive has (zeroed times and owners, the two
//! blob directories first, then files in name order), beside the old one, which it
//! replaces only when finished: from a layout directory, or straight from artifacts in
//! memory for an export.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::oci::{Artifact, OciIndex};
use crate::oci_layout::{INDEX_FILE, Manifest, OCI_LAYOUT_CONTENT, OCI_LAYOUT_FILE, blob_name, io_error, updated_index};
use airlock_bundle::cluster::ClusterId;

/// A new archive being written beside `out`, in the one form every archive has: zeroed
/// times and owners, the two blob directories first, then files in name order. It
/// replaces `out` only when finished, so a failure leaves the old archive as it was.
struct ArchiveWriter {
    builder: tar::Builder<BufWriter<fs::File>>,
    tmp: PathBuf,
    out: PathBuf,
}

impl ArchiveWriter {
    fn create(out: &Path) -> Result<ArchiveWriter, StoreError> {
        ArchiveWriter::with_dirs(out, &["blobs/", "blobs/sha256/"])
    }

    fn with_dirs(out: &Path, dirs: &[&str]) -> Result<ArchiveWriter, StoreError> {
        let tmp = out.with_extension(format!("tmp-{}", std::process::id()));
        let file = fs::File::create(&tmp).map_err(|e| archive_error(out, e))?;
        let mut writer = ArchiveWriter { builder: tar::Builder::new(BufWriter::new(file)), tmp, out: out.into() };
        for d in dirs {
            writer.append(d, 0, std::io::empty(), true)?;
        }
        Ok(writer)
    }

    fn append(&mut self, name: &str, size: u64, data: impl Read, dir: bool) -> Result<(), StoreError> {
        let mut h = tar::Header::new_ustar();
        h.set_size(size);
        h.set_mode(if dir { 0o755 } else { 0o644 });
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(if dir { tar::EntryType::Directory } else { tar::EntryType::Regular });
        self.builder.append_data(&mut h, name, data).map_err(|e| archive_error(&self.out, e))
    }

    /// Appends files, which must come in name order.
    fn file(&mut self, name: &str, size: u64, data: impl Read) -> Result<(), StoreError> {
        self.append(name, size, data, false)
    }

    fn finish(self) -> Result<(), StoreError> {
        let err = |e| archive_error(&self.out, e);
        let mut w = self.builder.into_inner().map_err(err)?;
        std::io::Write::flush(&mut w).map_err(err)?;
        w.get_ref().sync_data().map_err(err)?;
        fs::rename(&self.tmp, &self.out).map_err(err)
    }
}

fn archive_error(out: &Path, e: std::io::Error) -> StoreError {
    io_error(&format!("oci-archive:{}", out.display()), "archive", e)
}

/// Writes a tar at `out` (replacing any, only once finished) in the form of every archive
/// of this crate: zeroed times and owners, `dirs` first, then `files` in name order. For
/// what else crosses an air gap beside bundles (the publisher's chart cache).
pub fn write_tar(out: &Path, dirs: &[&str], files: &BTreeMap<String, &[u8]>) -> Result<(), StoreError> {
    let mut writer = ArchiveWriter::with_dirs(out, dirs)?;
    for (name, bytes) in files {
        writer.file(name, bytes.len() as u64, *bytes)?;
    }
    writer.finish()
}

/// Writes the layout directory `dir` as a tar at `out`.
pub(super) fn write_archive(dir: &Path, names: &[String], out: &Path) -> Result<(), StoreError> {
    let mut writer = ArchiveWriter::create(out)?;
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort();
    for name in sorted {
        let f = fs::File::open(dir.join(name)).map_err(|e| archive_error(out, e))?;
        let size = f.metadata().map_err(|e| archive_error(out, e))?.len();
        writer.file(name, size, f)?;
    }
    writer.finish()
}

/// Writes a new archive at `out` (replacing any) holding `artifacts`: the layout
/// [`write_archive`] would make of them, straight from memory. Blobs an artifact lacks are
/// left out: that is how a delta archive is made. Returns the blob bytes written.
pub fn write_new(out: &Path, artifacts: &[(ClusterId, u64, Artifact)]) -> Result<u64, StoreError> {
    let store = format!("oci-archive:{}", out.display());
    let tagged: Vec<_> = artifacts.iter().map(|(c, v, a)| (c.to_string(), *v, Manifest::of(a))).collect();
    let index = serde_json::to_vec(&updated_index(&store, OciIndex::new(Vec::new()), &tagged)?).expect("index serialises");
    let mut files: BTreeMap<String, &[u8]> = BTreeMap::new();
    for (_, _, artifact) in artifacts {
        for blob in &artifact.blobs {
            files.entry(blob_name(&blob.digest)).or_insert(&blob.bytes);
        }
        files.entry(blob_name(&artifact.manifest_digest)).or_insert(&artifact.manifest_bytes);
    }
    let written = files.values().map(|b| b.len() as u64).sum();
    files.insert(INDEX_FILE.to_string(), &index);
    files.insert(OCI_LAYOUT_FILE.to_string(), OCI_LAYOUT_CONTENT);
    write_tar(out, &["blobs/", "blobs/sha256/"], &files)?;
    Ok(written)
}
