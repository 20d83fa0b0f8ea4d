//! Checks that `{{if}}`, `{{range}}`, `{{with}}`, `{{define}}` and `{{block}}` each close
//! with one `{{end}}`, and that `{{else}}` sits inside one of the first three; and finds
//! where an unclosed action starts.
//!
//! gotmpl 0.6 stops parsing at a stray top-level `{{end}}` or `{{else}}` and ends blocks
//! left open at the end of the text, so a typo would silently drop the rest of a manifest;
//! Go's parser rejects both. For an action missing its `}}`, gotmpl (like Go) reports the
//! end of the text, not the `{{` an operator has to fix. Both checks run after gotmpl has
//! tokenized the text, so they only find actions and read their first word.

/// A block-structure mistake at byte `offset` of the template.
#[derive(Debug, PartialEq)]
pub(super) struct BlockError {
    pub offset: usize,
    pub message: String,
}

struct Open<'a> {
    keyword: &'a str,
    offset: usize,
    has_else: bool,
}

/// One `{{ ... }}` in the text, by byte offsets.
struct Action {
    /// The `{{`.
    start: usize,
    /// The first word, after any trim marker and spaces.
    word_at: usize,
    /// Just past the closing `}}`, if there is one.
    end: Option<usize>,
}

fn actions(text: &str) -> impl Iterator<Item = Action> + '_ {
    let mut cursor = 0;
    std::iter::from_fn(move || {
        let start = cursor + text.get(cursor..)?.find("{{")?;
        let body = start + 2 + trim_marker_len(&text[start + 2..]);
        let word_at = body + leading_space(&text[body..]);
        let end = action_end(text, word_at);
        cursor = end.unwrap_or(text.len());
        Some(Action { start, word_at, end })
    })
}

/// Where the first action without a closing `}}` starts.
pub(super) fn unclosed_action(text: &str) -> Option<usize> {
    actions(text).find(|action| action.end.is_none()).map(|action| action.start)
}

pub(super) fn check(text: &str) -> Result<(), BlockError> {
    let mut open: Vec<Open<'_>> = Vec::new();
    for Action { word_at, .. } in actions(text) {
        if text[word_at..].starts_with("/*") {
            continue;
        }
        let keyword = word(&text[word_at..]);
        match keyword {
            "if" | "range" | "with" | "define" | "block" => {
                open.push(Open { keyword, offset: word_at, has_else: false });
            }
            "end" => {
                open.pop().ok_or_else(|| unexpected("{{end}}", word_at))?;
            }
            "else" => {
                let after = word_at + keyword.len();
                let chained = matches!(word(&text[after + leading_space(&text[after..])..]), "if" | "with");
                match open.last_mut() {
                    Some(block) if matches!(block.keyword, "if" | "range" | "with") && !block.has_else => {
                        // `{{else if}}` continues the chain its `{{end}}` closes.
                        block.has_else = !chained;
                    }
                    _ => return Err(unexpected("{{else}}", word_at)),
                }
            }
            _ => {}
        }
    }
    match open.pop() {
        Some(block) => {
            Err(BlockError { offset: block.offset, message: format!("{{{{{}}}}} is never closed with {{{{end}}}}", block.keyword) })
        }
        None => Ok(()),
    }
}

fn unexpected(what: &str, offset: usize) -> BlockError {
    BlockError { offset, message: format!("unexpected {what}") }
}

/// `{{- ` trims the text before an action; the space after the dash is required.
fn trim_marker_len(after_delim: &str) -> usize {
    let bytes = after_delim.as_bytes();
    if bytes.first() == Some(&b'-') && bytes.get(1).is_some_and(u8::is_ascii_whitespace) { 1 } else { 0 }
}

fn leading_space(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

fn word(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The byte just past the `}}` closing the action whose content starts at `from`,
/// skipping quoted strings, raw strings, character literals and comments, which may
/// contain `}}`.
fn action_end(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if text[from..].starts_with("/*") {
        let close = from + text[from..].find("*/")?;
        return text[close..].find("}}").map(|delim| close + delim + 2);
    }
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'}' if bytes.get(i + 1) == Some(&b'}') => return Some(i + 2),
            quote @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'`' => i += text[i + 1..].find('`').map_or(bytes.len(), |close| close + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_at(text: &str) -> (usize, String) {
        let err = check(text).expect_err("the guard should reject this template");
        (err.offset, err.message)
    }

    #[test]
    fn accepts_nested_blocks_chains_and_braces_in_strings() {
        let text = r#"{{- if .a -}}{{ range .b }}{{ "}}{{end}}" }}{{ `{{end}}` }}{{ '}' }}{{ end }}
{{- else if .c }}x{{ else with .d }}y{{ else }}z{{ end }}
{{/* {{end}} in a comment */}}{{- /* trimmed {{else}} */ -}}
{{ define "n" }}{{ with . }}{{ end }}{{ end }}{{ block "m" . }}{{ end }}"#;
        assert_eq!(check(text), Ok(()));
    }

    #[test]
    fn rejects_stray_end_at_its_offset() {
        assert_eq!(error_at("ab\n{{ end }}"), (6, "unexpected {{end}}".to_string()));
        assert_eq!(error_at("{{if 1}}{{end}}{{- end -}}").1, "unexpected {{end}}");
    }

    #[test]
    fn rejects_stray_else() {
        assert_eq!(error_at("x{{else}}y"), (3, "unexpected {{else}}".to_string()));
        assert_eq!(error_at(r#"{{define "a"}}{{else}}{{end}}"#).1, "unexpected {{else}}");
        assert_eq!(error_at("{{if 1}}{{else}}{{else if 2}}{{end}}").1, "unexpected {{else}}");
    }

    #[test]
    fn finds_the_start_of_an_unclosed_action() {
        assert_eq!(unclosed_action("a {{ .x }}\nb {{ \"}}\" .y\nc"), Some(13));
        assert_eq!(unclosed_action("{{/* open comment }}"), Some(0));
        assert_eq!(unclosed_action("{{ .x }} {{/* c */}} {{ `}}` }}"), None);
    }

    #[test]
    fn rejects_unclosed_block_at_its_opening() {
        assert_eq!(error_at("a\n{{ range .x }}{{ if .y }}{{ end }}"), (5, "{{range}} is never closed with {{end}}".to_string()));
        assert_eq!(error_at(r#"{{define "d"}}text"#).1, "{{define}} is never closed with {{end}}");
    }
}
