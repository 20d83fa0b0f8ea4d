//! The line reader held to serde_saphyr's answer as a puller reads (spec 2.5), values and
//! lines, on every text of `testkit::yaml`; the publisher's tests hold it there with YAML
//! 1.1 booleans on the same texts and on the benchmark fleet's rendered templates.

use serde_json::json;

use super::*;
use crate::testkit::yaml::*;

fn answered(texts: &[String]) -> usize {
    texts.iter().filter(|t| read_as_saphyr_reads(t)).count()
}

#[test]
fn tricky_scalars_mean_what_serde_saphyr_says_in_every_position() {
    // The line reader leaves documents that are a scalar, tabs and non-ASCII text.
    let n = answered(&scalars_in_every_position());
    assert!(n > 500, "the line reader answered only {n}");
}

#[test]
fn the_line_reader_answers_block_manifests_and_leaves_the_rest() {
    assert_shapes(read_as_saphyr_reads);
}

#[test]
fn edited_manifests_read_as_serde_saphyr_reads_them() {
    let n = answered(&edited_manifests(4000));
    assert!(n > 400, "the line reader answered only {n} of 4000");
}

#[test]
fn generated_streams_read_as_serde_saphyr_reads_them() {
    // The rest hold a tag, an anchor, a null or repeated key, or are not YAML.
    let n = answered(&generated_streams(3000));
    assert!(n > 300, "the line reader answered only {n} of 3000");
}

#[test]
fn every_yaml_file_of_the_repository_reads_as_serde_saphyr_reads_it() {
    let files = repository_yaml_files();
    assert!(files.len() >= 10, "found only {} YAML files", files.len());
    let n = files.iter().filter(|(_, text)| read_as_saphyr_reads(text)).count();
    // The rest hold folded scalars, scalars continued on the next line...
    assert!(n * 2 > files.len(), "the line reader answered only {n} of {} files", files.len());
}

#[test]
fn limits_are_left_to_serde_saphyr() {
    let limits = &Limits::SPEC;
    for n in [limits.yaml_depth - 2, limits.yaml_depth - 1, limits.yaml_depth, limits.yaml_depth + 1] {
        let mut text = String::new();
        for depth in 0..n {
            text.push_str(&format!("{}k:\n", "  ".repeat(depth)));
        }
        text.push_str(&format!("{}k: v\n", "  ".repeat(n)));
        read_as_saphyr_reads(&text);
    }
    for n in [limits.yaml_documents - 1, limits.yaml_documents, limits.yaml_documents + 1] {
        read_as_saphyr_reads(&"---\na: 1\n".repeat(n));
    }
    assert!(manifests(&"---\na: 1\n".repeat(limits.yaml_documents + 1)).is_err());
}

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
    assert_eq!(lines::read(text, Booleans::Yaml11).unwrap()[0].value["on"], json!(true));
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
fn a_byte_outside_printable_ascii_anywhere_is_left_to_serde_saphyr() {
    let text = format!("k: {}\n", "v".repeat(96));
    assert!(lines::read(&text, Booleans::Core).is_some());
    for at in 3..text.len() - 1 {
        for odd in ["\t", "\r", "\x7f", "\u{e9}", "\0"] {
            let edited = format!("{}{odd}{}", &text[..at], &text[at..]);
            assert!(lines::read(&edited, Booleans::Core).is_none(), "{odd:?} at {at}");
            read_as_saphyr_reads(&edited);
        }
    }
}
