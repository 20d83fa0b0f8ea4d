//! Whether a chart's render can differ between two runs with equal inputs, read from its
//! templates instead of found by rendering it again.
//!
//! A Go template is a function of its inputs except where it calls a function that reads
//! randomness or the clock ([`VARYING`]). Such a call can only sit inside a template action
//! (`{{ … }}`, `{{- … -}}`), so only actions are read: the word "now" in a README or a
//! dashboard's `"to": "now"` is text that helm prints as it is. Inside an action, string
//! literals are read as templates themselves (they may reach `tpl`), comments are skipped,
//! and a name counts only as a whole identifier that is not a field (`.Values.now`) or a
//! variable (`$now`).
//!
//! [`in_archive`] reads every file of a chart archive through size caps, subcharts vendored
//! as archives (`charts/*.tgz`) included: a template of the chart, a partial, a file read
//! with `.Files.Get` or a string of `values.yaml` can all end up rendered. [`in_values`]
//! reads the values a request passes, which reach `tpl` in many charts.
//!
//! Not counted: map order through sprig's `keys` and `values` (charts sort it, or only count
//! the keys), `getHostByName` (helm answers it with nothing unless `--enable-dns`, which a
//! render never passes), and templates built by concatenating strings.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::{self, Read};

use flate2::read::GzDecoder;

use super::archive::MAX_INFLATED_BYTES;

/// Sprig's and helm's template functions whose result can differ between two calls with
/// equal arguments (sprig's `functions.go` and `date.go`).
const VARYING: &[&str] = &[
    // Random bytes, strings, numbers and orders.
    "randAlphaNum",
    "randAlpha",
    "randNumeric",
    "randAscii",
    "randBytes",
    "randInt",
    "shuffle",
    "uuidv4",
    // Fresh keys, and certificates with random serial numbers valid from now.
    "genPrivateKey",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    // A random salt or IV.
    "htpasswd",
    "bcrypt",
    "encryptAES",
    // The clock: `now`, and the date functions that read it when their argument is not a
    // time (`date "2006" .Values.s` formats the present) or measure time since one.
    "now",
    "date",
    "dateInZone",
    "date_in_zone",
    "htmlDate",
    "htmlDateInZone",
    "ago",
    "durationRound",
];

/// One file of a chart: templates, values, vendored CRDs; the largest are a few megabytes.
const MAX_FILE_BYTES: u64 = 32 << 20;
/// Subcharts vendored inside subcharts; helm charts nest two or three deep.
const MAX_NESTING: usize = 8;
/// Templates in string literals in templates, as `tpl` renders them; each level needs its
/// own quoting, so real charts stop at two.
const MAX_LITERAL_DEPTH: usize = 8;

/// The [`VARYING`] functions the archive's template actions name, or why it could not be
/// read through. Every inflated byte, nested archives' included, counts against one budget.
pub(super) fn in_archive(archive: impl Read) -> Result<BTreeSet<&'static str>, String> {
    let budget = Cell::new(MAX_INFLATED_BYTES);
    let mut found = BTreeSet::new();
    scan_archive(archive, &budget, 0, &mut found)?;
    Ok(found)
}

/// The [`VARYING`] functions named in template actions inside the values' strings (keys
/// included: `toYaml` can hand them to `tpl` as well).
pub(super) fn in_values(values: &serde_json::Value) -> BTreeSet<&'static str> {
    let mut found = BTreeSet::new();
    let mut stack = vec![values];
    while let Some(value) = stack.pop() {
        match value {
            serde_json::Value::String(s) => in_text(s.as_bytes(), 0, &mut found),
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(map) => {
                for (key, item) in map {
                    in_text(key.as_bytes(), 0, &mut found);
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
    found
}

fn scan_archive(archive: impl Read, budget: &Cell<u64>, nesting: usize, found: &mut BTreeSet<&'static str>) -> Result<(), String> {
    let mut tar = tar::Archive::new(Budgeted { inner: GzDecoder::new(archive), budget });
    for entry in tar.entries().map_err(|e| format!("not a tar.gz: {e}"))? {
        let entry = entry.map_err(|e| format!("not a tar.gz: {e}"))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(|e| e.to_string())?.to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        entry.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("{path}: {e}"))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(format!("{path} is larger than {MAX_FILE_BYTES} bytes"));
        }
        if bytes.starts_with(&[0x1f, 0x8b]) {
            if nesting == MAX_NESTING {
                return Err(format!("{path}: archives nested more than {MAX_NESTING} deep"));
            }
            scan_archive(&bytes[..], budget, nesting + 1, found).map_err(|e| format!("{path}: {e}"))?;
        } else {
            in_text(&bytes, 0, found);
        }
    }
    Ok(())
}

/// A reader that fails once the shared budget of inflated bytes is spent.
struct Budgeted<'a, R> {
    inner: R,
    budget: &'a Cell<u64>,
}

