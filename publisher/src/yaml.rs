//! YAML in and out, with the publisher's input limits in one place (`limits`).
//!
//! Everything the publisher reads as YAML (files under `--from-dir`, manifests inside
//! ConfigMaps and Secrets) goes through [`parse_documents`], which caps documents, depth
//! and alias expansion before anything is built. [`emit`] writes plain YAML: values come
//! out of `serde_json::Value`, which has no sharing, so the output never holds anchors or
//! aliases (spec 2.5). Kubernetes reads `0644` as an octal number, and so does this module.
//!
//! serde_saphyr defines what a stream means and how a value is written. The line reader
//! (`lines`, with the scalars of `scalar`) reads the block-style manifests templates render; `direct` builds the values of other plain streams from the
//! parser's events, skipping serde's visitors; and `writer` writes plain values as
//! serde_saphyr does, without its serializer. Each leaves what it is not sure of (tags,
//! anchors, errors, quoting...) to the next, and `tests` holds them all to serde_saphyr's
//! answer.

mod direct;
mod limits;
mod lines;
mod scalar;
mod split;
#[cfg(test)]
mod tests;
mod writer;

use serde_json::Value;

pub use limits::{MAX_ALIASES, MAX_DEPTH, MAX_DOCUMENTS, MAX_INPUT_FILE_BYTES, MAX_REPLAYED_EVENTS};
pub use split::split_documents;

fn options() -> serde_saphyr::Options {
    let mut alias_limits = serde_saphyr::options::AliasLimits::default();
    alias_limits.max_total_replayed_events = MAX_REPLAYED_EVENTS;
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: MAX_DOCUMENTS,
            max_depth: MAX_DEPTH,
            max_aliases: MAX_ALIASES,
        },
        alias_limits: alias_limits,
        legacy_octal_numbers: true,
        with_snippet: false,
    }
}

/// Parses a YAML stream into its non-empty documents. The error is the parser's, with line
/// and column; the caller names the file or object.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    by_lines(text).or_else(|| direct::parse(text)).map_or_else(|| saphyr_documents(text), Ok)
}

/// [`parse_documents`] by the line reader alone.
fn by_lines(text: &str) -> Option<Vec<Value>> {
    Some(lines::read(text)?.into_iter().map(|d| d.value).collect())
}

/// [`parse_documents`] by serde_saphyr alone.
fn saphyr_documents(text: &str) -> Result<Vec<Value>, String> {
    serde_saphyr::from_multiple_with_options::<Value>(text, options()).map_err(|e| e.to_string().trim().to_string())
}

/// What stands between two documents of a stream: streams of documents written one at a
/// time join with it into what [`emit`] writes for all of them.
pub const SEPARATOR: &str = "---\n";

/// Writes documents as one plain YAML stream, `---` between documents.
pub fn emit(documents: &[Value]) -> String {
    documents.iter().map(|d| writer::write(d).unwrap_or_else(|| saphyr_text(d))).collect::<Vec<_>>().join(SEPARATOR)
}

/// One document written by serde_saphyr alone.
fn saphyr_text(document: &Value) -> String {
    serde_saphyr::to_string(document).expect("a JSON value serialises as YAML")
}
