//! What the readers of this module hand back: a stream's non-empty documents, each with
//! the line it starts on, and the stream length the fast paths take at most.

use serde_json::Value;

/// One non-empty document of a stream: the 1-based line its root starts on, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub line: u64,
    pub value: Value,
}

/// Stream length the fast paths take: serde_saphyr caps scalar and comment bytes at 64 MiB
/// each, which a stream of half that cannot reach.
pub const MAX_BYTES: usize = 32 << 20;