impl<R: Read> Read for Budgeted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let left = self
            .budget
            .get()
            .checked_sub(n as u64)
            .ok_or_else(|| io::Error::other(format!("inflates to more than {MAX_INFLATED_BYTES} bytes: not a chart")))?;
        self.budget.set(left);
        Ok(n)
    }
}

/// The [`VARYING`] names in `text`'s actions; text outside `{{ }}` is printed as it is.
fn in_text(text: &[u8], depth: usize, found: &mut BTreeSet<&'static str>) {
    let mut at = 0;
    while let Some(open) = find(text, at, b"{{") {
        at = in_action(text, open + 2, depth, found);
    }
}

/// Reads the action whose `{{` ends at `at`; where reading resumes (after its `}}`).
fn in_action(text: &[u8], mut at: usize, depth: usize, found: &mut BTreeSet<&'static str>) -> usize {
    let mut start = at;
    if text.get(start) == Some(&b'-') && text.get(start + 1).is_some_and(u8::is_ascii_whitespace) {
        start += 1;
    }
    while text.get(start).is_some_and(u8::is_ascii_whitespace) {
        start += 1;
    }
    if text[start.min(text.len())..].starts_with(b"/*") {
        match find(text, start + 2, b"*/") {
            Some(end) => at = end + 2,
            None => return text.len(),
        }
    }
    while let Some(&byte) = text.get(at) {
        match byte {
            b'}' if text.get(at + 1) == Some(&b'}') => return at + 2,
            b'"' | b'\'' | b'`' => {
                let end = literal_end(text, at + 1, byte);
                if depth < MAX_LITERAL_DEPTH {
                    in_text(&text[at + 1..end], depth + 1, found);
                }
                at = end + 1;
            }
            b if is_word(b) => {
                let end = text[at..].iter().position(|&b| !is_word(b)).map_or(text.len(), |n| at + n);
                let field_or_variable = at > 0 && matches!(text[at - 1], b'.' | b'$');
                if !field_or_variable && !byte.is_ascii_digit() {
                    let word = &text[at..end];
                    if let Some(name) = VARYING.iter().find(|name| name.as_bytes() == word) {
                        found.insert(name);
                    }
                }
                at = end;
            }
            _ => at += 1,
        }
    }
    text.len()
}

/// The index of the quote closing a literal that opened just before `at` (raw strings have
/// no escapes), or the end of the text.
fn literal_end(text: &[u8], mut at: usize, quote: u8) -> usize {
    while let Some(&byte) = text.get(at) {
        match byte {
            b'\\' if quote != b'`' => at += 2,
            b if b == quote => return at,
            _ => at += 1,
        }
    }
    text.len()
}

/// A byte of an identifier or number; any non-ASCII byte too, so a name is never matched
/// inside a longer Unicode identifier.
fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || !byte.is_ascii()
}

