//! The OCI archive store (`oci-archive:PATH`, spec 9.4): a tar of an OCI image layout, as
//! carried across an air gap and as `skopeo copy oci-archive:` reads it.
//!
//! Reading never unpacks: the tar's headers are walked once to find where each layout file
//! sits, then files are read by offset with caps. Anything in the tar that is not a layout
//! file (links, devices, other names) makes the archive malformed. Writing goes through a
//! temporary layout directory and replaces the archive atomically.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{BufWriter, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::oci::{Artifact, OciDescriptor, OciIndex, RawManifest};
use super::oci_layout::{
    INDEX_FILE, LayoutFiles, LayoutReader, LayoutStore, OCI_LAYOUT_CONTENT, OCI_LAYOUT_FILE, blob_name, io_error, updated_index,
};
use super::{EnvelopeDigests, Fetched, OciStore, PartCopy, PublishMeta, Store, StoreError};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;

/// An OCI archive file.
pub struct ArchiveStore {
    path: PathBuf,
    /// The last scan of the archive, with the file's size, time and inode then: an import
    /// reads every cluster's manifest and blobs, and scanning each time made it quadratic.
    scanned: Mutex<Option<(FileStamp, Arc<LayoutReader<ArchiveFiles>>)>>,
}

type FileStamp = (u64, Option<std::time::SystemTime>, u64);

fn file_stamp(path: &Path) -> Option<FileStamp> {
    let m = fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok(), std::os::unix::fs::MetadataExt::ino(&m)))
}

/// A tar block: headers and file data are padded to it.
const BLOCK: u64 = 512;

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
    entries: HashMap<String, (u64, u64)>,
}

fn is_layout_name(name: &str) -> bool {
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
        let tmp = out.with_extension(format!("tmp-{}", std::process::id()));
        let file = fs::File::create(&tmp).map_err(|e| archive_error(out, e))?;
        let mut writer = ArchiveWriter { builder: tar::Builder::new(BufWriter::new(file)), tmp, out: out.into() };
        for d in ["blobs/", "blobs/sha256/"] {
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

/// Writes the layout directory `dir` as a tar at `out`.
pub(crate) fn write_archive(dir: &Path, names: &[String], out: &Path) -> Result<(), StoreError> {
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
    let tagged: Vec<_> = artifacts.iter().map(|(c, v, a)| (c.to_string(), *v, a)).collect();
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
    let mut writer = ArchiveWriter::create(out)?;
    for (name, bytes) in files {
        writer.file(&name, bytes.len() as u64, bytes)?;
    }
    writer.finish()?;
    Ok(written)
}

impl ArchiveStore {
    pub fn open(path: &Path) -> Result<ArchiveStore, StoreError> {
        Ok(ArchiveStore { path: path.to_path_buf(), scanned: Mutex::new(None) })
    }

    /// Changes the archive through a temporary layout holding its current content, then
    /// replaces the archive whole, so a failure leaves the old archive as it was.
    fn rewrite(&self, change: impl FnOnce(&LayoutStore) -> Result<u64, StoreError>) -> Result<u64, StoreError> {
        let limits = Limits::SPEC;
        let existing = ArchiveFiles::scan(&self.path, &limits)?;
        let work = tempfile_dir(&self.path).map_err(|e| io_error(&self.describe(), "temporary directory", e))?;
        let layout = LayoutStore::open(work.path())?;
        for name in existing.names() {
            let bytes = existing.read(name, u64::MAX)?.expect("listed");
            layout.put(name, &bytes)?;
        }
        let written = change(&layout)?;
        let names: Vec<String> = walk_layout(layout.dir()).map_err(|e| io_error(&self.describe(), "layout", e))?;
        write_archive(layout.dir(), &names, &self.path)?;
        Ok(written)
    }

    fn reader(&self, limits: &Limits) -> Result<Arc<LayoutReader<ArchiveFiles>>, StoreError> {
        // Taken before scanning: should the archive be replaced meanwhile, the next stamp
        // differs and it is scanned again.
        let stamp = file_stamp(&self.path);
        if let (Some(now), Some((then, reader))) = (stamp, &*self.scanned.lock().expect("not poisoned"))
            && now == *then
        {
            return Ok(reader.clone());
        }
        let reader = Arc::new(LayoutReader::new(ArchiveFiles::scan(&self.path, limits)?));
        if let Some(now) = stamp {
            *self.scanned.lock().expect("not poisoned") = Some((now, reader.clone()));
        }
        Ok(reader)
    }
}

#[async_trait]
impl Store for ArchiveStore {
    fn describe(&self) -> String {
        format!("oci-archive:{}", self.path.display())
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        self.reader(limits)?.fetch_envelope(cluster, limits).await
    }

    async fn envelope_digests(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        self.reader(limits)?.envelope_digests(cluster, limits)
    }

    async fn fetch_part(&self, _: &ClusterId, fetched: &Fetched, part: &ProfileEntry, limits: &Limits) -> Result<PartCopy, StoreError> {
        self.reader(limits)?.fetch_part(fetched, part)
    }

    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        self.rewrite(|layout| layout.publish_bundles(bundles, meta, &Limits::SPEC)).map(|_| ())
    }

    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        self.reader(limits)?.clusters(limits)
    }
}

