//! The reading half every layout-shaped store shares: resolving a cluster through
//! `index.json` to its manifest and reading blobs with caps and digest checks. The index
//! is parsed once and kept while its file's stamp is unchanged. Nothing here writes.

use std::sync::{Arc, Mutex};

use super::files::{INDEX_FILE, LayoutFiles, Stamp, blob_name};
use super::index::IndexView;
use crate::error::StoreError;
use crate::fetched::{EnvelopeDigests, Fetched, Locator, PartCopy};
use crate::oci::{self, OciDescriptor, OciIndex, REF_NAME, RawManifest};
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;

/// The reading side of a layout: `index.json` → manifest → blobs.
pub(crate) struct LayoutReader<F: LayoutFiles> {
    pub(crate) files: F,
    /// The index last parsed, with the stamp its file had: a publisher reads every
    /// cluster's manifest in one run, and parsing the whole index for each would dominate it.
    memo: Mutex<Option<(Stamp, Arc<IndexView>)>>,
}

impl<F: LayoutFiles> LayoutReader<F> {
    pub(crate) fn new(files: F) -> LayoutReader<F> {
        LayoutReader { files, memo: Mutex::new(None) }
    }

    fn malformed(&self, what: &str, message: impl Into<String>) -> StoreError {
        StoreError::Malformed { store: self.files.describe(), what: what.to_string(), message: message.into() }
    }

    /// `index.json`, or an empty index when the layout does not exist yet.
    ///
    /// Read and parsed under the memo's lock: a publisher asks for many clusters at once,
    /// and each would otherwise parse the whole index before the first had kept it.
    pub(crate) fn index(&self, limits: &Limits) -> Result<Arc<IndexView>, StoreError> {
        let mut memo = self.memo.lock().expect("not poisoned");
        // Taken before reading: should the file change in between, the next stamp
        // differs from this one and the index is read again.
        let stamp = self.files.stamp(INDEX_FILE);
        if let (Some(now), Some((then, view))) = (stamp, &*memo)
            && now == *then
        {
            return Ok(view.clone());
        }
        let index = match self.files.read(INDEX_FILE, limits.oci_index_bytes)? {
            None => OciIndex::new(Vec::new()),
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| self.malformed(INDEX_FILE, e.to_string()))?,
        };
        let view = Arc::new(IndexView::new(index));
        if let Some(now) = stamp {
            *memo = Some((now, view.clone()));
        }
        Ok(view)
    }

    /// A blob, read with `cap` and checked against its descriptor.
    pub(crate) fn blob(&self, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
        let what = format!("blob {}", d.digest);
        if d.size > cap {
            return Err(self.malformed(&what, format!("descriptor says {} bytes, over the cap of {cap}", d.size)));
        }
        let bytes = self
            .files
            .read(&blob_name(&d.digest), cap)?
            .ok_or_else(|| StoreError::NotFound { store: self.files.describe(), what: what.clone() })?;
        if bytes.len() as u64 != d.size || Digest::of(&bytes) != d.digest {
            return Err(self.malformed(&what, "content does not match its digest and size"));
        }
        Ok(bytes)
    }

    /// The manifest tagged `<cluster>:<tag>`.
    pub(crate) fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
        let name = oci::ref_name(&cluster.to_string(), tag);
        let index = self.index(limits)?;
        let entry =
            index.get(&name).ok_or_else(|| StoreError::NotFound { store: self.files.describe(), what: format!("bundle for {cluster}") })?;
        let bytes = self.blob(entry, limits.oci_manifest_bytes)?;
        RawManifest::parse(&self.files.describe(), &format!("manifest {name}"), bytes)
    }

    pub(crate) async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        let raw = self.manifest(cluster, "latest", limits)?;
        Fetched::from_manifest(&self.files.describe(), cluster, raw, limits, |d, cap| async move { self.blob(&d, cap) }).await
    }

    /// The digest of `cluster`'s newest manifest as the index names it, when its blob is
    /// there at the size the index gives; `None` when these files cannot tell that without
    /// reading it (an archive).
    pub(crate) fn latest_manifest(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<Digest>, StoreError> {
        let name = oci::ref_name(&cluster.to_string(), "latest");
        let index = self.index(limits)?;
        let entry =
            index.get(&name).ok_or_else(|| StoreError::NotFound { store: self.files.describe(), what: format!("bundle for {cluster}") })?;
        Ok(self.files.stamp(&blob_name(&entry.digest)).filter(|s| s.len == entry.size).map(|_| entry.digest))
    }

    pub(crate) fn envelope_digests(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        let manifest = self.manifest(cluster, "latest", limits)?.manifest;
        EnvelopeDigests::of_manifest(&self.files.describe(), &manifest).map(Some)
    }

    pub(crate) fn fetch_part(&self, fetched: &Fetched, part: &ProfileEntry) -> Result<PartCopy, StoreError> {
        let Locator::Oci(raw) = &fetched.locator else {
            return Err(self.malformed("fetch", "envelope was not fetched from this store"));
        };
        let layer = raw.manifest.part_layer(&part.digest).ok_or_else(|| StoreError::Malformed {
            store: self.files.describe(),
            what: format!("manifest of {}", part.name),
            message: format!("no layer holds part {} ({})", part.name, part.digest),
        })?;
        self.blob(layer, Limits::transport_cap(part.size)).map(PartCopy::Gzip)
    }

    pub(crate) fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        let mut out: Vec<ClusterId> = self
            .index(limits)?
            .index
            .manifests
            .iter()
            .filter_map(|d| d.annotations.get(REF_NAME)?.strip_suffix(":latest")?.parse().ok())
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::SystemTime;

    use super::*;

    /// An index that counts how often it is read, and never changes.
    struct Counted(AtomicUsize);

    impl LayoutFiles for Counted {
        fn read(&self, _: &str, _: u64) -> Result<Option<Vec<u8>>, StoreError> {
            self.0.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_millis(20));
            Ok(Some(serde_json::to_vec(&OciIndex::new(Vec::new())).expect("index serialises")))
        }
        fn describe(&self) -> String {
            "counted".into()
        }
        fn stamp(&self, _: &str) -> Option<Stamp> {
            Some(Stamp { len: 1, modified: SystemTime::UNIX_EPOCH, inode: 1 })
        }
    }

    #[test]
    fn readers_asking_at_once_read_the_index_once() {
        let reader = LayoutReader::new(Counted(AtomicUsize::new(0)));
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| reader.index(&Limits::SPEC).expect("index"));
            }
        });
        assert_eq!(reader.files.0.load(Ordering::Relaxed), 1);
    }
}
