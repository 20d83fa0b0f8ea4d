//! Bech32 (BIP 173, not bech32m), the text form of age keys: `age1...` recipients and
//! `AGE-SECRET-KEY-1...` identities. Encoding and decoding with the checksum checked;
//! which prefix a key needs is the caller's business. Unlike BIP 173 there is no 90
//! character limit, which age's identities may exceed, only a sanity cap.

/// The 32 characters of the data part, by value.
const CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const GENERATOR: [u32; 5] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
const CHECKSUM_LEN: usize = 6;
/// Far above any age key, low enough that a pasted file is refused before it is scanned.
const MAX_LEN: usize = 1024;

/// Why a string is not bech32. Messages name positions, never characters: the string may
/// be a secret key.
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
    debug_assert!(!hrp.bytes().any(|c| c.is_ascii_uppercase()));
    let values = to_five_bits(data);
    let residue = polymod(hrp_expand(hrp.as_bytes()).chain(values.iter().copied()).chain([0; CHECKSUM_LEN])) ^ 1;
    let checksum = (0..CHECKSUM_LEN).map(|i| ((residue >> (5 * (CHECKSUM_LEN - 1 - i))) & 31) as u8);
    let mut out = String::with_capacity(hrp.len() + 1 + values.len() + CHECKSUM_LEN);
    out.push_str(hrp);
    out.push('1');
    out.extend(values.iter().copied().chain(checksum).map(|v| CHARSET[usize::from(v)] as char));
    out
}

/// Decodes `text` into its prefix, in the case it was written in, and its data bytes.
pub(super) fn decode(text: &str) -> Result<(String, Vec<u8>), Bech32Error> {
    let bytes = text.as_bytes();
    if bytes.len() > MAX_LEN {
        return Err(Bech32Error::TooLong);
    }
    if bytes.iter().any(u8::is_ascii_lowercase) && bytes.iter().any(u8::is_ascii_uppercase) {
        return Err(Bech32Error::MixedCase);
    }
    let separator = match bytes.iter().rposition(|&c| c == b'1') {
        Some(at) if at >= 1 && at + 1 + CHECKSUM_LEN <= bytes.len() => at,
        _ => return Err(Bech32Error::Separator),
    };
    let (hrp, rest) = (&bytes[..separator], &bytes[separator + 1..]);
    if let Some(at) = hrp.iter().position(|c| !(33..=126).contains(c)) {
        return Err(Bech32Error::Character(at + 1));
    }
    let values = rest
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let at = CHARSET.iter().position(|v| *v == c.to_ascii_lowercase());
            at.map(|v| v as u8).ok_or(Bech32Error::Character(separator + 2 + i))
        })
        .collect::<Result<Vec<u8>, _>>()?;
    let hrp_lower = hrp.to_ascii_lowercase();
    if polymod(hrp_expand(&hrp_lower).chain(values.iter().copied())) != 1 {
        return Err(Bech32Error::Checksum);
    }
    let data = from_five_bits(&values[..values.len() - CHECKSUM_LEN])?;
    // Every byte of the prefix is printable ASCII, checked above.
    Ok((String::from_utf8(hrp.to_vec()).expect("ASCII"), data))
}

fn polymod(values: impl Iterator<Item = u8>) -> u32 {
    let mut check: u32 = 1;
    for value in values {
        let top = check >> 25;
        check = ((check & 0x01ff_ffff) << 5) ^ u32::from(value);
        for (i, generator) in GENERATOR.iter().enumerate() {
            if (top >> i) & 1 == 1 {
                check ^= generator;
            }
        }
    }
    check
}

fn hrp_expand(hrp: &[u8]) -> impl Iterator<Item = u8> + '_ {
    hrp.iter().map(|c| c >> 5).chain([0]).chain(hrp.iter().map(|c| c & 31))
}

/// Regroups bytes into 5-bit values, the last one padded with zero bits.
fn to_five_bits(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity((data.len() * 8).div_ceil(5));
    let (mut acc, mut bits) = (0u32, 0u32);
    for &byte in data {
        acc = (acc << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(((acc >> bits) & 31) as u8);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(((acc << (5 - bits)) & 31) as u8);
    }
    out
}

/// Regroups 5-bit values into bytes; the padding must be under 5 bits and all zero, so that
/// every byte string has exactly one encoding.
fn from_five_bits(values: &[u8]) -> Result<Vec<u8>, Bech32Error> {
    let mut out = Vec::with_capacity(values.len() * 5 / 8);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &value in values {
        acc = (acc << 5) | u32::from(value);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
        acc &= (1 << bits) - 1;
    }
    if bits >= 5 || acc != 0 {
        return Err(Bech32Error::Padding);
    }
    Ok(out)
}
