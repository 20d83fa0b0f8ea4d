//! What a publish run records beside its bundles: where the profiles came from, as OCI
//! annotations (spec 9.1) or Git commit trailers.

/// Annotations a publish run records beside the bundles (spec 9.1).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PublishMeta {
    /// `org.opencontainers.image.source`: where the profiles came from.
    pub source: Option<String>,
    /// `org.opencontainers.image.revision`: the revision of that source.
    pub revision: Option<String>,
}
