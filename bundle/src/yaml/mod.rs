//! The manifests of spec 2.5 read into JSON values: [`manifests`] is how a puller reads a
//! bundle's files, by serde_saphyr with the contract's options, which defines what a
//! stream means and words every error.

mod document;
#[cfg(test)]
mod tests;

use serde_json::Value;
use serde_saphyr::{DuplicateKeyPolicy, MergeKeyPolicy, Spanned};

pub use document::Document;

use crate::Limits;

/// A stream that is not a valid manifest file, in serde_saphyr's words (first line only:
/// the caller names the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct YamlError(String);

/// Reads a bundle file's YAML (spec 2.5) into its non-empty documents.
pub fn manifests(text: &str) -> Result<Vec<Document>, YamlError> {
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
