//! Block-style YAML read a line at a time, for the manifests templates render: mappings
//! and sequences laid out by indentation, scalars that end on their line (plain, quoted,
//! `|` literal blocks), and flow collections that close on their line.
//!
//! A publish parses every template it renders for every cluster. Driving a general parser's scanner and event machinery
//! for them weighs on both; reading the lines of this subset directly is far cheaper.
//! [`read`] answers only for input whose
//! meaning it is sure of and gives up (`None`) at anything else — a character outside
//! printable ASCII, a tab, a carriage return, a directive or `...`, a tag, anchor or alias,
//! a complex key, a duplicate or merge key, a folded or explicitly indented block scalar, a
//! scalar or flow collection continued on the next line, an indentation it did not expect —
//! and leaves the stream to serde_saphyr. The module's tests hold it to serde_saphyr's
//! answer on the texts of `airlock_bundle::testkit::yaml`. What one line's text holds (an entry, a quoted or plain scalar) is
//! read in `scan`.

mod scan;

use serde_json::{Map, Value};

use airlock_bundle::Limits;
use airlock_bundle::yaml::Document;

use super::limits::MAX_FAST_PATH_BYTES;
use super::scalar::{self, checked_key};
use scan::{Entry, MAX_KEY, end_of_line, entry, flow_plain, is_blank_or_comment, is_item, plain, quoted};

/// Nodes in one stream: serde_saphyr's budget allows 250,000; a stream near that is left
/// to it.
const MAX_NODES: usize = 100_000;

/// The stream's non-null documents, or `None` when the general parser must decide.
pub fn read(text: &str) -> Option<Vec<Document>> {
    if text.len() > MAX_FAST_PATH_BYTES || !printable(text) {
        return None;
    }
    // Without a final line break, a block scalar on the last line would end differently.
    let (body, final_break) = match text.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (text, false),
    };
    let mut reader = Reader { lines: Vec::new(), at: 0, final_break: true, nodes: 0 };
    let (mut documents, mut started) = (Vec::new(), 0);
    for (number, line) in (1..).zip(body.split('\n')) {
        if let Some(rest) = line.strip_prefix("---") {
            if !rest.is_empty() && !rest.starts_with(' ') || !is_blank_or_comment(rest.trim_start_matches(' ')) {
                return None;
            }
            started += 1;
            reader.end_document(&mut documents, started, true)?;
            continue;
        }
        if line.starts_with("...") || line.starts_with('%') {
            return None;
        }
        let text = line.trim_start_matches(' ');
        reader.lines.push(Line { indent: line.len() - text.len(), text, raw: line, number });
    }
    // The end of the stream ends its last document as `---` would.
    reader.end_document(&mut documents, started + 1, final_break)?;
    Some(documents)
}

/// Whether every byte is printable ASCII or a line feed. Checked 32 bytes at a time
/// without stopping early, which the compiler turns into vector instructions; a loop that
/// stops at the first bad byte stays one byte at a time.
fn printable(text: &str) -> bool {
    let ok = |b: u8| b == b'\n' || (b' '..=b'~').contains(&b);
    let mut chunks = text.as_bytes().chunks_exact(32);
    chunks.all(|chunk| chunk.iter().fold(true, |all, &b| all & ok(b))) && chunks.remainder().iter().all(|&b| ok(b))
}

/// One line: its indentation, what follows it, the whole line for block scalars, and its
/// 1-based number in the stream. A sequence item's content on the item's line
/// (`- key: value`) is read as a line of its own at its column.
#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    text: &'a str,
    raw: &'a str,
    number: u64,
}

/// The lines of one document, and what the stream has used up so far.
struct Reader<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
    /// Whether the document's last line ends with a line break: a block scalar reaching
    /// the end of a stream without one is left to the general parser.
    final_break: bool,
    /// Nodes read in the stream so far.
    nodes: usize,
}

impl<'a> Reader<'a> {
    /// Reads the lines gathered as document number `started` (its root joins `documents`
    /// unless it is empty) and makes room for the next. `final_break`: whether its last
    /// line ends with a line break.
    fn end_document(&mut self, documents: &mut Vec<Document>, started: usize, final_break: bool) -> Option<()> {
        if started >= Limits::SPEC.yaml_documents {
            return None;
        }
        self.final_break = final_break;
        documents.extend(self.document()?);
        self.lines.clear();
        self.at = 0;
        Some(())
    }

