//! Signed status reports in the store, beside the bundles (spec 14.7): the [`ReportStore`]
//! the registry, layout and Git stores implement, what a push hands over ([`ReportPush`]),
//! what a read finds ([`Latest`]), and the OCI artifact of a report with its history tag.
//!
//! A store moves a report's bytes and finds the newest one; it never opens or checks them
//! (ingest does, spec 14.4), and it decides nothing about when a report is sent (the
//! puller does, spec 14.8). Where each kind keeps them is its own module's `reports`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use jiff::Timestamp;

use crate::error::StoreError;
use crate::oci::{self, Artifact, CLUSTER, CREATED, EMPTY_BLOB, EMPTY_MEDIA_TYPE, ENVELOPE_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, OciDescriptor};
use crate::oci::{OciManifest, TITLE};
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::rfc3339;

/// `artifactType` of a report's manifest.
pub const REPORT_ARTIFACT_TYPE: &str = "application/vnd.airlock.report.v1";
/// The manifest annotation with `finishedAt` at full precision.
pub const REPORT_FINISHED: &str = "dev.airlock.report.finished";
/// The last path component of a cluster's reports, after its bundles' repository.
pub const REPORTS: &str = "reports";
/// Title of the report layer, and the file of a Git reports branch.
pub const REPORT_FILE: &str = "report.json";
/// History names a layout keeps per cluster: its `index.json` must not grow with every run.
pub const LAYOUT_HISTORY: usize = 16;
/// Clusters whose newest report is read at once by [`ReportStore::latest_reports`]'s default.
const READS_IN_FLIGHT: usize = 16;

/// What [`ReportStore::latest_reports`] hands over: each cluster's newest report, in the
/// order asked.
pub type LatestReports<'a> = BoxStream<'a, Result<Latest, StoreError>>;

/// One report to write: the report file's exact bytes and what the store names it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportPush {
    pub cluster: ClusterId,
    pub finished_at: Timestamp,
    /// `result` of the report, for a Git commit message.
    pub result: String,
    /// The signed report file (spec 14.2), unchanged.
    pub envelope: Vec<u8>,
}

/// What the store holds as a cluster's newest report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Latest {
    /// No report of this cluster.
    None,
    /// The one the caller's mark names: nothing new.
    Unchanged,
    /// A report the caller has not seen: its exact bytes, and the mark that names it.
    Report { envelope: Vec<u8>, mark: String },
}

/// Where a cluster's signed reports go online, and are read back from.
#[async_trait]
pub trait ReportStore: Send + Sync {
    /// The store, for messages.
    fn describe_reports(&self) -> String;

    /// Writes `report` as its cluster's newest, and into its history.
    async fn push_report(&self, report: &ReportPush) -> Result<(), StoreError>;

    /// `cluster`'s newest report, unless it is the one `seen` (a mark an earlier read
    /// returned) names.
    async fn latest_report(&self, cluster: &ClusterId, seen: Option<&str>, limits: &Limits) -> Result<Latest, StoreError>;

    /// [`ReportStore::latest_report`] for many clusters, handed over in their order as
    /// they are read, so that a caller can work on the first while the rest are read; a
    /// few at a time unless the store can do better (Git lists every branch at once, and
    /// hands all of them over after that).
    fn latest_reports<'a>(&'a self, wanted: &'a [(ClusterId, Option<String>)], limits: &'a Limits) -> LatestReports<'a> {
        futures::stream::iter(wanted)
            .map(move |(cluster, seen)| self.latest_report(cluster, seen.as_deref(), limits))
            .buffered(READS_IN_FLIGHT)
            .boxed()
    }
}

/// What `read` finds, handed over once it is done: for stores that read every cluster at once.
pub(crate) fn all_at_once<'a>(read: impl Future<Output = Vec<Result<Latest, StoreError>>> + Send + 'a) -> LatestReports<'a> {
    futures::stream::once(read).flat_map(futures::stream::iter).boxed()
}

/// The history tag of a report that finished at `finished`: `r20260301T100000.250Z`.
pub fn history_tag(finished: &Timestamp) -> String {
    format!("r{}", finished.strftime("%Y%m%dT%H%M%S%.3fZ"))
}

