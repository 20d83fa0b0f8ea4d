//! The words a report's results carry, bounded: a script's message or an error is cut to
//! [`MAX_MESSAGE_BYTES`], whichever result it belongs to.

/// A result's message or error, at most: a script's words, not a payload.
pub const MAX_MESSAGE_BYTES: usize = 1_024;

/// `text` cut to [`MAX_MESSAGE_BYTES`] at a character boundary.
pub(super) fn cut(mut text: String) -> String {
    if text.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}
