//! Sprig's checksums: `sha1sum`, `sha256sum`, `sha512sum` (hex) and `adler32sum`
//! (decimal).

use sha1::Digest as _;
use sha2::{Digest as _, Sha256, Sha512};

use super::args::{Func, str_arg, table, text};

pub(super) fn funcs() -> Vec<(&'static str, Func)> {
    table(&[
        (&["sha1sum"], |a| Ok(text(hex::encode(sha1::Sha1::digest(str_arg("sha1sum", a, 1, 0)?))))),
        (&["sha256sum"], |a| Ok(text(hex::encode(Sha256::digest(str_arg("sha256sum", a, 1, 0)?))))),
        (&["sha512sum"], |a| Ok(text(hex::encode(Sha512::digest(str_arg("sha512sum", a, 1, 0)?))))),
        (&["adler32sum"], |a| Ok(text(adler32(str_arg("adler32sum", a, 1, 0)?.as_bytes()).to_string()))),
    ])
}

/// RFC 1950's Adler-32, as Go's `hash/adler32`.
fn adler32(bytes: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    // 5552 bytes is the most that can be summed before the 32-bit sums may overflow.
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in bytes.chunks(5552) {
        for byte in chunk {
            a += u32::from(*byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    #[test]
    fn adler32_matches_rfc1950() {
        assert_eq!(super::adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(super::adler32(b""), 1);
    }
}
