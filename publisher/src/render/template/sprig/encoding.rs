//! Sprig's encodings: `b64enc`, `b64dec`, `b32enc`, `b32dec` (RFC 4648 standard
//! alphabets, padded, as Go's `StdEncoding`).
//!
//! Departure: Sprig's decoders return the error text as their result on bad input,
//! which would be published inside a manifest; here the render fails with the reason.
//! A decoded value must be UTF-8 text, as every template value is.

use base64::Engine as _;

use super::args::{Call, Func, failure, str_arg, table, text};

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["b64enc"], |a| Ok(text(base64::engine::general_purpose::STANDARD.encode(str_arg("b64enc", a, 1, 0)?)))),
        (&["b64dec"], |a| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(str_arg("b64dec", a, 1, 0)?)
                .map_err(|e| failure("b64dec", format!("invalid base64: {e}")))?;
            utf8("b64dec", bytes)
        }),
        (&["b32enc"], |a| Ok(text(base32_encode(str_arg("b32enc", a, 1, 0)?.as_bytes())))),
        (&["b32dec"], |a| {
            let bytes = base32_decode(str_arg("b32dec", a, 1, 0)?).map_err(|e| failure("b32dec", e))?;
            utf8("b32dec", bytes)
        }),
    ])
}

fn utf8(name: &str, bytes: Vec<u8>) -> Call {
    String::from_utf8(bytes).map(text).map_err(|_| failure(name, "the decoded bytes are not UTF-8 text"))
}

fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut block = [0u8; 5];
        block[..chunk.len()].copy_from_slice(chunk);
        let bits = block.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let symbols = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            out.push(if i < symbols { char::from(BASE32[((bits >> (35 - 5 * i)) & 31) as usize]) } else { '=' });
        }
    }
    out
}

/// Go's `base32.StdEncoding.DecodeString`: padding required, line breaks ignored.
fn base32_decode(s: &str) -> Result<Vec<u8>, String> {
    let symbols: Vec<u8> = s.bytes().filter(|b| !matches!(b, b'\r' | b'\n')).collect();
    if !symbols.len().is_multiple_of(8) {
        return Err(format!("illegal base32 data: length {} is not a multiple of 8", symbols.len()));
    }
    let mut out = Vec::with_capacity(symbols.len() / 8 * 5);
    for (block_index, block) in symbols.chunks(8).enumerate() {
        let data = block.iter().position(|b| *b == b'=').unwrap_or(8);
        let last = block_index + 1 == symbols.len() / 8;
        if block[data..].iter().any(|b| *b != b'=') || (data < 8 && !last) || !matches!(data, 2 | 4 | 5 | 7 | 8) {
            return Err(format!("illegal base32 data at input byte {}", block_index * 8 + data));
        }
        let mut bits = 0u64;
        for (i, symbol) in block[..data].iter().enumerate() {
            let value = BASE32
                .iter()
                .position(|c| c == symbol)
                .ok_or_else(|| format!("illegal base32 data at input byte {}", block_index * 8 + i))?;
            bits |= (value as u64) << (35 - 5 * i);
        }
        let bytes = data * 5 / 8;
        out.extend((0..bytes).map(|i| (bits >> (32 - 8 * i)) as u8));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_round_trips_rfc4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "MY======"),
            ("fo", "MZXQ===="),
            ("foo", "MZXW6==="),
            ("foob", "MZXW6YQ="),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI======"),
        ] {
            assert_eq!(base32_encode(plain.as_bytes()), encoded);
            assert_eq!(base32_decode(encoded).unwrap(), plain.as_bytes());
        }
        assert!(base32_decode("MZXW6").is_err());
        assert!(base32_decode("MY======MY======").is_err());
    }
}
