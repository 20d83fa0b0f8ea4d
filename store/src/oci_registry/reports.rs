//! A registry's reports (spec 14.7): the repository `<prefix>/<namespace>/<name>/reports` of
//! each cluster, one artifact per report tagged `r<finishedAt>` and then `latest`. A read is
//! a conditional GET of `latest` (`304` when it still names the manifest read last) and,
//! for a new one, its envelope layer. Nothing here deletes: the history tags stay until
//! the registry's own retention removes them.

use async_trait::async_trait;

use super::RegistryStore;
use super::push::{Placed, put_tagged};
use crate::error::StoreError;
use crate::oci::MANIFEST_MEDIA_TYPE;
use crate::reports::{Latest, REPORTS, ReportPush, ReportStore, history_tag, report_artifact, report_layer};
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Digest;
use airlock_bundle::limits::Limits;

impl RegistryStore {
    fn reports_repository(&self, cluster: &ClusterId) -> String {
        format!("{}/{REPORTS}", self.registry.repository(cluster))
    }
}

#[async_trait]
impl ReportStore for RegistryStore {
    fn describe_reports(&self) -> String {
        self.registry.describe.clone()
    }

    async fn push_report(&self, report: &ReportPush) -> Result<(), StoreError> {
        let artifact = report_artifact(report);
        let (cluster, repository) = (&report.cluster, self.reports_repository(&report.cluster));
        // The history tag first: `latest` never names a report its history lacks.
        let tags = [history_tag(&report.finished_at), "latest".to_string()];
        let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
        put_tagged(&self.registry, cluster, &repository, &tags, &artifact, &Placed::default()).await?;
        tracing::debug!(store = %self.registry.describe, %cluster, manifest = %artifact.manifest_digest, "report pushed");
        Ok(())
    }

    async fn latest_report(&self, cluster: &ClusterId, seen: Option<&str>, limits: &Limits) -> Result<Latest, StoreError> {
        let registry = &self.registry;
        let reference = registry.reference_in(self.reports_repository(cluster), "latest").await;
        let url = format!("{}/v2/{}/manifests/latest", registry.base_url, reference.repository());
        let what = format!("reports of {cluster}");
        let seen: Option<Digest> = seen.and_then(|s| s.parse().ok());
        let response = match registry.get_unless(&reference, &url, MANIFEST_MEDIA_TYPE, seen.as_ref(), &what).await {
            Ok(Some(response)) => response,
            Ok(None) => return Ok(Latest::Unchanged),
            Err(StoreError::NotFound { .. }) => return Ok(Latest::None),
            Err(e) => return Err(e),
        };
        let (_, bytes) = registry.read_capped(response, limits.oci_manifest_bytes, &what).await?;
        let digest = Digest::of(&bytes);
        if seen == Some(digest) {
            return Ok(Latest::Unchanged);
        }
        let layer = report_layer(&registry.describe, &what, &bytes)?;
        let envelope = registry.read_blob(cluster, &reference, layer, limits.envelope_bytes).await?;
        Ok(Latest::Report { envelope, mark: digest.to_string() })
    }
}