    /// The document's root, or `Some(None)` for an empty document.
    fn document(&mut self) -> Option<Option<Document>> {
        let Some(first) = self.peek() else { return Some(None) };
        let value = self.collection(first.indent, 0)?;
        // Anything after the root is more than one node: not this reader's to judge.
        self.peek().is_none().then_some(Some(Document { line: first.number, value }))
    }

    /// The next line holding something, past blank lines and comments.
    fn peek(&mut self) -> Option<Line<'a>> {
        while let Some(line) = self.lines.get(self.at) {
            if !is_blank_or_comment(line.text) {
                return Some(*line);
            }
            self.at += 1;
        }
        None
    }

    /// Counts a node, and a collection opened at `depth`, against the limits.
    fn count(&mut self, depth: usize) -> Option<()> {
        self.nodes += 1;
        (self.nodes <= MAX_NODES && depth + 1 < Limits::SPEC.yaml_depth).then_some(())
    }

    /// The block mapping or sequence whose first line is the next one, at `indent`.
    fn collection(&mut self, indent: usize, depth: usize) -> Option<Value> {
        self.count(depth)?;
        let line = self.peek()?;
        if is_item(line.text) { self.sequence(indent, depth + 1) } else { self.mapping(indent, depth + 1) }
    }

    fn mapping(&mut self, indent: usize, depth: usize) -> Option<Value> {
        let (mut map, mut integers) = (Map::new(), Vec::new());
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent != indent || is_item(line.text) {
                return None;
            }
            let Entry::Pair(key, plain, rest) = entry(line.text)? else { return None };
            let key = checked_key(&key, plain, &map, &mut integers)?;
            self.at += 1;
            let value = self.value(rest, indent, depth, true)?;
            map.insert(key, value);
        }
        Some(Value::Object(map))
    }

    fn sequence(&mut self, indent: usize, depth: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent < indent || line.indent == indent && !is_item(line.text) {
                break;
            }
            if line.indent != indent {
                return None;
            }
            let rest = &line.text[1..];
            let content = rest.trim_start_matches(' ');
            if is_item(content) || matches!(entry(content)?, Entry::Pair(..)) {
                // `- key: value` and `- - item`: a collection starting at the content's column.
                let column = indent + 1 + rest.len() - content.len();
                self.lines[self.at] = Line { indent: column, text: content, ..line };
                items.push(self.collection(column, depth)?);
            } else {
                self.at += 1;
                items.push(self.value(content, indent, depth, false)?);
            }
        }
        Some(Value::Array(items))
    }

    /// The value after `key:` or `-` on a line of a collection at `indent`: `rest` is what
    /// follows on that line, and the lines below may hold it.
    fn value(&mut self, rest: &'a str, indent: usize, depth: usize, in_mapping: bool) -> Option<Value> {
        if is_blank_or_comment(rest) {
            return match self.peek() {
                Some(next) if next.indent > indent => self.collection(next.indent, depth),
                // A mapping's value may be a sequence at the key's own indentation.
                Some(next) if in_mapping && next.indent == indent && is_item(next.text) => self.collection(indent, depth),
                _ => self.count(depth).map(|()| Value::Null),
            };
        }
        let value = match rest.as_bytes()[0] {
            b'|' => return self.literal(rest, indent, depth),
            b'[' | b'{' => {
                let (value, after) = self.flow(rest, depth)?;
                end_of_line(after)?;
                value
            }
            b'"' | b'\'' => {
                let (text, after) = quoted(rest)?;
                end_of_line(after)?;
                self.scalar(&text, false, depth)?
            }
            _ => self.scalar(plain(rest)?, true, depth)?,
        };
        // A line below indented further would continue the scalar, or be an error.
        match self.peek() {
            Some(next) if next.indent > indent => None,
            _ => Some(value),
        }
    }

    fn scalar(&mut self, text: &str, plain: bool, depth: usize) -> Option<Value> {
        self.count(depth)?;
        scalar::resolve(text, plain)
    }

    /// A `|` block scalar whose header is `header`, under a collection at `indent`.
    fn literal(&mut self, header: &str, indent: usize, depth: usize) -> Option<Value> {
        let (chomp, comment) = match header.as_bytes().get(1) {
            Some(b'-') => (Chomp::Strip, &header[2..]),
            Some(b'+') => (Chomp::Keep, &header[2..]),
            _ => (Chomp::Clip, &header[1..]),
        };
        if !comment.is_empty() && !comment.starts_with(' ') || !is_blank_or_comment(comment.trim_start_matches(' ')) {
            return None;
        }
        let lines = &self.lines[self.at..];
        // Content is indented as its first line holding something, deeper than the collection.
        let width = lines.iter().find(|l| !l.text.is_empty())?.indent;
        if width <= indent {
            return None;
        }
        // `used`: lines up to the last one holding content; `blanks`: empty lines since.
        let (mut text, mut used, mut blanks) = (String::new(), 0, 0);
        for (i, line) in lines.iter().enumerate() {
            if line.text.is_empty() {
                // Spaces beyond the content's indentation would be content: left alone.
                if line.raw.len() > width {
                    return None;
                }
                blanks += 1;
                continue;
            }
            if line.indent < width {
                break;
            }
            if used > 0 {
                text.push('\n');
            }
            text.extend(std::iter::repeat_n('\n', blanks));
            text.push_str(&line.raw[width..]);
            (used, blanks) = (i + 1, 0);
        }
        if used + blanks == lines.len() && !self.final_break {
            return None;
        }
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => text.push('\n'),
            Chomp::Keep => text.extend(std::iter::repeat_n('\n', 1 + blanks)),
        }
        self.at += used + blanks;
        self.scalar(&text, false, depth)
    }

    /// A flow collection or scalar at the start of `text`, and what follows it on the line.
    fn flow<'t>(&mut self, text: &'t str, depth: usize) -> Option<(Value, &'t str)> {
        match text.as_bytes().first()? {
            b'[' => {
                self.count(depth)?;
                self.flow_sequence(&text[1..], depth + 1)
            }
            b'{' => {
                self.count(depth)?;
                self.flow_mapping(&text[1..], depth + 1)
            }
            b'"' | b'\'' => {
                let (s, after) = quoted(text)?;
                Some((self.scalar(&s, false, depth)?, after))
            }
            _ => {
                let (s, after) = flow_plain(text)?;
                Some((self.scalar(s, true, depth)?, after))
            }
        }
    }

    fn flow_sequence<'t>(&mut self, text: &'t str, depth: usize) -> Option<(Value, &'t str)> {
        let mut items = Vec::new();
        let mut rest = text.trim_start_matches(' ');
        if let Some(after) = rest.strip_prefix(']') {
            return Some((Value::Array(items), after));
        }
        loop {
            let (item, after) = self.flow(rest, depth)?;
            items.push(item);
            rest = after.trim_start_matches(' ');
            match rest.as_bytes().first()? {
                b',' => rest = rest[1..].trim_start_matches(' '),
                b']' => return Some((Value::Array(items), &rest[1..])),
                // `[a: b]`, a pair in a sequence, and anything else.
                _ => return None,
            }
        }
    }

    fn flow_mapping<'t>(&mut self, text: &'t str, depth: usize) -> Option<(Value, &'t str)> {
        let (mut map, mut integers) = (Map::new(), Vec::new());
        let mut rest = text.trim_start_matches(' ');
        if let Some(after) = rest.strip_prefix('}') {
            return Some((Value::Object(map), after));
        }
        loop {
            let (key, plain, after) = match rest.as_bytes().first()? {
                b'"' | b'\'' => {
                    let (key, after) = quoted(rest)?;
                    (key, false, after)
                }
                _ => {
                    let (key, after) = flow_plain(rest)?;
                    (key.to_string(), true, after)
                }
            };
            if rest.len() - after.len() > MAX_KEY {
                return None;
            }
            // Only `key: value`; `key:value`, `key` alone and `key:` are left to the parser.
            let after = after.trim_start_matches(' ').strip_prefix(": ")?.trim_start_matches(' ');
            if after.starts_with([',', '}']) {
                return None;
            }
            let key = checked_key(&key, plain, &map, &mut integers)?;
            let (value, after) = self.flow(after, depth)?;
            map.insert(key, value);
            rest = after.trim_start_matches(' ');
            match rest.as_bytes().first()? {
                b',' => rest = rest[1..].trim_start_matches(' '),
                b'}' => return Some((Value::Object(map), &rest[1..])),
                _ => return None,
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Chomp {
    Strip,
    Clip,
    Keep,
}
