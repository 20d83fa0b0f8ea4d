//! YAML to hold fast readers to serde_saphyr's answer: tricky scalars in every position,
//! manifests edited at random, streams generated from the tricky scalars, and the
//! repository's own YAML files. Deterministic: the same call gives the same texts on every
//! machine. The publisher's tests hold its line reader, event path and writer to
//! serde_saphyr on them.

use std::path::{Path, PathBuf};

/// Plain spellings of every kind serde_saphyr resolves, and a few near misses.
pub const PLAIN: &[&str] = &[
    "",
    "~",
    "null",
    "Null",
    "NULL",
    "nUll",
    "true",
    "True",
    "TRUE",
    "tRuE",
    "false",
    "FALSE",
    "yes",
    "Yes",
    "YES",
    "no",
    "No",
    "y",
    "Y",
    "n",
    "N",
    "on",
    "On",
    "ON",
    "off",
    "Off",
    "0",
    "-0",
    "+0",
    "00",
    "0644",
    "0755",
    "-0644",
    "+0644",
    "08",
    "09",
    "0_7",
    "0__7",
    "0x1F",
    "0x1f",
    "0X1F",
    "-0x1F",
    "+0x1F",
    "0x_1F",
    "0x__1F",
    "0xg",
    "0o17",
    "0O17",
    "0o18",
    "0b101",
    "0B101",
    "0b102",
    "0o",
    "0x",
    "0b",
    "1_000",
    "1__000",
    "_1000",
    "1000_",
    "12",
    "-12",
    "+12",
    "--12",
    "+-12",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "-0x8000000000000000",
    "-0x8000000000000001",
    "0xFFFFFFFFFFFFFFFF",
    "0x10000000000000000",
    "340282366920938463463374607431768211456",
    "1e3",
    "1E3",
    "1e+3",
    "-1e-3",
    "1.5",
    "-1.5",
    "+1.5",
    ".5",
    "5.",
    "-.5",
    "+.5",
    "0.",
    "1.0",
    "0.1",
    "1e999",
    "-1e999",
    ".5e999",
    ".inf",
    ".Inf",
    ".INF",
    ".iNf",
    "-.inf",
    "+.inf",
    ".nan",
    ".NaN",
    ".NAN",
    "-.nan",
    "+.NaN",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "NaN",
    "infinity",
    "-Infinity",
    "1_0.5",
    "1.2.3",
    "1:30",
    "1:30:00",
    "2020-01-01",
    "2020-01-01T00:00:00Z",
    "100m",
    "128Mi",
    "1Gi",
    "v1",
    "apps/v1",
    "--log-level=info",
    "-",
    "+",
    ".",
    "..",
    "1e",
    "e3",
    "0x1.8p3",
    "1_2_3",
    "\u{663}",
    "\u{ff11}\u{ff12}",
    "a b",
    "registry.example/x:1.2.3",
    "http://x.example/a?b=c",
    "x#y",
    "\u{e9}t\u{e9}",
    "<<",
    "=",
    "!important",
    "a\tb",
];

/// Scalars in other styles, as YAML text.
pub const STYLED: &[&str] = &[
    "\"0644\"",
    "'yes'",
    "\"~\"",
    "\"\"",
    "''",
    "\"a\\nb\"",
    "\"\\u00e9\\t\\x41\"",
    "'it''s'",
    "\"null\"",
    "'1e3'",
    "!!str 0644",
    "!!int '12'",
    "!!float 1",
    "!!bool yes",
    "!custom x",
    "!!binary aGk=",
    "!!null ''",
    "! 12",
    "&a x",
];

/// Block scalars, to follow `key:` on its line.
pub const BLOCKS: &[&str] = &["|\n  line1\n  line2\n", ">\n  folded\n  text\n\n  para\n", "|-\n  x\n", "|+\n  x\n\n", "|2\n   indented\n"];