fn find(text: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    text.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|n| from + n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_archive::tar_gz as archive;
    use serde_json::json;

    fn names(text: &str) -> Vec<&'static str> {
        let mut found = BTreeSet::new();
        in_text(text.as_bytes(), 0, &mut found);
        found.into_iter().collect()
    }

    #[test]
    fn finds_random_and_clock_functions_inside_actions() {
        assert_eq!(names("password: {{ randAlphaNum 10 | b64enc | quote }}\n"), ["randAlphaNum"]);
        assert_eq!(names("at: {{- now | date \"2006-01-02\" -}}\n"), ["date", "now"]);
        assert_eq!(names("{{- $ca := genCA \"ca\" 365 -}}\n{{ $ca.Cert }}"), ["genCA"]);
        assert_eq!(names("{{\n  uuidv4\n}}"), ["uuidv4"]);
        assert_eq!(names("{{(randInt 1 9)}}"), ["randInt"]);
    }

    #[test]
    fn ignores_text_outside_actions() {
        assert_eq!(names("The chart now renders a date; run randAlphaNum yourself.\n\"to\": \"now\"\n"), [] as [&str; 0]);
        assert_eq!(names("{{ .Values.a }} is known now {{ .Values.b }}"), [] as [&str; 0]);
    }

    #[test]
    fn matches_whole_function_names_only() {
        assert_eq!(names("{{ known | nowhere | snow | dates | randAlphaNumeric }}"), [] as [&str; 0]);
        assert_eq!(names("{{ .Values.now }} {{ $now := 1 }} {{ $.date }} {{ (include \"x\" .).now }}"), [] as [&str; 0]);
        assert_eq!(names("{{ 10now }}"), [] as [&str; 0]);
    }

    #[test]
    fn skips_comments_and_reads_literals_as_templates() {
        assert_eq!(names("{{/* now, randAlpha */}}{{- /* genCA */ -}}"), [] as [&str; 0]);
        assert_eq!(names("{{ \"now\" }} {{ `date` }} {{ printf \"}} now {{\" }}"), [] as [&str; 0]);
        assert_eq!(names("{{ tpl \"{{ randAscii 4 }}\" . }}"), ["randAscii"]);
        assert_eq!(names("{{ tpl `{{ \"x\" | bcrypt }}` . }}"), ["bcrypt"]);
    }

    #[test]
    fn an_unclosed_action_is_read_to_the_end() {
        assert_eq!(names("a: {{ htpasswd \"u\" \"p\""), ["htpasswd"]);
        assert_eq!(names("a: {{ \"unclosed"), [] as [&str; 0]);
        assert_eq!(names("a: {{/* unclosed"), [] as [&str; 0]);
    }

    #[test]
    fn reads_every_file_of_a_chart_and_its_vendored_subcharts() {
        let fixed = archive(&[
            ("web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n"),
            ("web/README.md", "Upgrading is now simpler. {{ .Values.known }}\n"),
            ("web/templates/cm.yaml", "data:\n  a: {{ .Values.a | quote }}\n  b: \"now\"\n"),
        ]);
        assert_eq!(in_archive(&fixed[..]), Ok(BTreeSet::new()));

        let random = archive(&[
            ("web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n"),
            ("web/templates/_helpers.tpl", "{{- define \"pw\" -}}{{ randAlphaNum 10 }}{{- end -}}\n"),
            ("web/templates/job.yaml", "startedAt: {{- now | date \"2006\" -}}\n"),
        ]);
        assert_eq!(in_archive(&random[..]), Ok(BTreeSet::from(["date", "now", "randAlphaNum"])));

        let sub = archive(&[("sub/templates/s.yaml", "k: {{ genPrivateKey \"rsa\" }}\n")]);
        let mut outer = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        let mut header = tar::Header::new_gnu();
        header.set_size(sub.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        outer.append_data(&mut header, "web/charts/sub-0.1.0.tgz", &sub[..]).expect("append");
        let outer = outer.into_inner().expect("tar").finish().expect("gzip");
        assert_eq!(in_archive(&outer[..]), Ok(BTreeSet::from(["genPrivateKey"])));
    }

    #[test]
    fn an_archive_that_cannot_be_read_is_an_error() {
        assert!(in_archive(&b"not gzip"[..]).is_err());
        let huge = archive(&[("web/values.yaml", &"a".repeat(MAX_FILE_BYTES as usize + 1))]);
        assert!(in_archive(&huge[..]).unwrap_err().contains("web/values.yaml is larger than"));
    }

    #[test]
    fn finds_templates_in_values_strings() {
        let values = json!({"a": "plain now", "b": [{"c": "{{ randAlpha 5 }}"}], "{{ now }}": 1});
        assert_eq!(in_values(&values), BTreeSet::from(["now", "randAlpha"]));
        assert_eq!(in_values(&json!({"group": "g1", "n": 3, "known": "{{ .Values.known }}"})), BTreeSet::new());
    }
}
