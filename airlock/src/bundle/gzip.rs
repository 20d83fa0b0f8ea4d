//! gzip as a transport copy of a canonical tar (spec 3.5), and its capped decompression
//! (spec 8.11): output never exceeds the signed size, and the ratio is bounded.
//!
//! Compression and decompression use two libraries on purpose. The publisher compresses
//! with flate2's miniz_oxide, whose level-6 output is what every published blob and the
//! test vectors hold, so it must not change under them. The puller inflates with zlib-rs,
//! twice as fast here, writing straight into the part's buffer; any valid gzip inflates
//! to the same bytes, so the choice is invisible outside this module.

use std::io::Write;

use flate2::Compression;
use zlib_rs::{Inflate, InflateFlush, Status};

use crate::limits::Limits;

/// Output inflated between two checks of the signed size and the ratio: small enough to
/// stop a bomb early, large enough that the checks cost nothing.
const STEP: usize = 256 * 1024;
/// gzip framing around a deflate stream, in zlib's `windowBits` terms: 15-bit window + 16.
const GZIP_WINDOW_BITS: u8 = 16 + 15;

/// Why a compressed part was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GzipError {
    #[error("compressed copy is {size} bytes, over its cap of {cap}")]
    TransportTooLarge { size: u64, cap: u64 },
    #[error("decompresses to more than the signed {signed} bytes")]
    LargerThanSigned { signed: u64 },
    #[error("decompression ratio over {max}:1 (gzip bomb)")]
    Ratio { max: u64 },
    #[error("not a valid gzip stream: {0}")]
    Corrupt(String),
    #[error("data after the gzip stream")]
    TrailingData,
}

/// gzip with the header of spec 3.5 (mtime 0, OS 255) at deflate level 6.
pub fn compress(tar: &[u8]) -> Vec<u8> {
    let mut enc = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::with_capacity(tar.len() / 4 + 64), Compression::new(6));
    enc.write_all(tar).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

/// Decompresses a part's transport copy to at most `signed` bytes, checking the size
/// and the ratio every [`STEP`] of output.
pub fn decompress(gz: &[u8], signed: u64, limits: &Limits) -> Result<Vec<u8>, GzipError> {
    let cap = Limits::transport_cap(signed);
    if gz.len() as u64 > cap {
        return Err(GzipError::TransportTooLarge { size: gz.len() as u64, cap });
    }
    // One byte of room past the signed size tells "too large" from "exactly signed".
    let room = usize::try_from(signed).map_or(usize::MAX, |s| s.saturating_add(1));
    let mut out = Vec::with_capacity(room.min(64 << 20));
    let mut inflate = Inflate::new(true, GZIP_WINDOW_BITS);
    loop {
        let produced = out.len();
        out.resize(room.min(produced + STEP), 0);
        let consumed_before = inflate.total_in() as usize;
        let status = inflate
            .decompress(&gz[consumed_before..], &mut out[produced..], InflateFlush::NoFlush)
            .map_err(|e| GzipError::Corrupt(e.as_str().to_string()))?;
        out.truncate(inflate.total_out() as usize);
        if out.len() as u64 > signed {
            return Err(GzipError::LargerThanSigned { signed });
        }
        let consumed = inflate.total_in().max(1);
        if out.len() as u64 > limits.ratio_grace_bytes && out.len() as u64 / consumed > limits.max_ratio {
            return Err(GzipError::Ratio { max: limits.max_ratio });
        }
        match status {
            Status::StreamEnd if inflate.total_in() as usize == gz.len() => return Ok(out),
            Status::StreamEnd => return Err(GzipError::TrailingData),
            // Room left and no progress: the input ended before the stream did.
            _ if out.len() == produced && inflate.total_in() as usize == consumed_before => {
                return Err(GzipError::Corrupt("truncated".into()));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_the_specified_header() {
        let tar = vec![7u8; 5000];
        let gz = compress(&tar);
        assert_eq!(&gz[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
        assert_eq!(compress(&tar), gz, "reproducible");
        assert_eq!(decompress(&gz, 5000, &Limits::SPEC).unwrap(), tar);
    }

    #[test]
    fn inflates_across_many_steps_and_any_valid_header() {
        let tar: Vec<u8> = (0..3 * STEP as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 % 7).collect();
        assert_eq!(decompress(&compress(&tar), tar.len() as u64, &Limits::SPEC).unwrap(), tar);
        // Another compressor's framing (a file name, level 9) is still a valid gzip.
        let mut other = flate2::GzBuilder::new().filename("part.tar").write(Vec::new(), Compression::best());
        other.write_all(&tar).unwrap();
        assert_eq!(decompress(&other.finish().unwrap(), tar.len() as u64, &Limits::SPEC).unwrap(), tar);
    }

    #[test]
    fn rejects_a_second_gzip_member() {
        let mut two = compress(b"first");
        two.extend_from_slice(&compress(b"second"));
        assert_eq!(decompress(&two, 11, &Limits::SPEC), Err(GzipError::TrailingData));
    }

    #[test]
    fn rejects_output_beyond_the_signed_size() {
        let gz = compress(&[1u8; 5000]);
        assert_eq!(decompress(&gz, 4999, &Limits::SPEC), Err(GzipError::LargerThanSigned { signed: 4999 }));
    }

    #[test]
    fn rejects_a_gzip_bomb_by_ratio() {
        let gz = compress(&vec![0u8; 8 << 20]);
        let limits = Limits { ratio_grace_bytes: 1 << 20, ..Limits::SPEC };
        assert_eq!(decompress(&gz, 8 << 20, &limits), Err(GzipError::Ratio { max: 200 }));
    }

    #[test]
    fn rejects_corrupt_truncated_oversized_and_trailing() {
        let gz = compress(b"hello world, hello world");
        for len in 0..gz.len() {
            assert!(decompress(&gz[..len], 24, &Limits::SPEC).is_err(), "truncated at {len}");
        }
        let mut trailing = gz.clone();
        trailing.push(0);
        assert_eq!(decompress(&trailing, 24, &Limits::SPEC), Err(GzipError::TrailingData));
        let big = vec![0u8; 5000];
        assert!(matches!(decompress(&big, 10, &Limits::SPEC), Err(GzipError::TransportTooLarge { .. })));
    }
}
