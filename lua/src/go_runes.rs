//! Go's reading of a byte string as UTF-8, which the helper modules copy because Lua
//! strings are bytes: an invalid byte is one rune, U+FFFD, one byte wide
//! (`utf8.DecodeRune`), and a rune that is not a Unicode scalar value is written as
//! U+FFFD (`utf8.EncodeRune`). Go's runes are `int32`; so are ours.

pub(super) const REPLACEMENT: char = '\u{FFFD}';

/// The rune at the start of non-empty `s` and its width in bytes.
pub(super) fn decode(s: &[u8]) -> (char, usize) {
    let width = match s[0] {
        0x00..=0x7F => return (char::from(s[0]), 1),
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return (REPLACEMENT, 1),
    };
    match s.get(..width).and_then(|bytes| std::str::from_utf8(bytes).ok()).and_then(|text| text.chars().next()) {
        Some(rune) => (rune, width),
        None => (REPLACEMENT, 1),
    }
}

/// The rune at the end of non-empty `s` and its width, as `utf8.DecodeLastRune` finds it.
pub(super) fn decode_last(s: &[u8]) -> (char, usize) {
    let end = s.len();
    if s[end - 1] < 0x80 {
        return (char::from(s[end - 1]), 1);
    }
    let limit = end.saturating_sub(4);
    let mut start = end - 1;
    while start > limit && !is_rune_start(s[start]) {
        start -= 1;
    }
    let (rune, width) = decode(&s[start..]);
    if start + width == end { (rune, width) } else { (REPLACEMENT, 1) }
}

fn is_rune_start(byte: u8) -> bool {
    byte & 0xC0 != 0x80
}

/// Each rune of `s` with the byte offset where it starts, as Go's `for i, r := range s`.
pub(super) fn runes(s: &[u8]) -> impl Iterator<Item = (usize, char, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= s.len() {
            return None;
        }
        let (rune, width) = decode(&s[at..]);
        let item = (at, rune, width);
        at += width;
        Some(item)
    })
}

/// `r` as a `char`, if it is a Unicode scalar value (`utf8.ValidRune`).
pub(super) fn scalar(r: i32) -> Option<char> {
    u32::try_from(r).ok().and_then(char::from_u32)
}

/// Appends the UTF-8 encoding of `r`, U+FFFD for an invalid rune.
pub(super) fn push_rune(out: &mut Vec<u8>, r: i32) {
    let rune = scalar(r).unwrap_or(REPLACEMENT);
    out.extend_from_slice(rune.encode_utf8(&mut [0; 4]).as_bytes());
}

/// `s` as text, each invalid byte replaced by U+FFFD: what Go's `encoding/json` writes
/// for a string that is not UTF-8.
pub(super) fn lossy(s: &[u8]) -> String {
    let mut text = String::with_capacity(s.len());
    for chunk in s.utf8_chunks() {
        text.push_str(chunk.valid());
        for _ in chunk.invalid() {
            text.push(REPLACEMENT);
        }
    }
    text
}

/// Number of runes in `s` (`utf8.RuneCount`).
pub(super) fn count(s: &[u8]) -> usize {
    runes(s).count()
}
