//! Why a chart could not be fetched or rendered. Every variant names the chart it is about
//! (profile, repository, chart, version) so one failed release among a fleet's is found
//! from the message alone; [`HelmError::class`] tells the caller whether trying again
//! next run can help.

use std::fmt;

/// Which chart an error is about, as the profile spelled it. Boxed: errors travel in
/// `Result`s of every fetch and render, and stay one pointer wide.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChartLabel(Box<LabelParts>);

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct LabelParts {
    profile: String,
    repository: String,
    chart: String,
    version: String,
}

impl ChartLabel {
    /// `profile` is `ClusterProfile/web` (empty when the caller does not say); `version` the
    /// version or range asked for (empty for "latest").
    pub fn new(profile: &str, repository: &str, chart: &str, version: &str) -> ChartLabel {
        ChartLabel(Box::new(LabelParts {
            profile: profile.into(),
            repository: repository.into(),
            chart: chart.into(),
            version: version.into(),
        }))
    }

    pub fn profile(&self) -> &str {
        &self.0.profile
    }

    pub fn chart(&self) -> &str {
        &self.0.chart
    }
}

impl fmt::Display for ChartLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.0;
        if !p.profile.is_empty() {
            write!(f, "{}: ", p.profile)?;
        }
        write!(f, "chart {:?} from {:?}", p.chart, p.repository)?;
        if !p.version.is_empty() {
            write!(f, " version {:?}", p.version)?;
        }
        Ok(())
    }
}

/// How a caller should treat an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The profile or chart is wrong: the same inputs fail the same way next run.
    Rejected,
    /// A repository, registry or the helm binary could not be reached or run: retry.
    Unavailable,
    /// The chart or version does not exist in the repository.
    NotFound,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HelmError {
    /// No helm binary: neither the path given nor one on PATH.
    #[error("helm not found: {searched} (install it with hack/helm.sh or pass --helm PATH)")]
    HelmNotFound { searched: String },
    /// The binary ran but is not a helm this module knows how to drive.
    #[error("{path}: not a usable helm: {message}")]
    HelmUnusable { path: String, message: String },
    /// A helm entry of the profile that cannot be used as written.
    #[error("{chart}: field {field}: {message}")]
    Entry { chart: ChartLabel, field: String, message: String },
    /// A Sveltos feature this renderer does not implement; refused, never ignored.
    #[error("{chart}: {field} is not supported: {reason}")]
    Unsupported { chart: ChartLabel, field: String, reason: String },
    /// The repository or registry could not be reached, or answered with an error.
    #[error("{chart}: repository unavailable: {message}")]
    SourceUnavailable { chart: ChartLabel, message: String },
    /// The repository has no such chart, or no version matching the one asked for.
    #[error("{chart}: not found: {message}")]
    ChartNotFound { chart: ChartLabel, message: String },
    /// The downloaded archive is not what the repository's index promised.
    #[error("{chart}: archive sha256 {actual}, the repository index says {expected}")]
    DigestMismatch { chart: ChartLabel, expected: String, actual: String },
    /// `helm template` refused the chart with these values and capabilities.
    #[error("{chart}: release {namespace}/{release}: helm template failed: {message}")]
    Render { chart: ChartLabel, release: String, namespace: String, message: String },
    /// What helm printed is not a stream of Kubernetes objects.
    #[error("{chart}: release {namespace}/{release}: {source_path}: {message}")]
    Manifest { chart: ChartLabel, release: String, namespace: String, source_path: String, message: String },
    /// A helm process ran longer than its budget and was killed.
    #[error("{chart}: helm {verb} ran longer than {seconds} s and was stopped")]
    Timeout { chart: ChartLabel, verb: String, seconds: u64 },
    /// A helm process printed more than its budget.
    #[error("{chart}: helm {verb} printed more than {limit_bytes} bytes")]
    OutputTooLarge { chart: ChartLabel, verb: String, limit_bytes: u64 },
    /// The chart cache or helm's scratch directories could not be written or read.
    #[error("{path}: {message}")]
    Cache { path: String, message: String },
}

impl HelmError {
    pub fn class(&self) -> Class {
        match self {
            HelmError::Entry { .. }
            | HelmError::Unsupported { .. }
            | HelmError::DigestMismatch { .. }
            | HelmError::Render { .. }
            | HelmError::Manifest { .. }
            | HelmError::OutputTooLarge { .. } => Class::Rejected,
            HelmError::ChartNotFound { .. } => Class::NotFound,
            HelmError::HelmNotFound { .. }
            | HelmError::HelmUnusable { .. }
            | HelmError::SourceUnavailable { .. }
            | HelmError::Timeout { .. }
            | HelmError::Cache { .. } => Class::Unavailable,
        }
    }
}

pub(super) fn cache_error(path: &std::path::Path, err: impl fmt::Display) -> HelmError {
    HelmError::Cache { path: path.display().to_string(), message: err.to_string() }
}
