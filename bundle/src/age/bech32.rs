//! Bech32 (BIP 173, not bech32m), the text form of age keys: `age1...` recipients and
//! `AGE-SECRET-KEY-1...` identities, through the `bech32` crate. Which prefix a key needs is
//! the caller's business. What stays here is the mapping of the crate's errors to messages
//! that name positions, never characters, since the string may be a secret key.

use bech32::primitives::decode::{CharError, CheckedHrpstring, CheckedHrpstringError, ChecksumError, UncheckedHrpstringError};
use bech32::{Bech32, Hrp};

/// Far above any age key, low enough that a pasted file is refused before it is scanned.
const MAX_LEN: usize = 1024;

/// Why a string is not bech32.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Bech32Error {
    #[error("it is longer than {MAX_LEN} characters")]
    TooLong,
    #[error("it mixes upper and lower case")]
    MixedCase,
    #[error("it has no '1' with a prefix before it and a checksum after it")]
    Separator,
    #[error("character {0} is not allowed there")]
    Character(usize),
    #[error("its checksum does not match: it was mistyped or cut")]
    Checksum,
    #[error("its data is not a whole number of bytes")]
    Padding,
}

/// Encodes `data` under the lower-case prefix `hrp`, in lower case.
pub(super) fn encode(hrp: &str, data: &[u8]) -> String {
    let hrp = Hrp::parse(hrp).expect("age's prefixes are valid bech32 prefixes");
    bech32::encode_lower::<Bech32>(hrp, data).expect("age's keys are far below bech32's code length")
}

/// Decodes `text` into its prefix, in the case it was written in, and its data bytes.
pub(super) fn decode(text: &str) -> Result<(String, Vec<u8>), Bech32Error> {
    if text.len() > MAX_LEN {
        return Err(Bech32Error::TooLong);
    }
    let checked = CheckedHrpstring::new::<Bech32>(text).map_err(|e| error(text, e))?;
    // Every byte string has exactly one encoding: padding under 5 bits, all zero.
    checked.validate_segwit_padding().map_err(|_| Bech32Error::Padding)?;
    let separator = text.rfind('1').expect("a checked string has a separator");
    Ok((text[..separator].to_string(), checked.byte_iter().collect()))
}

fn error(text: &str, e: CheckedHrpstringError) -> Bech32Error {
    match e {
        CheckedHrpstringError::Parse(UncheckedHrpstringError::Char(CharError::MixedCase)) => Bech32Error::MixedCase,
        CheckedHrpstringError::Parse(UncheckedHrpstringError::Char(CharError::InvalidChar(c))) => {
            let data = text.rfind('1').map_or(0, |at| at + 1);
            Bech32Error::Character(text[data..].find(c).map_or(1, |at| data + at + 1))
        }
        CheckedHrpstringError::Checksum(ChecksumError::CodeLength(_)) => Bech32Error::TooLong,
        CheckedHrpstringError::Checksum(ChecksumError::InvalidResidue(_)) => Bech32Error::Checksum,
        _ => Bech32Error::Separator,
    }
}
