//! The pieces of one line the line reader takes: whether it is a sequence item, a blank
//! or a comment, a mapping entry, a plain or quoted scalar, a plain scalar inside a flow
//! collection. Each answers only when it is sure, else `None`, and the reader then leaves the
//! whole stream to the general parser. Nothing here looks beyond one line.

/// The longest simple key the general parser accepts (its `simple_key_max_lookahead` is
/// 1,024 characters); longer ones are left to it.
pub(super) const MAX_KEY: usize = 1_000;

/// What a line holds, read as a mapping entry.
pub(super) enum Entry<'a> {
    /// The key, whether it is plain (not quoted), and what follows the `:` and the spaces
    /// after it.
    Pair(String, bool, &'a str),
    /// Not a mapping entry: a scalar, a flow collection...
    Not,
}

/// A sequence item: `-` alone or followed by a space.
pub(super) fn is_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

pub(super) fn is_blank_or_comment(text: &str) -> bool {
    text.is_empty() || text.starts_with('#')
}

/// What may follow a value on its line: nothing, or spaces and a comment.
pub(super) fn end_of_line(after: &str) -> Option<()> {
    let rest = after.trim_start_matches(' ');
    (rest.is_empty() || rest.len() < after.len() && rest.starts_with('#')).then_some(())
}

/// Whether `text` starts a plain scalar this reader takes: not with an indicator, `-` only
/// before something other than a space or a flow indicator (`--flag`, `-1`).
fn plain_start(text: &str) -> bool {
    match text.as_bytes() {
        [] => false,
        [b'-', next, ..] => !b" ,[]{}".contains(next),
        [b'-'] => false,
        [first, ..] => !b"?:,[]{}#&*!|>'\"%@`".contains(first),
    }
}

/// A mapping entry on a line, `Not` when the line holds none, `None` when it is not sure.
pub(super) fn entry(text: &str) -> Option<Entry<'_>> {
    if text.starts_with(['"', '\'']) {
        let (key, after) = quoted(text)?;
        return match after.strip_prefix(':') {
            Some(rest) if rest.is_empty() || rest.starts_with(' ') => {
                (text.len() - after.len() <= MAX_KEY).then(|| Entry::Pair(key, false, rest.trim_start_matches(' ')))
            }
            _ => Some(Entry::Not),
        };
    }
    if !plain_start(text) {
        return Some(Entry::Not);
    }
    let end = match text.find(": ") {
        Some(end) => end,
        None if text.ends_with(':') => text.len() - 1,
        None => return Some(Entry::Not),
    };
    let key = &text[..end];
    if key.contains(" #") || key.ends_with(' ') || key.len() > MAX_KEY {
        return None;
    }
    Some(Entry::Pair(key.to_string(), true, text[end + 1..].trim_start_matches(' ')))
}

/// A plain scalar taking the rest of its line, up to a comment.
pub(super) fn plain(rest: &str) -> Option<&str> {
    if !plain_start(rest) {
        return None;
    }
    let text = rest.find(" #").map_or(rest, |comment| &rest[..comment]).trim_end_matches(' ');
    // `key: a: b` and a value ending in `:` are mappings where none may be.
    (!text.contains(": ") && !text.ends_with(':')).then_some(text)
}

/// A quoted scalar closing on its line: its text, and what follows the closing quote.
pub(super) fn quoted(text: &str) -> Option<(String, &str)> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    if bytes[0] == b'\'' {
        let mut i = 1;
        loop {
            let next = i + text[i..].find('\'')?;
            out.push_str(&text[i..next]);
            if bytes.get(next + 1) == Some(&b'\'') {
                out.push('\'');
                i = next + 2;
            } else {
                return Some((out, &text[next + 1..]));
            }
        }
    }
    let mut i = 1;
    loop {
        let next = i + text[i..].find(['"', '\\'])?;
        out.push_str(&text[i..next]);
        if bytes[next] == b'"' {
            return Some((out, &text[next + 1..]));
        }
        let (c, len) = escape(&text[next + 1..])?;
        out.push(c);
        i = next + 1 + len;
    }
}

/// The character a double-quoted escape stands for, and the escape's length after `\`.
/// The rarer ones (`\N`, `\_`, `\L`, `\P`, a line break) are left to the general parser.
fn escape(text: &str) -> Option<(char, usize)> {
    let hex = |n: usize| {
        let digits = text.get(1..1 + n).filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))?;
        char::from_u32(u32::from_str_radix(digits, 16).ok()?).map(|c| (c, 1 + n))
    };
    let c = match text.as_bytes().first()? {
        b'0' => '\0',
        b'a' => '\x07',
        b'b' => '\x08',
        b't' => '\t',
        b'n' => '\n',
        b'v' => '\x0b',
        b'f' => '\x0c',
        b'r' => '\r',
        b'e' => '\x1b',
        b' ' => ' ',
        b'"' => '"',
        b'/' => '/',
        b'\\' => '\\',
        b'x' => return hex(2),
        b'u' => return hex(4),
        b'U' => return hex(8),
        _ => return None,
    };
    Some((c, 1))
}

/// A plain scalar inside a flow collection: up to a flow indicator or `: `, spaces at its
/// end trimmed. A `:` before an indicator and a comment inside the collection are left to
/// the general parser.
pub(super) fn flow_plain(text: &str) -> Option<(&str, &str)> {
    if !plain_start(text) {
        return None;
    }
    let bytes = text.as_bytes();
    let mut end = 0;
    while let Some(&b) = bytes.get(end) {
        match b {
            b',' | b'[' | b']' | b'{' | b'}' => break,
            b':' => match bytes.get(end + 1) {
                Some(b' ') => break,
                None | Some(b',' | b'[' | b']' | b'{' | b'}') => return None,
                Some(_) => {}
            },
            b'#' if bytes[end - 1] == b' ' => return None,
            _ => {}
        }
        end += 1;
    }
    let scalar = text[..end].trim_end_matches(' ');
    (!scalar.is_empty()).then_some((scalar, &text[end..]))
}
