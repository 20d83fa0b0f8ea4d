//! Go's rune case mapping (`unicode.ToUpper`, `ToLower`, `ToTitle`, `SimpleFold`), which
//! maps one rune to one rune by Unicode's simple mappings. Rust's `char::to_uppercase`
//! gives the full mappings, so `ß` would become `SS`: where a full mapping has more than
//! one rune Go keeps the rune, except for the few runes listed here whose simple mapping
//! differs from both.

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

pub(super) fn upper(r: char) -> char {
    match u32::from(r) {
        // Greek with ypogegrammeni: the simple uppercase is the titlecase letter.
        code @ (0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7) => char::from_u32(code + 8).unwrap_or(r),
        0x1FB3 => '\u{1FBC}',
        0x1FC3 => '\u{1FCC}',
        0x1FF3 => '\u{1FFC}',
        _ => single(r.to_uppercase()).unwrap_or(r),
    }
}

pub(super) fn lower(r: char) -> char {
    match r {
        '\u{130}' => 'i',
        _ => single(r.to_lowercase()).unwrap_or(r),
    }
}

pub(super) fn title(r: char) -> char {
    match u32::from(r) {
        // The digraphs DŽ, LJ, NJ, DZ have a titlecase form of their own.
        0x1C4..=0x1C6 => '\u{1C5}',
        0x1C7..=0x1C9 => '\u{1C8}',
        0x1CA..=0x1CC => '\u{1CB}',
        0x1F1..=0x1F3 => '\u{1F2}',
        // Georgian Mkhedruli has an uppercase (Mtavruli) but no titlecase.
        0x10D0..=0x10FA | 0x10FD..=0x10FF => r,
        _ => upper(r),
    }
}

/// One representative of `r`'s case-folding orbit, so that `fold(a) == fold(b)` is Go's
/// `EqualFold` for one rune. Dotted capital I and dotless small i fold only to themselves.
pub(super) fn fold(r: char) -> char {
    match r {
        '\u{130}' | '\u{131}' => r,
        _ => lower(upper(r)),
    }
}

/// Go's `isSeparator` in `strings.Title`: what ends a word.
pub(super) fn is_title_separator(r: char) -> bool {
    if r.is_ascii() {
        return !(r.is_ascii_alphanumeric() || r == '_');
    }
    match r.general_category_group() {
        GeneralCategoryGroup::Letter => false,
        _ if is_digit(r) => false,
        _ => r.is_whitespace(),
    }
}

/// Go's `unicode.IsDigit`: a decimal digit (category Nd).
pub(super) fn is_digit(r: char) -> bool {
    r.general_category() == unicode_properties::GeneralCategory::DecimalNumber
}

fn single(mut mapped: impl Iterator<Item = char>) -> Option<char> {
    let first = mapped.next()?;
    mapped.next().is_none().then_some(first)
}
