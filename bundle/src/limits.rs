//! Every size and count limit of the bundle contract, in one place (spec section 10).
//!
//! Nothing here is "unlimited": each reader takes a [`Limits`] and enforces it before or
//! while reading. The defaults are the numbers of the spec; tests shrink them to exercise
//! the rejection paths without allocating hundreds of megabytes.

/// One mebibyte, the unit most limits are stated in.
pub const MIB: u64 = 1024 * 1024;

/// Limits applied while reading bundles, keyrings and stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of a DSSE envelope (spec 8.1). A 10,000-file predicate is about 1.5 MiB.
    pub envelope_bytes: u64,
    /// Bytes of a keyring chain (spec 7.3).
    pub keyring_chain_bytes: u64,
    /// Keyring updates in one chain.
    pub keyring_updates: usize,
    /// Bytes of an OCI manifest or index: what registries accept.
    pub oci_manifest_bytes: u64,
    /// Bytes of an OCI layout's or archive's `index.json`, which lists two entries per
    /// cluster: about 1 MiB per 2,000 clusters.
    pub oci_index_bytes: u64,
    /// Signatures in one envelope.
    pub signatures: usize,
    /// Keys in one keyring.
    pub keyring_keys: usize,
    /// Files in one bundle.
    pub files: usize,
    /// Parts (profiles) in one bundle.
    pub parts: usize,
    /// Bytes of one file: larger than any object the API server stores.
    pub file_bytes: u64,
    /// Bytes of all files of a bundle together.
    pub total_bytes: u64,
    /// Bytes one fetch from a Git store may receive: a shared branch holds every cluster's
    /// bundle, so this is the size of a fleet's tip, not of one bundle.
    pub git_fetch_bytes: u64,
    /// Largest ratio of decompressed to compressed bytes, checked once
    /// `ratio_grace_bytes` have been produced. YAML tars compress 5-20:1.
    pub max_ratio: u64,
    /// Output produced before the ratio is checked.
    pub ratio_grace_bytes: u64,
    /// Entries in an OCI archive.
    pub archive_entries: usize,
    /// Age recipients a bundle's encrypted files are encrypted to (spec 2.7).
    pub recipients: usize,
    /// YAML documents in one bundle file (spec 2.5): more is a document-separator storm.
    pub yaml_documents: usize,
    /// Nesting depth of one YAML document (spec 2.5): deeper is a depth bomb.
    pub yaml_depth: usize,
    /// Bytes of a reports file (spec 14.6): 64 reports of the largest size.
    pub reports_file_bytes: u64,
    /// Allowed clock skew for `issuedAt`, in seconds (spec 8.9).
    pub clock_skew_secs: i64,
    /// Longest validity, `expires` minus `issuedAt`, in seconds (spec 8.10); also how far
    /// past the newest accepted `issuedAt` one may be while the clock is known wrong (8.9).
    pub max_validity_secs: i64,
    /// How far above the applied version a bundle's version may be (spec 8.8).
    pub max_version_step: u64,
    /// How far above the keyring it updates a keyring update's version may be (spec 7.3).
    pub max_keyring_version_step: u64,
}

impl Limits {
    /// The limits of the spec.
    pub const SPEC: Limits = Limits {
        envelope_bytes: 4 * MIB,
        keyring_chain_bytes: MIB,
        keyring_updates: 16,
        oci_manifest_bytes: 4 * MIB,
        oci_index_bytes: 64 * MIB,
        signatures: 64,
        keyring_keys: 64,
        files: 10_000,
        parts: 1_000,
        file_bytes: 4 * MIB,
        total_bytes: 256 * MIB,
        git_fetch_bytes: 2048 * MIB,
        max_ratio: 200,
        ratio_grace_bytes: MIB,
        archive_entries: 100_000,
        recipients: 16,
        yaml_documents: 1_000,
        yaml_depth: 64,
        reports_file_bytes: 256 * MIB,
        clock_skew_secs: 300,
        max_validity_secs: 90 * 86_400,
        max_version_step: 1_000_000,
        max_keyring_version_step: 1_000,
    };

    /// The most bytes a part's compressed transport copy may take (spec section 10):
    /// deflate's worst case on incompressible data stays below this.
    pub fn transport_cap(tar_size: u64) -> u64 {
        tar_size + tar_size / 128 + 4096
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::SPEC
    }
}