/// A temporary directory beside `path`, so the final rename stays on one filesystem.
fn tempfile_dir(path: &Path) -> std::io::Result<tempfile::TempDir> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    tempfile::Builder::new().prefix(".airlock-archive-").tempdir_in(parent)
}

/// The layout files of a layout directory, as archive entry names.
fn walk_layout(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for name in [OCI_LAYOUT_FILE, INDEX_FILE] {
        if dir.join(name).exists() {
            names.push(name.to_string());
        }
    }
    let blobs = dir.join("blobs/sha256");
    if !blobs.exists() {
        return Ok(names);
    }
    for entry in fs::read_dir(blobs)? {
        let name = format!("blobs/sha256/{}", entry?.file_name().to_string_lossy());
        if is_layout_name(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

#[async_trait]
impl OciStore for ArchiveStore {
    async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
        self.reader(limits)?.manifest(cluster, tag, limits)
    }

    async fn blob(&self, _: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
        self.reader(&Limits::SPEC)?.blob(d, cap)
    }

    async fn has_blob(&self, _: &ClusterId, digest: &Digest) -> Result<bool, StoreError> {
        Ok(self.reader(&Limits::SPEC)?.files.names().any(|n| n == blob_name(digest)))
    }

    async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
        self.rewrite(|layout| layout.put_artifact_sync(cluster, version, artifact))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oci::{self, GzipCache};
    use airlock_bundle::testkit::Fixture;

    fn artifacts() -> Vec<(ClusterId, u64, Artifact)> {
        let cache = GzipCache::default();
        ["fleet/a", "fleet/b", "fleet/c"]
            .map(|c| {
                let mut fx = Fixture::new(1);
                fx.cluster = c.parse().unwrap();
                (fx.cluster.clone(), 1, oci::artifact(&fx.signed(1, Fixture::files()), &PublishMeta::default(), &cache))
            })
            .to_vec()
    }

    #[tokio::test]
    async fn writes_from_memory_the_archive_a_layout_directory_makes_in_any_order() {
        let tmp = tempfile::tempdir().unwrap();
        let arts = artifacts();
        let (one, two, three) = (tmp.path().join("one.tar"), tmp.path().join("two.tar"), tmp.path().join("three.tar"));
        let written = write_new(&one, &arts).unwrap();
        let mut reversed = arts.clone();
        reversed.reverse();
        write_new(&two, &reversed).unwrap();
        assert_eq!(fs::read(&one).unwrap(), fs::read(&two).unwrap(), "the order of the artifacts does not matter");
        let through_layout = ArchiveStore::open(&three).unwrap();
        for (cluster, version, artifact) in &arts {
            through_layout.put_artifact(cluster, *version, artifact).await.unwrap();
        }
        assert_eq!(fs::read(&one).unwrap(), fs::read(&three).unwrap(), "byte for byte what a layout directory makes");
        // Every distinct blob once: the config, the shared part and its neighbour, an
        // envelope and a manifest per cluster.
        let distinct: std::collections::BTreeSet<_> = arts
            .iter()
            .flat_map(|(_, _, a)| a.blobs.iter().map(|b| (b.digest, b.bytes.len())).chain([(a.manifest_digest, a.manifest_bytes.len())]))
            .collect();
        assert_eq!(written, distinct.iter().map(|(_, len)| *len as u64).sum::<u64>());
        let store = ArchiveStore::open(&one).unwrap();
        assert_eq!(store.clusters(&Limits::SPEC).await.unwrap(), arts.iter().map(|(c, _, _)| c.clone()).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn scans_an_archive_again_only_when_it_was_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.tar");
        let arts = artifacts();
        write_new(&path, &arts[..1]).unwrap();
        let store = ArchiveStore::open(&path).unwrap();
        let first = store.reader(&Limits::SPEC).unwrap();
        assert!(Arc::ptr_eq(&first, &store.reader(&Limits::SPEC).unwrap()), "the same archive is scanned once");
        write_new(&path, &arts).unwrap();
        assert_eq!(store.clusters(&Limits::SPEC).await.unwrap().len(), 3, "a replaced archive is read anew");
    }

    /// Wherever a carried copy is cut (inside a header, inside a file, in the marker, or
    /// between two entries, where every header left reads fine), it is refused in the same
    /// words, so operators and scripts can tell a short copy from a forged one.
    #[test]
    fn an_archive_cut_anywhere_is_truncated() {
        let tmp = tempfile::tempdir().unwrap();
        let whole = tmp.path().join("whole.tar");
        write_new(&whole, &artifacts()).unwrap();
        let bytes = fs::read(&whole).unwrap();
        let scanned = ArchiveFiles::scan(&whole, &Limits::SPEC).unwrap();
        let between = scanned.entries.values().map(|&(offset, size)| (offset + size.next_multiple_of(BLOCK)) as usize);
        let in_marker = bytes.len() - BLOCK as usize;
        let cut = tmp.path().join("cut.tar");
        for end in (1..bytes.len()).step_by(128).chain(between).chain([in_marker]) {
            fs::write(&cut, &bytes[..end]).unwrap();
            let Err(err) = ArchiveFiles::scan(&cut, &Limits::SPEC) else { panic!("a cut at byte {end} was accepted") };
            assert!(err.to_string().contains("is truncated"), "cut at byte {end}: {err}");
        }
    }
}