/// Texts putting each tricky scalar in every position a value or key can take, and each
/// block scalar after a key and an item.
pub fn scalars_in_every_position() -> Vec<String> {
    let mut texts = Vec::new();
    for s in PLAIN.iter().chain(STYLED) {
        texts.extend([
            format!("k: {s}\n"),
            format!("- {s}\n- {s}\n"),
            format!("{{k: {s}}}\n"),
            format!("[{s}, {s}]\n"),
            format!("{s}: v\n"),
            format!("{s}\n"),
            format!("---\n{s}\n---\na: {s}\n"),
            format!("outer:\n  inner:\n  - {s}\n  - {{x: {s}}}\n"),
        ]);
    }
    for block in BLOCKS {
        texts.extend([format!("k: {block}"), format!("- {block}")]);
    }
    texts
}

/// Manifests a line reader must answer, and texts it must leave to serde_saphyr (folded
/// and continued scalars, tabs, carriage returns, non-ASCII, tags, anchors, complex keys,
/// a block scalar without a final line break, `...`, a root scalar, rare escapes).
pub const BY_LINES: &[&str] = &[
    "a: 1\nb:\n  c: [x, \"y\", 'z''s']\n  d: {e: f, g: {}}\n",
    "items:\n- name: a\n  args:\n  - --log-level=info\n  - -v\n- - nested\n  - -1\n-\n- # comment\n  k: v\n",
    "k: |\n  line1\n\n  line2\n   deeper\n  # not a comment\n\nnext: 1\n",
    "k: |+\n  keep\n\n\nnext: 1\n",
    "---\na: 1\n--- # second\nb: 2\n---\n",
    "# leading comment\n\n---\n\n# and another\nkind: A\n---\n- first item\n",
];

/// See [`BY_LINES`].
pub const NOT_BY_LINES: &[&str] = &[
    "k: >\n  folded\n",
    "k: |2\n   explicit\n",
    "k: a\n  continued\n",
    "k: \"open\n  quote\"\n",
    "k: [a,\n  b]\n",
    "k:\tv\n",
    "a: 1\r\n",
    "k: caf\u{e9}\n",
    "k: !!str 1\n",
    "k: &a 1\n",
    "? k\n: v\n",
    "k: |\n  no final break",
    "k: v\n...\n",
    "plain scalar\n",
    "k: \"\\N\"\n",
    "a: 1\na: 2\n",
    "base: {k: v}\nm:\n  <<: {x: y}\n",
];

/// More shapes a line reader reads, answered or not.
pub const SHAPES: &[&str] = &[
    "list:\n  - a\n  - b\nafter: x # comment\n",
    "\"quoted key\": 1\n'single': \"esc \\t \\\" \\\\ \\x41 \\u00e9 \\/\"\n",
    "k: |-\n  strip\n\n",
    "k: |+\n  keep at the end\n\n",
    "k: |\n\n  leading blank\n",
    "- |\n  in a sequence\n- |2-\n   explicit indentation is left\n",
    "  indented: root\n  second: 2\n",
    "url: http://example.test:8080/x\nhash: a#b\nempty:\nnull: ~\n",
];

/// Holds a line reader to [`BY_LINES`], [`NOT_BY_LINES`] and [`SHAPES`]: `reads` checks one
/// text against serde_saphyr and says whether the line reader answered it.
pub fn assert_shapes(reads: impl Fn(&str) -> bool) {
    for text in SHAPES {
        reads(text);
    }
    for text in BY_LINES {
        assert!(reads(text), "the line reader should answer {text:?}");
    }
    for text in NOT_BY_LINES {
        assert!(!reads(text), "the line reader answered {text:?}");
    }
}

