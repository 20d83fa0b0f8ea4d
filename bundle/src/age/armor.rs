//! age's ASCII armor: the binary file in standard base64 with padding, 64 columns, between
//! BEGIN and END lines. Writing is canonical, byte for byte what `age -a` writes; reading
//! takes what age reads (CRLF line ends, up to 1 KiB of whitespace around the armor) and
//! nothing looser: lines of exactly 64 columns but the last, strict base64.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::AgeError;

const BEGIN: &[u8] = b"-----BEGIN AGE ENCRYPTED FILE-----";
const END: &[u8] = b"-----END AGE ENCRYPTED FILE-----";
const COLUMNS: usize = 64;
/// Whitespace allowed before and after the armor, as age: room for an editor's blank lines,
/// not for a file of them.
const MAX_WHITESPACE: usize = 1024;

/// Armors a binary age file.
pub(super) fn encode(binary: &[u8]) -> Vec<u8> {
    let text = STANDARD.encode(binary);
    let mut out = Vec::with_capacity(BEGIN.len() + END.len() + text.len() + text.len() / COLUMNS + 3);
    out.extend_from_slice(BEGIN);
    out.push(b'\n');
    for line in text.as_bytes().chunks(COLUMNS) {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.extend_from_slice(END);
    out.push(b'\n');
    out
}

/// Whether `file` is armored: its BEGIN line comes first but for whitespace.
pub(super) fn is_armored(file: &[u8]) -> bool {
    file.trim_ascii_start().starts_with(BEGIN)
}

/// The binary file inside an armored one.
pub(super) fn decode(file: &[u8]) -> Result<Vec<u8>, AgeError> {
    let err = |why: &str| AgeError::Header(format!("armor: {why}"));
    let text = file.trim_ascii_start();
    if file.len() - text.len() > MAX_WHITESPACE {
        return Err(err("more than 1 KiB of whitespace before it"));
    }
    let mut lines = Lines(text);
    if lines.next() != Some(BEGIN) {
        return Err(err("the first line is not the BEGIN line"));
    }
    let mut base64 = Vec::with_capacity(text.len());
    loop {
        let line = lines.next().ok_or_else(|| err("it ends without an END line"))?;
        // After a full line: a file whose base64 fills its last line exactly.
        if line == END && !base64.is_empty() {
            break;
        }
        if line.is_empty() || line.len() > COLUMNS {
            return Err(err("a line is empty or longer than 64 columns"));
        }
        base64.extend_from_slice(line);
        if line.len() < COLUMNS {
            if lines.next() != Some(END) {
                return Err(err("a short line is not followed by the END line"));
            }
            break;
        }
    }
    let rest = lines.0;
    if !rest.iter().all(u8::is_ascii_whitespace) {
        return Err(err("data after the END line"));
    }
    if rest.len() >= MAX_WHITESPACE {
        return Err(err("1 KiB or more of whitespace after it"));
    }
    STANDARD.decode(&base64).map_err(|_| err("not canonical padded base64"))
}

/// Lines without their `\n` or `\r\n`; the last one may lack its end.
struct Lines<'a>(&'a [u8]);

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.0.is_empty() {
            return None;
        }
        let (line, rest) = match self.0.iter().position(|&c| c == b'\n') {
            Some(at) => (&self.0[..at], &self.0[at + 1..]),
            None => (self.0, &self.0[self.0.len()..]),
        };
        self.0 = rest;
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }
}
