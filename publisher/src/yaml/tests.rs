//! The parser's behaviour, and the fast paths (the shared line reader with YAML 1.1
//! booleans, `direct`) held to serde_saphyr's answer on the texts of
//! `airlock_bundle::testkit::yaml` (every YAML file of the repository, tricky scalars in every
//! position, a few thousand generated streams and as many manifests edited at random) and
//! on the benchmark fleet's rendered templates.

use std::path::Path;

use airlock_bundle::testkit::yaml::*;
use serde_json::{Value, json};

use super::*;

/// Asserts that each fast path gives serde_saphyr's documents or leaves the stream to it
/// (always when serde_saphyr refuses it), and returns whether `direct` answered. Every
/// document is also written both ways.
fn agrees(text: &str) -> bool {
    let reference = saphyr_documents(text);
    for doc in reference.iter().flatten() {
        writes_alike(doc);
    }
    held_to(&reference, by_lines(text), "line", text);
    held_to(&reference, direct::parse(text), "direct", text)
}

/// [`agrees`], returning whether the line reader answered.
fn read_by_lines(text: &str) -> bool {
    agrees(text);
    by_lines(text).is_some()
}

fn held_to(reference: &Result<Vec<Value>, String>, answer: Option<Vec<Value>>, path: &str, text: &str) -> bool {
    match (answer, reference) {
        (None, _) => false,
        (Some(docs), Ok(expected)) => {
            assert_eq!(&docs, expected, "the {path} parse differs from serde_saphyr on:\n{text}");
            true
        }
        (Some(docs), Err(e)) => panic!("the {path} parse gave {docs:?} where serde_saphyr refuses ({e}):\n{text}"),
    }
}

/// Asserts that the writer writes serde_saphyr's text or leaves the value to it, and
/// returns whether it wrote.
fn writes_alike(value: &Value) -> bool {
    let Some(text) = writer::write(value) else { return false };
    assert_eq!(text, saphyr_text(value), "the writer differs from serde_saphyr on {value}");
    true
}

#[test]
fn tricky_scalars_mean_what_serde_saphyr_says_in_every_position() {
    let texts = scalars_in_every_position();
    let answered = texts.iter().filter(|t| agrees(t)).count();
    // Most of these are plain values the direct path must answer itself.
    assert!(answered > 1000, "direct path answered only {answered}");
    // The line reader leaves documents that are a scalar, tabs and non-ASCII text.
    let by_lines = texts.iter().filter(|t| by_lines(t).is_some()).count();
    assert!(by_lines > 500, "the line reader answered only {by_lines} (direct {answered})");
}

#[test]
fn the_direct_path_answers_plain_manifests_and_leaves_the_rest() {
    assert!(agrees("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # a comment\ndata:\n  mode: 0644\n  n: \"12\"\n"));
    assert!(agrees("---\n---\nmode: 0644\n---\n# only a comment\n---\nb: [1, {c: d}]\n...\n"));
    assert!(agrees("a:\r\n  - x\r\n  - y\r\n"));
    assert!(agrees("\u{feff}a: 1\n"));
    assert!(agrees("k: a\n  continued plain\n  line\n"));
    assert!(agrees("empty: {}\nlist: []\nnothing:\n"));
    for left in [
        "%YAML 1.2\n---\na: 1\n", // directive
        "a: &x 1\nb: *x\n",       // anchor and alias
        "base: &b {k: v}\nm:\n  <<: *b\n",
        "? [a, b]\n: v\n", // complex key
        "{a: 1}: x\n",
        "a: 1\na: 2\n", // duplicates, by text and by integer
        "1: a\n01: b\n",
        "0x1: a\n1: b\n",
        "-0: a\n0: b\n",
        "\"1\": a\n1: b\n",
        "~: a\n",
        "a: .inf\n",
        "a: [\n",
        "a: b: c\n",
    ] {
        assert!(!agrees(left), "direct path answered {left:?}");
    }
}

#[test]
fn the_line_reader_answers_block_manifests_and_leaves_the_rest() {
    assert_shapes(read_by_lines);
}

