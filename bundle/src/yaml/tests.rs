//! The contract's reading of a bundle file (spec 2.5): core booleans, octal modes, the
//! documents' lines, and what it refuses, in serde_saphyr's words.

use serde_json::json;

use super::*;

#[test]
fn reads_core_booleans_and_octal_modes_and_numbers_the_documents_lines() {
    let text = "# header\n---\nkind: A\non: yes\nb: True\nmode: 0644\n---\n\n---\n- x\n- y: n\n";
    let documents = manifests(text).unwrap();
    assert_eq!(
        documents,
        vec![
            Document { line: 3, value: json!({"kind": "A", "on": "yes", "b": true, "mode": 420}) },
            Document { line: 10, value: json!(["x", {"y": "n"}]) },
        ]
    );
}

#[test]
fn refuses_what_the_contract_forbids_in_serde_saphyrs_words() {
    for (text, word) in
        [("a: &x 1\nb: *x\n", "anchors"), ("a: 1\na: 2\n", "duplicate"), ("m:\n  <<: {x: y}\n", "merge"), ("a: 1\n---\nb: [\n", "line 3")]
    {
        let err = manifests(text).unwrap_err().to_string();
        assert!(err.to_lowercase().contains(word), "{text:?}: {err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
}

#[test]
fn holds_streams_to_the_contracts_depth_and_document_limits() {
    let limits = &Limits::SPEC;
    let nested = |n: usize| {
        let mut text: String = (0..n).map(|depth| format!("{}k:\n", "  ".repeat(depth))).collect();
        text.push_str(&format!("{}k: v\n", "  ".repeat(n)));
        text
    };
    assert!(manifests(&nested(limits.yaml_depth - 2)).is_ok());
    assert!(manifests(&nested(limits.yaml_depth + 1)).is_err());
    assert_eq!(manifests(&"---\na: 1\n".repeat(limits.yaml_documents)).map(|d| d.len()), Ok(limits.yaml_documents));
    assert!(manifests(&"---\na: 1\n".repeat(limits.yaml_documents + 1)).is_err());
}
