//! The publisher's limits on the YAML it reads: the size of one input file, and per stream
//! the documents, nesting, aliases and what aliases may expand to. Every YAML reader of
//! the publisher keeps to them.

use airlock_bundle::Limits;

/// Bytes of one file under `--from-dir`: far above any manifest set, low enough that a
/// stray disk image in the checkout fails fast instead of filling memory.
pub const MAX_INPUT_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Documents in one YAML stream: the bundle contract's limit (spec 10).
pub const MAX_DOCUMENTS: usize = Limits::SPEC.yaml_documents;
/// Nesting depth of one document: the bundle contract's limit (spec 10).
pub const MAX_DEPTH: usize = Limits::SPEC.yaml_depth;
/// Alias uses in one stream. Operators do write anchors in management manifests, and the
/// output expands them, so a few are allowed; a bomb needs far more.
pub const MAX_ALIASES: usize = 1_000;
/// Stream length the fast paths (`lines`, `direct`) take: serde_saphyr caps scalar and
/// comment bytes at 64 MiB each, which a stream of half that cannot reach.
pub const MAX_FAST_PATH_BYTES: usize = 32 << 20;
/// Events replayed through aliases in one stream: bounds what expansion can produce.
pub const MAX_REPLAYED_EVENTS: usize = 100_000;
