//! A layout's reports (spec 14.7): the artifacts of the registry's reports, named in
//! `index.json` as `<namespace>/<name>/reports:latest` and `…:r<finishedAt>`, written under
//! the layout's lock like a publish (blobs, flushed, then the index). The index keeps the
//! newest [`LAYOUT_HISTORY`] history names of a cluster, so it does not grow with every
//! run; the blobs of older reports stay, as older bundles' do.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::LayoutStore;
use super::files::INDEX_FILE;
use super::write::{blobs_of, flush};
use crate::error::StoreError;
use crate::oci::{self, Artifact, OciDescriptor, OciIndex, REF_NAME};
use crate::reports::{LAYOUT_HISTORY, Latest, ReportPush, ReportStore, history_tag, report_artifact, report_layer, reports_name};
use crate::store::Store;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::limits::Limits;

#[async_trait]
impl ReportStore for LayoutStore {
    fn describe_reports(&self) -> String {
        self.describe()
    }

    async fn push_report(&self, report: &ReportPush) -> Result<(), StoreError> {
        let artifact = report_artifact(report);
        let store = self.describe();
        let _lock = self.writer.lock()?;
        for (digest, bytes) in blobs_of(&artifact) {
            self.writer.put_blob(&digest, bytes)?;
        }
        flush(self.dir(), &store)?;
        let index = self.reader.index(&Limits::SPEC)?.index.clone();
        let index = with_report(index, &report.cluster, &history_tag(&report.finished_at), &artifact);
        self.writer.put(INDEX_FILE, &serde_json::to_vec(&index).expect("index serialises"))?;
        flush(self.dir(), &store)
    }

    async fn latest_report(&self, cluster: &ClusterId, seen: Option<&str>, limits: &Limits) -> Result<Latest, StoreError> {
        let index = self.reader.index(limits)?;
        let Some(entry) = index.get(&oci::ref_name(&reports_name(cluster), "latest")) else {
            return Ok(Latest::None);
        };
        let mark = entry.digest.to_string();
        if seen == Some(mark.as_str()) {
            return Ok(Latest::Unchanged);
        }
        let what = format!("reports of {cluster}");
        let manifest = self.reader.blob(entry, limits.oci_manifest_bytes)?;
        let layer = report_layer(&self.describe(), &what, &manifest)?;
        let envelope = self.reader.blob(&layer, limits.envelope_bytes)?;
        Ok(Latest::Report { envelope, mark })
    }
}

/// `index` with `artifact` as `cluster`'s newest report under the history tag `tag`, and
/// only the newest [`LAYOUT_HISTORY`] history names of that cluster.
fn with_report(mut index: OciIndex, cluster: &ClusterId, tag: &str, artifact: &Artifact) -> OciIndex {
    let stem = reports_name(cluster);
    let history = format!("{stem}:r");
    let mut by_ref: BTreeMap<String, OciDescriptor> =
        index.manifests.drain(..).map(|d| (d.annotations.get(REF_NAME).cloned().unwrap_or_default(), d)).collect();
    for tag in [tag, "latest"] {
        let name = oci::ref_name(&stem, tag);
        let descriptor = OciDescriptor {
            media_type: oci::MANIFEST_MEDIA_TYPE.to_string(),
            digest: artifact.manifest_digest,
            size: artifact.manifest_bytes.len() as u64,
            artifact_type: artifact.manifest.artifact_type.clone(),
            annotations: BTreeMap::from([(REF_NAME.to_string(), name.clone())]),
        };
        by_ref.insert(name, descriptor);
    }
    // History tags sort in time order, so the oldest names come first.
    let kept: Vec<String> = by_ref.keys().filter(|name| name.starts_with(&history)).cloned().collect();
    for old in &kept[..kept.len().saturating_sub(LAYOUT_HISTORY)] {
        by_ref.remove(old);
    }
    index.manifests = by_ref.into_values().collect();
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use jiff::{SignedDuration, Timestamp};

    fn report(cluster: &str, at: Timestamp, body: &str) -> ReportPush {
        ReportPush { cluster: cluster.parse().unwrap(), finished_at: at, result: "applied".into(), envelope: body.as_bytes().to_vec() }
    }

    #[tokio::test]
    async fn pushes_reads_back_and_marks_what_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = LayoutStore::open(&dir.path().join("layout")).unwrap();
        let edge = "fleet/edge-1".parse().unwrap();
        assert_eq!(store.latest_report(&edge, None, &Limits::SPEC).await.unwrap(), Latest::None);
        let at: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
        store.push_report(&report("fleet/edge-1", at, r#"{"first":1}"#)).await.unwrap();
        let Latest::Report { envelope, mark } = store.latest_report(&edge, None, &Limits::SPEC).await.unwrap() else { panic!("a report") };
        assert_eq!(envelope, br#"{"first":1}"#);
        assert_eq!(store.latest_report(&edge, Some(&mark), &Limits::SPEC).await.unwrap(), Latest::Unchanged);
        store.push_report(&report("fleet/edge-1", at + SignedDuration::from_secs(60), r#"{"second":2}"#)).await.unwrap();
        let Latest::Report { envelope, mark: newer } = store.latest_report(&edge, Some(&mark), &Limits::SPEC).await.unwrap() else {
            panic!("the newer report")
        };
        assert_eq!((envelope.as_slice(), newer != mark), (&br#"{"second":2}"#[..], true));
        let other = "fleet/edge-2".parse().unwrap();
        assert_eq!(store.latest_report(&other, None, &Limits::SPEC).await.unwrap(), Latest::None, "per cluster");
        assert!(store.clusters(&Limits::SPEC).await.unwrap().is_empty(), "reports are no cluster's bundles");
    }

    #[tokio::test]
    async fn keeps_the_newest_history_names_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = LayoutStore::open(dir.path()).unwrap();
        let at: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
        for i in 0..(LAYOUT_HISTORY as i64 + 5) {
            store.push_report(&report("fleet/edge-1", at + SignedDuration::from_mins(i), &format!("{{\"n\":{i}}}"))).await.unwrap();
        }
        store.push_report(&report("fleet/edge-2", at, "{}")).await.unwrap();
        let names: Vec<String> = store
            .reader
            .index(&Limits::SPEC)
            .unwrap()
            .index
            .manifests
            .iter()
            .filter_map(|d| d.annotations.get(REF_NAME).cloned())
            .collect();
        let history = |c: &str| names.iter().filter(|n| n.starts_with(&format!("fleet/{c}/reports:r"))).count();
        assert_eq!((history("edge-1"), history("edge-2")), (LAYOUT_HISTORY, 1), "{names:?}");
        assert!(names.contains(&format!("fleet/edge-1/reports:{}", history_tag(&(at + SignedDuration::from_mins(20))))));
        assert!(!names.contains(&format!("fleet/edge-1/reports:{}", history_tag(&at))), "the oldest went");
    }
}