/// Manifests edited at random (a character put in or taken out, a line indented or
/// repeated): whatever the line reader answers is what serde_saphyr reads.
#[test]
fn edited_manifests_parse_as_serde_saphyr_parses_them() {
    let by_lines = edited_manifests(4000).iter().filter(|t| read_by_lines(t)).count();
    assert!(by_lines > 400, "the line reader answered only {by_lines} of 4000");
}

#[test]
fn limits_are_left_to_serde_saphyr() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    for n in [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1] {
        agrees(&deep(n));
    }
    // Nesting by indentation, which the line reader counts itself.
    let indented = |n: usize| {
        let mut text: String = (0..n).map(|depth| format!("{}k:\n", "  ".repeat(depth))).collect();
        text.push_str(&format!("{}k: v\n", "  ".repeat(n)));
        text
    };
    for n in [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1] {
        agrees(&indented(n));
    }
    for n in [MAX_DOCUMENTS - 1, MAX_DOCUMENTS, MAX_DOCUMENTS + 1] {
        agrees(&"---\na: 1\n".repeat(n));
    }
    assert!(!agrees(&"- x\n".repeat(direct::MAX_EVENTS)));
}

#[test]
fn a_byte_outside_printable_ascii_anywhere_is_left_to_serde_saphyr() {
    let text = format!("k: {}\n", "v".repeat(96));
    assert!(by_lines(&text).is_some());
    for at in 3..text.len() - 1 {
        for odd in ["\t", "\r", "\x7f", "\u{e9}", "\0"] {
            let edited = format!("{}{odd}{}", &text[..at], &text[at..]);
            assert!(lines::read(&edited).is_none(), "{odd:?} at {at}");
            agrees(&edited);
        }
    }
}

/// The YAML files of the repository, and the manifests inside their ConfigMaps and Secrets.
#[test]
fn every_yaml_file_of_the_repository_parses_as_serde_saphyr_parses_it() {
    let files = repository_yaml_files();
    let mut by_lines = 0;
    for (path, text) in &files {
        assert!(agrees(text), "{}: the direct path should answer a plain file", path.display());
        by_lines += usize::from(read_by_lines(text));
        for manifests in saphyr_documents(text).unwrap().iter().flat_map(embedded) {
            agrees(&manifests);
            read_by_lines(&manifests);
        }
    }
    assert!(files.len() >= 10, "found only {} YAML files", files.len());
    // The rest hold folded scalars, scalars continued on the next line...
    assert!(by_lines * 2 > files.len(), "the line reader answered only {by_lines} of {} files", files.len());
}

/// The texts a ConfigMap's `data` or a Secret's `stringData` holds.
fn embedded(doc: &Value) -> Vec<String> {
    ["data", "stringData"].iter().filter_map(|f| doc[f].as_object()).flatten().filter_map(|(_, v)| v.as_str().map(String::from)).collect()
}

/// The benchmark fleet of `hack/bench/gen-fleet.py`, its templates rendered for a few
/// clusters as a publish renders them.
#[test]
fn the_benchmark_fleet_parses_as_serde_saphyr_parses_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("python3")
        .arg(root.join("hack/bench/gen-fleet.py"))
        .args(["--clusters", "12", "--seed", "7", "--out"])
        .arg(out.path())
        .status()
        .expect("python3 runs hack/bench/gen-fleet.py");
    assert!(status.success());
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let clusters: Vec<Value> = walkdir::WalkDir::new(out.path().join("clusters"))
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .flat_map(|e| saphyr_documents(&read(e.path())).unwrap())
        .collect();
    assert_eq!(clusters.len(), 12);
    let mut rendered = 0;
    for entry in std::fs::read_dir(out.path().join("configmaps")).unwrap() {
        let text = read(&entry.unwrap().path());
        assert!(agrees(&text));
        for doc in saphyr_documents(&text).unwrap() {
            for (key, body) in doc["data"].as_object().unwrap() {
                let body = body.as_str().unwrap();
                if doc["metadata"]["annotations"].is_null() {
                    assert!(agrees(body), "{key}: the direct path should answer a plain manifest");
                    assert!(read_by_lines(body), "{key}: the line reader should answer a plain manifest");
                    continue;
                }
                for cluster in &clusters {
                    let source = crate::render::template::TemplateSource { profile: "bench", resource: "ConfigMap", key };
                    let text = crate::render::template::render(&source, body, &json!({"Cluster": cluster, "MgmtResources": {}})).unwrap();
                    assert!(agrees(&text), "{key}: the direct path should answer a rendered manifest");
                    assert!(read_by_lines(&text), "{key}: the line reader should answer a rendered manifest");
                    let documents = parse_documents(&text).unwrap();
                    for doc in &documents {
                        assert!(writes_alike(doc), "{key}: the writer should write a rendered manifest");
                    }
                    // What a puller reads of it: the bundle file the publisher writes.
                    let read_back: Vec<Value> =
                        airlock_bundle::yaml::manifests(&emit(&documents)).unwrap().into_iter().map(|d| d.value).collect();
                    assert_eq!(read_back, documents, "{key}: a puller should read the bundle file as written");
                    rendered += 1;
                }
            }
        }
    }
    assert!(rendered > 100, "rendered only {rendered} templates");
}

