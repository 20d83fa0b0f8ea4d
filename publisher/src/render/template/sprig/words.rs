//! Sprig's functions that work on words: abbreviating (`abbrev`, `abbrevboth`), wrapping
//! (`wrap`, `wrapWith`), initials, case conversions (`snakecase`, `camelcase`,
//! `kebabcase`, `swapcase`, `untitle`) and `nospace`, after the Go libraries Sprig calls
//! (Masterminds/goutils, huandu/xstrings). Widths count bytes, as those libraries do.

use super::args::{Call, Func, count_at, int_at, str_arg, string_at, table, text};
use crate::render::template::bounds;

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["abbrev"], |a| {
            let (width, s) = (int_at("abbrev", a, 0)?, str_arg("abbrev", a, 2, 1)?);
            Ok(text(if width < 4 { s.to_string() } else { abbreviate(s, 0, width as usize) }))
        }),
        (&["abbrevboth"], |a| {
            let (left, right, s) = (int_at("abbrevboth", a, 0)?, int_at("abbrevboth", a, 1)?, str_arg("abbrevboth", a, 3, 2)?);
            let untouched = right < 4 || (left > 0 && right < 7);
            Ok(text(if untouched { s.to_string() } else { abbreviate(s, left.max(0) as usize, right as usize) }))
        }),
        (&["initials"], |a| Ok(text(initials(str_arg("initials", a, 1, 0)?)))),
        (&["wrap"], |a| wrap("wrap", count_at("wrap", a, 0)?, "\n", false, str_arg("wrap", a, 2, 1)?)),
        (&["wrapWith"], |a| {
            let (width, separator) = (count_at("wrapWith", a, 0)?, string_at("wrapWith", a, 1)?);
            wrap("wrapWith", width, separator, true, str_arg("wrapWith", a, 3, 2)?)
        }),
        (&["snakecase"], |a| Ok(text(joined_words(str_arg("snakecase", a, 1, 0)?, '_')))),
        (&["kebabcase"], |a| Ok(text(joined_words(str_arg("kebabcase", a, 1, 0)?, '-')))),
        (&["camelcase"], |a| Ok(text(camel_case(str_arg("camelcase", a, 1, 0)?)))),
        (&["swapcase"], |a| Ok(text(swap_case(str_arg("swapcase", a, 1, 0)?)))),
        (&["untitle"], |a| Ok(text(untitle(str_arg("untitle", a, 1, 0)?)))),
        (&["nospace"], |a| Ok(text(str_arg("nospace", a, 1, 0)?.chars().filter(|c| !c.is_whitespace()).collect::<String>()))),
    ])
}

/// goutils' `AbbreviateFull`: at most `width` bytes, "..." marking what was cut, the
/// kept window starting near `offset`.
fn abbreviate(s: &str, offset: usize, width: usize) -> String {
    const MARKER: &str = "...";
    if s.len() <= width {
        return s.to_string();
    }
    let keep = width - MARKER.len();
    let offset = offset.min(s.len()).min(s.len() - keep);
    if offset <= 4 {
        return format!("{}{MARKER}", prefix(s, keep));
    }
    if width < 7 {
        return s.to_string();
    }
    if offset + keep < s.len() {
        return format!("{MARKER}{}", abbreviate(suffix_from(s, offset), 0, keep));
    }
    format!("{MARKER}{}", suffix_from(s, s.len() - keep))
}

