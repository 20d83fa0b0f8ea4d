//! How much a `remoteURL` may bring. Every body is read through one capped reader, and
//! what gzip inflates is capped again, so a hostile server can neither exhaust memory
//! with an endless body nor with a gzip bomb.

/// A response body (a document, an archive, an OCI layer), in bytes: 16 MiB, far above
/// any manifest set and far below what would strain the publisher's memory.
pub const MAX_BODY: u64 = 16 * 1024 * 1024;
/// An OCI manifest, in bytes: distribution's own guidance for manifests.
pub const MAX_MANIFEST: u64 = 4 * 1024 * 1024;
/// What one gzip stream inflates to, in bytes: the publisher's bundle parts are capped
/// well below this anyway, and ratio-based bombs stop here.
pub const MAX_INFLATED: u64 = 64 * 1024 * 1024;
/// Entries of a tar read, of any type: a tar of tiny entries costs time, not bytes.
pub const MAX_TAR_ENTRIES: usize = 10_000;
/// Layers of one OCI artifact.
pub const MAX_LAYERS: usize = 100;
/// Between connecting and the first byte, and between two reads of one response.
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Fetches in flight at once.
pub const CONCURRENT: usize = 8;
