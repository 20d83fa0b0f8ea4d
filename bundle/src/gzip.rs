//! gzip as a transport copy of a canonical tar (spec 3.5), and its capped decompression
//! (spec 8.11): output never exceeds the signed size, and the ratio is bounded.
//!
//! Both directions use zlib-rs. The publisher deflates at level 6 with zlib's default
//! window and memory level, which is deterministic (no CPU-dependent choice changes the
//! stream), and frames the stream itself so the header is exactly spec 3.5's. The puller
//! inflates straight into the part's buffer and accepts any valid gzip.

use std::cell::RefCell;

use zlib_rs::{Deflate, DeflateFlush, Inflate, InflateFlush, Status};

use crate::limits::Limits;

/// Output inflated between two checks of the signed size and the ratio: small enough to
/// stop a bomb early, large enough that the checks cost nothing.
const STEP: usize = 256 * 1024;
/// gzip framing around a deflate stream, in zlib's `windowBits` terms: 15-bit window + 16.
const GZIP_WINDOW_BITS: u8 = 16 + 15;
/// The deflate level of spec 3.5 and its window, 15 bits as zlib's default.
const LEVEL: i32 = 6;
const WINDOW_BITS: u8 = 15;
/// The gzip header of spec 3.5: no flags, mtime 0, no extra flags, OS 255.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

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
    thread_local! {
        // A deflate state is about 300 KB: made once per thread and reset for each part,
        // instead of allocated and zeroed for each of a publish's tens of thousands.
        static DEFLATE: RefCell<(Deflate, Vec<u8>)> =
            RefCell::new((Deflate::new(LEVEL, false, WINDOW_BITS), Vec::new()));
    }
    DEFLATE.with_borrow_mut(|(deflate, scratch)| {
        deflate.reset();
        scratch.resize(zlib_rs::compress_bound(tar.len()), 0);
        // A raw stream, framed here: zlib-rs would write its own OS byte into a gzip header.
        let status = deflate.compress(tar, scratch, DeflateFlush::Finish).expect("deflating a slice cannot fail");
        assert_eq!(status, Status::StreamEnd, "compress_bound bytes hold any deflate stream of a part");
        let deflated = &scratch[..deflate.total_out() as usize];
        let mut out = Vec::with_capacity(HEADER.len() + deflated.len() + 8);
        out.extend_from_slice(&HEADER);
        out.extend_from_slice(deflated);
        out.extend_from_slice(&zlib_rs::crc32::crc32(0, tar).to_le_bytes());
        // ISIZE is the input size modulo 2^32 (RFC 1952).
        out.extend_from_slice(&(tar.len() as u32).to_le_bytes());
        out
    })
}

/// Decompresses a part's transport copy to at most `signed` bytes, checking the size
/// and the ratio every `STEP` bytes of output.
pub fn decompress(gz: &[u8], signed: u64, limits: &Limits) -> Result<Vec<u8>, GzipError> {
    let mut out = vec![0; room(signed)];
    let len = decompress_into(gz, &mut out, signed, limits, |_| ())?;
    out.truncate(len);
    Ok(out)
}

/// The buffer [`decompress_into`] needs for a part of `signed` bytes: one byte of room
/// past the signed size tells "too large" from "exactly signed". Zeroed memory comes
/// from the system as it is touched, so a part that ends early costs no more than it fills.
pub fn room(signed: u64) -> usize {
    usize::try_from(signed).map_or(usize::MAX, |s| s.saturating_add(1))
}

/// [`decompress`] into `out`, at least [`room`] bytes, handing each piece of output to
/// `inflated` as soon as it is written and checked, while the next is inflated: the
/// caller hashes it while it is still in the cache. Returns the length inflated.
pub fn decompress_into<'a>(
    gz: &[u8],
    out: &'a mut [u8],
    signed: u64,
    limits: &Limits,
    mut inflated: impl FnMut(&'a [u8]),
) -> Result<usize, GzipError> {
    debug_assert!(out.len() >= room(signed), "decompress_into needs room for one byte past the signed size");
    let cap = Limits::transport_cap(signed);
    if gz.len() as u64 > cap {
        return Err(GzipError::TransportTooLarge { size: gz.len() as u64, cap });
    }
    let mut inflate = Inflate::new(true, GZIP_WINDOW_BITS);
    let mut rest = out;
    loop {
        let consumed_before = inflate.total_in() as usize;
        let produced_before = inflate.total_out() as usize;
        let step = STEP.min(rest.len());
        let status = inflate
            .decompress(&gz[consumed_before..], &mut rest[..step], InflateFlush::NoFlush)
            .map_err(|e| GzipError::Corrupt(e.as_str().to_string()))?;
        let produced = inflate.total_out() as usize - produced_before;
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(produced);
        rest = tail;
        if inflate.total_out() > signed {
            return Err(GzipError::LargerThanSigned { signed });
        }
        let consumed = inflate.total_in().max(1);
        if inflate.total_out() > limits.ratio_grace_bytes && inflate.total_out() / consumed > limits.max_ratio {
            return Err(GzipError::Ratio { max: limits.max_ratio });
        }
        inflated(piece);
        match status {
            Status::StreamEnd if inflate.total_in() as usize == gz.len() => return Ok(inflate.total_out() as usize),
            Status::StreamEnd => return Err(GzipError::TrailingData),
            // Room left and no progress: the input ended before the stream did.
            _ if produced == 0 && inflate.total_in() as usize == consumed_before => {
                return Err(GzipError::Corrupt("truncated".into()));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;

    use super::*;

    #[test]
    fn round_trips_with_the_specified_header() {
        let tar = vec![7u8; 5000];
        let gz = compress(&tar);
        assert_eq!(&gz[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
        assert_eq!(compress(&tar), gz, "reproducible");
        // A thread's deflate state is reused: what it compressed before changes nothing.
        compress(&(0..70_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>());
        assert_eq!(compress(&tar), gz, "reproducible after other input");
        let copy = tar.clone();
        assert_eq!(std::thread::spawn(move || compress(&copy)).join().unwrap(), gz, "reproducible on a fresh thread");
        assert_eq!(decompress(&gz, 5000, &Limits::SPEC).unwrap(), tar);
    }

    #[test]
    fn another_reader_accepts_the_framing_and_trailer() {
        // flate2's miniz_oxide checks the header, CRC-32 and size independently of zlib-rs.
        for tar in [Vec::new(), vec![0u8; 1024], (0..70_000u32).map(|i| (i % 251) as u8).collect()] {
            let mut inflated = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&compress(&tar)[..]), &mut inflated).unwrap();
            assert_eq!(inflated, tar);
        }
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
    fn hands_over_each_piece_once_in_order_as_it_is_inflated() {
        let tar: Vec<u8> = (0..3 * STEP as u32 + 5).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 % 7).collect();
        let mut out = vec![0; room(tar.len() as u64)];
        let mut pieces = Vec::new();
        let len = decompress_into(&compress(&tar), &mut out, tar.len() as u64, &Limits::SPEC, |p| pieces.push(p)).unwrap();
        assert_eq!(len, tar.len());
        assert!(pieces.len() >= 4 && pieces.iter().all(|p| p.len() <= STEP), "{} pieces", pieces.len());
        assert_eq!(pieces.concat(), tar);
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
