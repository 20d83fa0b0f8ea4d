//! A YAML stream cut into its documents' texts, at `---` lines, without parsing: for tools
//! whose output is handled a document at a time before it is read (helm's `# Source:`
//! comments, kustomize output templated object by object).

/// The non-blank texts between `---` separator lines (a separator may carry a comment).
pub fn split_documents(text: &str) -> Vec<&str> {
    let (mut chunks, mut start, mut at) = (Vec::new(), 0, 0);
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare.starts_with("--- #") {
            chunks.push(&text[start..at]);
            start = at + line.len();
        }
        at += line.len();
    }
    chunks.push(&text[start..]);
    chunks.retain(|c| !c.trim().is_empty());
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_separator_lines_only() {
        let text = "a: 1\n---\n# Source: x\nb: '---'\n--- # two\n\n---\nc: |\n  ---x\n";
        assert_eq!(split_documents(text), ["a: 1\n", "# Source: x\nb: '---'\n", "c: |\n  ---x\n"]);
    }
}
