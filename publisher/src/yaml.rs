//! YAML in and out, with the publisher's input limits in one place.
//!
//! Everything the publisher reads as YAML (files under `--from-dir`, manifests inside
//! ConfigMaps and Secrets) goes through [`parse_documents`], which caps documents, depth
//! and alias expansion before anything is built. [`emit`] writes plain YAML: values come
//! out of `serde_json::Value`, which has no sharing, so the output never holds anchors or
//! aliases (spec 2.5). Kubernetes reads `0644` as an octal number, and so does this module.

use serde_json::Value;

/// Bytes of one file under `--from-dir`: far above any manifest set, low enough that a
/// stray disk image in the checkout fails fast instead of filling memory.
pub const MAX_INPUT_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Documents in one YAML stream: the bundle contract's limit (spec 10).
pub const MAX_DOCUMENTS: usize = 1_000;
/// Nesting depth of one document: the bundle contract's limit (spec 10).
pub const MAX_DEPTH: usize = 64;
/// Alias uses in one stream. Operators do write anchors in management manifests, and the
/// output expands them, so a few are allowed; a bomb needs far more.
pub const MAX_ALIASES: usize = 1_000;
/// Events replayed through aliases in one stream: bounds what expansion can produce.
pub const MAX_REPLAYED_EVENTS: usize = 100_000;

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
    serde_saphyr::from_multiple_with_options::<Value>(text, options()).map_err(|e| e.to_string().trim().to_string())
}

/// What stands between two documents of a stream: streams of documents written one at a
/// time join with it into what [`emit`] writes for all of them.
pub const SEPARATOR: &str = "---\n";

/// Writes documents as one plain YAML stream, `---` between documents.
pub fn emit(documents: &[Value]) -> String {
    documents
        .iter()
        .map(|d| serde_saphyr::to_string(d).expect("a JSON value serialises as YAML"))
        .collect::<Vec<_>>()
        .join(SEPARATOR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_strings_that_look_like_other_types() {
        let doc = json!({"a": "0644", "b": "yes", "c": "1.0", "d": "null", "e": "~", "f": "on",
                         "g": "2020-01-01", "h": "a: b", "i": "line1\nline2\n", "n": "x", "j": 420});
        let text = emit(std::slice::from_ref(&doc));
        assert_eq!(parse_documents(&text).unwrap(), vec![doc]);
        assert!(!text.contains('&') && !text.contains('*'), "{text}");
    }

    #[test]
    fn reads_octal_like_kubernetes_and_skips_empty_documents() {
        let docs = parse_documents("---\n---\nmode: 0644\n---\n# only a comment\n---\nb: 1\n").unwrap();
        assert_eq!(docs, vec![json!({"mode": 420}), json!({"b": 1})]);
        assert_eq!(emit(&docs), "mode: 420\n---\nb: 1\n");
    }

    #[test]
    fn expands_a_few_aliases_and_refuses_bombs() {
        assert_eq!(parse_documents("a: &x {k: v}\nb: *x\n").unwrap(), vec![json!({"a": {"k": "v"}, "b": {"k": "v"}})]);
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            bomb.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        assert!(parse_documents(&bomb).is_err());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 2), "]".repeat(MAX_DEPTH + 2));
        assert!(parse_documents(&deep).is_err());
        assert!(parse_documents(&"---\na: 1\n".repeat(MAX_DOCUMENTS + 1)).is_err());
    }

    #[test]
    fn errors_carry_the_position() {
        let err = parse_documents("a: 1\n---\nb: [\n").unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        let dup = parse_documents("a: 1\na: 2\n").unwrap_err();
        assert!(dup.contains("duplicate"), "{dup}");
    }
}