/// `count` manifests edited at random: a character put in or taken out, a line indented.
pub fn edited_manifests(count: usize) -> Vec<String> {
    const MANIFESTS: &[&str] = &[
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {app: web, tier: \"front\"}\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: web\n        image: registry.test/web:1.2\n        args: [--port=8080, '-v']\n        env:\n        - name: A\n          value: \"1\"\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg # comment\ndata:\n  script: |\n    #!/bin/sh\n    echo hi\n\n    exit 0\n  mode: 0644\n  on: yes\n---\nkind: List\nitems:\n- a\n- - b\n  - c\n",
    ];
    const EDITS: &[char] = &[' ', ' ', '\n', ':', '-', '#', '"', '\'', '|', '{', '}', '[', ']', ',', '\\', '&', '!', '?', '>', 'x', '0'];
    let mut next = below(0x5851_f42d_4c95_7f2d_u64);
    (0..count)
        .map(|_| {
            let mut text: Vec<char> = MANIFESTS[next(MANIFESTS.len())].chars().collect();
            for _ in 0..1 + next(3) {
                let at = next(text.len());
                match next(4) {
                    0 => {
                        text.remove(at);
                    }
                    1 => {
                        // Indent the line holding `at` by a space.
                        let start = text[..at].iter().rposition(|&c| c == '\n').map_or(0, |p| p + 1);
                        text.insert(start, ' ');
                    }
                    _ => text.insert(at, EDITS[next(EDITS.len())]),
                }
            }
            text.into_iter().collect()
        })
        .collect()
}

/// `count` streams built at random from the tricky scalars, in block and flow collections,
/// with comments, empty documents and keys of every spelling.
pub fn generated_streams(count: usize) -> Vec<String> {
    let mut next = below(0x9e37_79b9_7f4a_7c15_u64);
    (0..count)
        .map(|_| {
            let mut text = String::new();
            for _ in 0..1 + next(3) {
                if next(3) == 0 {
                    text.push_str("---\n");
                }
                block(&mut text, 0, 0, &mut next);
                if next(4) == 0 {
                    text.push_str("# trailing comment\n");
                }
            }
            text
        })
        .collect()
}

fn scalar(next: &mut impl FnMut(usize) -> usize) -> &'static str {
    match next(10) {
        0 => STYLED[next(STYLED.len())],
        1..=4 => ["name", "app", "a b", "x-1", "value", "CPU", "mode"][next(7)],
        _ => PLAIN[next(PLAIN.len())],
    }
}

/// A block mapping or sequence at `indent`, nesting up to depth 3.
fn block(out: &mut String, indent: usize, depth: usize, next: &mut impl FnMut(usize) -> usize) {
    let pad = " ".repeat(indent);
    let mapping = next(3) != 0;
    for _ in 0..1 + next(4) {
        let lead = if mapping { format!("{pad}{}:", scalar(next)) } else { format!("{pad}-") };
        match next(6) {
            0 if depth < 3 => {
                out.push_str(&lead);
                out.push('\n');
                block(out, indent + 2, depth + 1, next);
            }
            1 => {
                let items: Vec<String> = (0..next(4)).map(|_| format!("k{}: {}", next(3), scalar(next))).collect();
                out.push_str(&format!("{lead} {{{}}}\n", items.join(", ")));
            }
            2 => {
                let items: Vec<&str> = (0..next(4)).map(|_| scalar(next)).collect();
                out.push_str(&format!("{lead} [{}]  # flow\n", items.join(", ")));
            }
            3 => out.push_str(&format!("{lead} {}", BLOCKS[next(BLOCKS.len())].replace("\n ", &format!("\n{pad} ")))),
            _ => out.push_str(&format!("{lead} {}\n", scalar(next))),
        }
    }
}

/// A deterministic source of numbers below the bound asked for (xorshift).
pub fn below(mut state: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}

/// The YAML files of the repository (examples, test data, hack scripts, fuzz seeds), with
/// their paths.
pub fn repository_yaml_files() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.map(|e| e.expect("a readable directory").path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push((path, text));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["examples", "testdata", "publisher/tests", "hack", "fuzz/seeds"] {
        walk(&root.join(dir), &mut files);
    }
    files
}
