//! The manifests of spec 2.5 read into JSON values, and the line reader both sides use.
//!
//! serde_saphyr defines what a stream means and words every error. [`lines`] reads the
//! block-style YAML that templates render a line at a time, for a fraction of the cost, and
//! gives up on anything else. [`manifests`] is how a puller reads a bundle's files: the line
//! reader, then serde_saphyr with the contract's options. The publisher reads its inputs
//! with the same line reader and YAML 1.1 booleans. [`crate::testkit::yaml`] holds the
//! reader to serde_saphyr's answer with both.

pub mod lines;
pub mod scalar;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};
use serde_saphyr::{DuplicateKeyPolicy, MergeKeyPolicy, Spanned};

use crate::Limits;

/// Which plain scalars are booleans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Booleans {
    /// YAML 1.2's core schema: `true`, `True`, `TRUE` and their opposites; `yes` is a
    /// string. A bundle's files (spec 2.5).
    Core,
    /// YAML 1.1's as well, in any case: `yes`, `y`, `on` and their opposites. What Sveltos
    /// and kubectl read in the publisher's inputs.
    Yaml11,
}

/// One non-empty document of a stream: the 1-based line its root starts on, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub line: u64,
    pub value: Value,
}

/// A stream that is not a valid manifest file, in serde_saphyr's words (first line only:
/// the caller names the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct YamlError(String);

/// Stream length the fast paths take: serde_saphyr caps scalar and comment bytes at 64 MiB
/// each, which a stream of half that cannot reach.
pub const MAX_BYTES: usize = 32 << 20;

/// Reads a bundle file's YAML (spec 2.5) into its non-empty documents.
pub fn manifests(text: &str) -> Result<Vec<Document>, YamlError> {
    lines::read(text, Booleans::Core).map_or_else(|| manifests_by_saphyr(text), Ok)
}

/// [`manifests`] by serde_saphyr alone: the answer the line reader is held to.
pub fn manifests_by_saphyr(text: &str) -> Result<Vec<Document>, YamlError> {
    let limits = &Limits::SPEC;
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_aliases: 0,
            max_anchors: 0,
            max_depth: limits.yaml_depth,
            max_documents: limits.yaml_documents,
        },
        duplicate_keys: DuplicateKeyPolicy::Error,
        merge_keys: MergeKeyPolicy::Error,
        strict_booleans: true,
        // spec 2.5: `0644` is an octal file mode, as kubectl (YAML 1.1) reads it.
        legacy_octal_numbers: true,
    };
    let documents: Vec<Spanned<Value>> = serde_saphyr::from_multiple_with_options(text, options).map_err(|e| {
        let message = e.to_string();
        YamlError(message.lines().next().unwrap_or(&message).trim_start_matches("error: ").to_string())
    })?;
    Ok(documents.into_iter().map(|d| Document { line: d.referenced.line(), value: d.value }).collect())
}

/// A mapping key as the string serde_json gets, unless serde_saphyr must judge it: a
/// merge key, a null key, or one that repeats another (by text, or by the integer two
/// plain keys spell: `1` and `0x1` are the same key). `integers` holds those the mapping's
/// plain keys spelt so far.
pub fn checked_key(text: &str, plain: bool, map: &Map<String, Value>, integers: &mut Vec<(bool, u128)>) -> Option<String> {
    if text == "<<" || map.contains_key(text) {
        return None;
    }
    if plain {
        if scalar::is_null(text) {
            return None;
        }
        if let Some(integer) = scalar::integer(text) {
            if integers.contains(&integer) {
                return None;
            }
            integers.push(integer);
        }
    }
    Some(text.to_string())
}