/// Streams built at random from the tricky scalars, in block and flow collections, with
/// comments, empty documents and keys of every spelling.
#[test]
fn generated_streams_parse_as_serde_saphyr_parses_them() {
    let streams = generated_streams(3000);
    let answered = streams.iter().filter(|t| agrees(t)).count();
    let by_lines = streams.iter().filter(|t| by_lines(t).is_some()).count();
    // The rest hold a tag, an anchor, a null or repeated key, or are not YAML.
    assert!(answered > 600, "direct path answered only {answered} of 3000");
    assert!(by_lines > 300, "the line reader answered only {by_lines} of 3000");
}

/// Values built at random: strings of characters YAML cares about, numbers, nested and
/// empty collections.
#[test]
fn generated_values_are_written_as_serde_saphyr_writes_them() {
    let mut next = below(0x2545_f491_4f6c_dd1d_u64);
    let mut written = 0;
    for _ in 0..20_000 {
        written += usize::from(writes_alike(&value(0, &mut next)));
    }
    for s in PLAIN {
        writes_alike(&json!({*s: *s, "k": [*s, {*s: [*s]}], "m": {"n": *s}}));
        writes_alike(&json!([*s, [*s], {}]));
        writes_alike(&json!(*s));
    }
    assert!(written > 5000, "the writer wrote only {written} of 20000");
}

fn value(depth: usize, next: &mut impl FnMut(usize) -> usize) -> Value {
    match next(if depth < 4 { 9 } else { 6 }) {
        0 => Value::Null,
        1 => json!(next(2) == 0),
        2 => json!(next(100_000) as i64 - 50_000),
        3 => json!(next(1000) as f64 / 8.0),
        4 | 5 => json!(string(next)),
        6 | 7 => Value::Object((0..next(4)).map(|_| (string(next), value(depth + 1, next))).collect()),
        _ => Value::Array((0..next(4)).map(|_| value(depth + 1, next)).collect()),
    }
}

/// Mostly names and flags, sometimes a word YAML resolves, sometimes any character.
fn string(next: &mut impl FnMut(usize) -> usize) -> String {
    const CHARS: &[char] = &[
        'a', 'Z', 'k', '0', '7', '-', '.', '_', '/', '=', ':', ' ', '#', ',', '\'', '"', '\n', '{', '[', '!', '&', '*', '?', '|', '>', '%',
        '@', '\t', '\u{e9}',
    ];
    match next(5) {
        0 => PLAIN[next(PLAIN.len())].to_string(),
        4 => {
            let units = ["m", "Mi", "Gi", "s", "e", "E", "e3", "x1", "o7", "b1", "ms", "h30", "k", "n", "y", "_1", ".5", "Z"];
            let fraction = if next(3) == 0 { format!(".{}", next(100)) } else { String::new() };
            format!("{}{fraction}{}", next(2000), units[next(units.len())])
        }
        1 => ["app.kubernetes.io/name", "--log-level=info", "--listen=:8080", "registry.example/a/b:1.2.3", "cpu", "x:", "a:b", "a: b"]
            [next(8)]
        .to_string(),
        _ => {
            let len = [next(8), next(20), next(100)][next(3)];
            let alphabet = if next(2) == 0 { &CHARS[..11] } else { CHARS };
            (0..len).map(|_| alphabet[next(alphabet.len())]).collect()
        }
    }
}

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