/// The report's OCI artifact (spec 14.7): the empty config and the envelope as its one layer.
pub(crate) fn report_artifact(report: &ReportPush) -> Artifact {
    let config = oci::blob(EMPTY_BLOB.to_vec());
    let envelope = oci::blob(report.envelope.clone());
    let descriptor = |media_type: &str, blob: &oci::Blob, annotations| OciDescriptor {
        media_type: media_type.to_string(),
        digest: blob.digest,
        size: blob.bytes.len() as u64,
        artifact_type: None,
        annotations,
    };
    let layer = descriptor(ENVELOPE_MEDIA_TYPE, &envelope, BTreeMap::from([(TITLE.to_string(), REPORT_FILE.to_string())]));
    let manifest = OciManifest {
        schema_version: 2,
        media_type: MANIFEST_MEDIA_TYPE.to_string(),
        artifact_type: Some(REPORT_ARTIFACT_TYPE.to_string()),
        config: descriptor(EMPTY_MEDIA_TYPE, &config, BTreeMap::new()),
        layers: vec![layer],
        annotations: BTreeMap::from([
            (CREATED.to_string(), rfc3339::format(&report.finished_at)),
            (CLUSTER.to_string(), report.cluster.to_string()),
            (REPORT_FINISHED.to_string(), report.finished_at.to_string()),
        ]),
    };
    let manifest_bytes = serde_json::to_vec(&manifest).expect("manifest serialises");
    let manifest_digest = airlock_bundle::Digest::of(&manifest_bytes);
    Artifact { manifest, manifest_bytes, manifest_digest, blobs: vec![config, envelope] }
}

/// The envelope layer of a report manifest's bytes, checked to be one of ours.
pub(crate) fn report_layer(store: &str, what: &str, bytes: &[u8]) -> Result<OciDescriptor, StoreError> {
    let malformed = |message: String| StoreError::Malformed { store: store.to_string(), what: what.to_string(), message };
    let m: OciManifest = serde_json::from_slice(bytes).map_err(|e| malformed(format!("manifest is not valid JSON: {e}")))?;
    if m.media_type != MANIFEST_MEDIA_TYPE || m.artifact_type.as_deref() != Some(REPORT_ARTIFACT_TYPE) {
        return Err(malformed(format!("manifest is {} / {:?}, not an Airlock report", m.media_type, m.artifact_type)));
    }
    match m.layers.as_slice() {
        [layer] if layer.media_type == ENVELOPE_MEDIA_TYPE => Ok(layer.clone()),
        _ => Err(malformed("a report manifest has exactly one layer, the envelope".into())),
    }
}

/// The reference-name stem of `cluster`'s reports in a layout: `<namespace>/<name>/reports`.
pub(crate) fn reports_name(cluster: &ClusterId) -> String {
    format!("{cluster}/{REPORTS}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push() -> ReportPush {
        ReportPush {
            cluster: "fleet/edge-1".parse().unwrap(),
            finished_at: "2026-03-01T10:00:00.25Z".parse().unwrap(),
            result: "applied".into(),
            envelope: br#"{"payloadType":"x"}"#.to_vec(),
        }
    }

    #[test]
    fn history_tags_are_valid_oci_tags_in_time_order() {
        let tag = history_tag(&push().finished_at);
        assert_eq!(tag, "r20260301T100000.250Z");
        assert!(tag.len() <= 128 && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)));
        let later = history_tag(&"2026-03-01T10:00:01Z".parse().unwrap());
        assert!(later > tag, "{later} sorts after {tag}");
    }

    #[test]
    fn a_report_artifact_reads_back_as_one() {
        let artifact = report_artifact(&push());
        let layer = report_layer("s", "m", &artifact.manifest_bytes).unwrap();
        assert_eq!(layer.digest, airlock_bundle::Digest::of(&push().envelope));
        assert_eq!(artifact.manifest.annotations[REPORT_FINISHED], "2026-03-01T10:00:00.25Z");
        assert_eq!(artifact.manifest.annotations[CREATED], "2026-03-01T10:00:00Z");
        assert_eq!(artifact.blobs.len(), 2);
    }

    #[test]
    fn rejects_a_bundle_manifest_as_a_report() {
        let mut artifact = report_artifact(&push());
        artifact.manifest.artifact_type = Some(oci::ARTIFACT_TYPE.into());
        let bytes = serde_json::to_vec(&artifact.manifest).unwrap();
        let err = report_layer("s", "m", &bytes).unwrap_err();
        assert!(matches!(&err, StoreError::Malformed { message, .. } if message.contains("not an Airlock report")), "{err:?}");
        artifact.manifest.artifact_type = Some(REPORT_ARTIFACT_TYPE.into());
        artifact.manifest.layers.clear();
        let err = report_layer("s", "m", &serde_json::to_vec(&artifact.manifest).unwrap()).unwrap_err();
        assert!(matches!(&err, StoreError::Malformed { message, .. } if message.contains("exactly one layer")), "{err:?}");
    }
}