/// The first `n` bytes of `s`, shortened to a character boundary.
fn prefix(s: &str, n: usize) -> &str {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` from byte `n`, moved forward to a character boundary.
fn suffix_from(s: &str, n: usize) -> &str {
    let mut start = n.min(s.len());
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// goutils' `Initials`: the first character of each space-separated word.
fn initials(s: &str) -> String {
    let mut after_gap = true;
    let mut out = String::new();
    for c in s.chars() {
        if c.is_whitespace() {
            after_gap = true;
        } else if after_gap {
            out.push(c);
            after_gap = false;
        }
    }
    out
}

/// goutils' `WrapCustom`: lines of at most `width` bytes broken at spaces; a word longer
/// than a line is cut (`wrapWith`) or left whole (`wrap`).
fn wrap(name: &str, width: usize, separator: &str, cut_long_words: bool, s: &str) -> Call {
    let width = width.max(1);
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut offset = 0;
    while s.len() - offset > width {
        // Each line adds a separator, which may be long: stop as soon as the result is.
        bounds::check(name, out.len())?;
        if bytes[offset] == b' ' {
            offset += 1;
            continue;
        }
        let window = &bytes[offset..(offset + width + 1).min(s.len())];
        if let Some(space) = window.iter().rposition(|b| *b == b' ') {
            out.push_str(&s[offset..offset + space]);
            out.push_str(separator);
            offset += space + 1;
        } else if cut_long_words {
            let piece = prefix(&s[offset..], width);
            // A character wider than the line still moves on.
            let piece = if piece.is_empty() { &s[offset..offset + s[offset..].chars().next().map_or(1, char::len_utf8)] } else { piece };
            out.push_str(piece);
            out.push_str(separator);
            offset += piece.len();
        } else {
            match bytes[offset + width..].iter().position(|b| *b == b' ') {
                Some(space) => {
                    out.push_str(&s[offset..offset + width + space]);
                    out.push_str(separator);
                    offset += width + space + 1;
                }
                None => {
                    out.push_str(&s[offset..]);
                    offset = s.len();
                }
            }
        }
    }
    out.push_str(&s[offset..]);
    Ok(text(out))
}

#[derive(Clone, Copy, PartialEq)]
enum Class {
    Upper,
    Lower,
    Digit,
    Separator,
}

fn class(c: char) -> Class {
    if c.is_uppercase() {
        Class::Upper
    } else if c.is_ascii_digit() {
        Class::Digit
    } else if c.is_alphanumeric() {
        Class::Lower
    } else {
        Class::Separator
    }
}

/// The words of `s` as xstrings' `ToSnakeCase` finds them: case changes start words
/// (`HTTPServer` is `HTTP` `Server`), a number joins the word before it when a
/// capitalised word follows (`Bld4Floor`) and starts a word of its own with the lower
/// case letters after it otherwise (`http2xx` is `http` `2xx`); anything else separates.
fn words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut words: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = i;
        match class(chars[i]) {
            Class::Separator => {
                i += 1;
                continue;
            }
            Class::Upper => {
                while i < chars.len() && class(chars[i]) == Class::Upper {
                    i += 1;
                }
                // The last capital of a run starts the next word when lower case follows.
                if i - start > 1 && i < chars.len() && class(chars[i]) == Class::Lower {
                    i -= 1;
                } else {
                    while i < chars.len() && class(chars[i]) == Class::Lower {
                        i += 1;
                    }
                }
            }
            Class::Lower => {
                while i < chars.len() && class(chars[i]) == Class::Lower {
                    i += 1;
                }
            }
            Class::Digit => {
                while i < chars.len() && class(chars[i]) == Class::Digit {
                    i += 1;
                }
                let attaches = !words.is_empty()
                    && start > 0
                    && class(chars[start - 1]) != Class::Separator
                    && (i == chars.len() || class(chars[i]) != Class::Lower);
                if attaches {
                    let number: String = chars[start..i].iter().collect();
                    if let Some(last) = words.last_mut() {
                        last.push_str(&number);
                    }
                    continue;
                }
                while i < chars.len() && matches!(class(chars[i]), Class::Lower | Class::Digit) {
                    i += 1;
                }
            }
        }
        words.push(chars[start..i].iter().collect());
    }
    words
}

/// `snakecase` and `kebabcase`: the words in lower case, joined by `connector`.
fn joined_words(s: &str, connector: char) -> String {
    let lower: Vec<String> = words(s).iter().map(|w| w.to_lowercase()).collect();
    lower.join(&connector.to_string())
}

fn is_connector(c: char) -> bool {
    c == '_' || c == '-' || c.is_whitespace()
}

/// xstrings' `ToCamelCase`: connectors (`_`, `-`, spaces) dropped and the letter after
/// each upper-cased, the rest lower-cased; connectors before the first letter stay, and
/// of a run of them inside, one.
fn camel_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next_if(|c| is_connector(*c)) {
        out.push(c);
    }
    let mut upper_next = true;
    let mut previous_connector = false;
    while let Some(c) = chars.next() {
        if is_connector(c) {
            if previous_connector || chars.peek().is_none() {
                out.push(c);
            }
            previous_connector = true;
            upper_next = true;
            continue;
        }
        previous_connector = false;
        if upper_next {
            out.extend(c.to_uppercase());
            upper_next = false;
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// goutils' `SwapCase`.
fn swap_case(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let swapped: Vec<char> = if c.is_uppercase() { c.to_lowercase().collect() } else { c.to_uppercase().collect() };
            swapped
        })
        .collect()
}

/// goutils' `Uncapitalize`: the first letter of each space-separated word lower-cased.
fn untitle(s: &str) -> String {
    let mut after_gap = true;
    s.chars()
        .flat_map(|c| {
            let out: Vec<char> = if c.is_whitespace() {
                after_gap = true;
                vec![c]
            } else if after_gap {
                after_gap = false;
                c.to_lowercase().collect()
            } else {
                vec![c]
            };
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_and_camel_case_follow_xstrings_examples() {
        for (input, snake) in [
            ("FirstName", "first_name"),
            ("HTTPServer", "http_server"),
            ("NoHTTPS", "no_https"),
            ("GO_PATH", "go_path"),
            ("GO PATH", "go_path"),
            ("GO-PATH", "go_path"),
            ("http2xx", "http_2xx"),
            ("HTTP20xOK", "http_20x_ok"),
            ("Duration2m3s", "duration_2m3s"),
            ("Bld4Floor3rd", "bld4_floor_3rd"),
        ] {
            assert_eq!(joined_words(input, '_'), snake, "{input}");
        }
        for (input, camel) in [
            ("some_words", "SomeWords"),
            ("http_server", "HttpServer"),
            ("no_https", "NoHttps"),
            ("_complex__case_", "_Complex_Case_"),
            ("some words", "SomeWords"),
            ("GOLANG_IS_GREAT", "GolangIsGreat"),
        ] {
            assert_eq!(camel_case(input), camel, "{input}");
        }
    }

    #[test]
    fn abbreviates_like_goutils() {
        assert_eq!(abbreviate("hello world", 0, 5), "he...");
        assert_eq!(abbreviate("1234 5678 9123", 5, 10), "...5678...");
        assert_eq!(abbreviate("abcdefghijklmno", 10, 10), "...ijklmno");
        assert_eq!(abbreviate("short", 0, 10), "short");
    }
}
