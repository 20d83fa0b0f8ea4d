//! What a YAML reader hands back: a stream's non-empty documents, each with the line it
//! starts on.

use serde_json::Value;

/// One non-empty document of a stream: the 1-based line its root starts on, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub line: u64,
    pub value: Value,
}
