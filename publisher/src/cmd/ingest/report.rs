//! One status report as `ingest` sees it (bundles-format.md section 14): the DSSE envelope a
//! puller signs with its cluster's report key, checked against the key registered on the
//! SveltosCluster, then the fields of its payload that status and annotations are built from.
//!
//! Only the payload's `cluster` is read before the signature is checked, to choose the key
//! (spec 14.4); every other field is read from verified bytes. This module does no I/O and
//! does not decide which report of a cluster wins: that is `ingest`'s job.

use airlock_bundle::envelope::{self, DecodedEnvelope, EnvelopeError};
pub use airlock_bundle::report::RunResult;
use airlock_bundle::report::{API_VERSION, KIND, REPORT_PAYLOAD_TYPE};
use airlock_bundle::vocabulary::REPORT_KEY_ANNOTATION;
use airlock_bundle::{ClusterId, Limits};
use airlock_bundle::{Keyring, PublicKey};
use serde::Deserialize;
use serde_json::Value;

/// Why a report is refused. Every one is a rejection: the same bytes never become good.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    #[error("a plain, unsigned report: give the puller its report key (--report-key, set up by `register cluster`)")]
    Unsigned,
    #[error("not a report envelope: {0}")]
    Envelope(EnvelopeError),
    #[error("payload is not a {KIND}: {0}")]
    Payload(String),
    #[error("no SveltosCluster {0} to check the report against")]
    UnknownCluster(ClusterId),
    #[error("SveltosCluster {0} has no {REPORT_KEY_ANNOTATION} annotation: register it again to give it a report key")]
    NoKey(ClusterId),
    #[error("SveltosCluster {cluster}: annotation {REPORT_KEY_ANNOTATION}: {message}")]
    BadKey { cluster: ClusterId, message: String },
    #[error("signature does not verify with the report key registered for {0}")]
    Signature(ClusterId),
    /// Read from one cluster's place in the store, it names another (spec 14.4 step 5).
    #[error("found among the reports of {place}, but it is a report of {claimed}")]
    Misplaced { place: ClusterId, claimed: ClusterId },
}

/// The fields of a verified report (spec 14.3), with its per-object entries as ingest
/// reads them.
pub type PullReport = airlock_bundle::report::PullReport<super::applied::ReportedObject>;

/// A decoded envelope and the cluster it claims to be from; not trusted yet.
#[derive(Debug, Clone)]
pub struct Opened {
    pub cluster: ClusterId,
    envelope: DecodedEnvelope,
}

/// Decodes envelope bytes and reads which cluster the report claims to come from.
pub fn open(bytes: &[u8], limits: &Limits) -> Result<Opened, ReportError> {
    let envelope = envelope::decode(bytes, REPORT_PAYLOAD_TYPE, limits).map_err(|e| {
        let plain = serde_json::from_slice::<Value>(bytes).is_ok_and(|v| v["kind"] == KIND);
        if plain { ReportError::Unsigned } else { ReportError::Envelope(e) }
    })?;
    // spec 14.4: `cluster` only picks the key; nothing else is read before the signature.
    #[derive(Deserialize)]
    struct Addressed {
        #[serde(deserialize_with = "cluster_id")]
        cluster: ClusterId,
    }
    let addressed: Addressed = serde_json::from_slice(&envelope.payload).map_err(|e| ReportError::Payload(e.to_string()))?;
    Ok(Opened { cluster: addressed.cluster, envelope })
}

fn cluster_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ClusterId, D::Error> {
    String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
}

/// The report key registered on a SveltosCluster object (its `airlock.dev/report-key`).
pub fn registered_key(cluster: &ClusterId, object: &Value) -> Result<PublicKey, ReportError> {
    let text = object["metadata"]["annotations"][REPORT_KEY_ANNOTATION].as_str().ok_or_else(|| ReportError::NoKey(cluster.clone()))?;
    PublicKey::parse(text).map_err(|e| ReportError::BadKey { cluster: cluster.clone(), message: e.to_string() })
}

/// Checks the signature with the cluster's key, then parses the verified payload.
pub fn verify(opened: &Opened, key: &PublicKey) -> Result<PullReport, ReportError> {
    let keyring = Keyring::new(1, 1, vec![*key], &Limits::SPEC).expect("one key makes a valid keyring");
    keyring.check(&opened.envelope).map_err(|_| ReportError::Signature(opened.cluster.clone()))?;
    let report: PullReport = serde_json::from_slice(&opened.envelope.payload).map_err(|e| ReportError::Payload(e.to_string()))?;
    if report.api_version != API_VERSION || report.kind != KIND {
        let got = format!("apiVersion {:?}, kind {:?}", report.api_version, report.kind);
        return Err(ReportError::Payload(format!("{got}, expected {API_VERSION:?} and {KIND:?}")));
    }
    Ok(report)
}
