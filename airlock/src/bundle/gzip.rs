//! gzip as a transport copy of a canonical tar (spec 3.5), and its capped decompression
//! (spec 8.11): output never exceeds the signed size, and the ratio is bounded.

use std::io::{Read, Write};

use flate2::Compression;
use flate2::bufread::GzDecoder;

use crate::limits::Limits;

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

/// Decompresses a part's transport copy to at most `signed` bytes.
pub fn decompress(gz: &[u8], signed: u64, limits: &Limits) -> Result<Vec<u8>, GzipError> {
    let cap = Limits::transport_cap(signed);
    if gz.len() as u64 > cap {
        return Err(GzipError::TransportTooLarge { size: gz.len() as u64, cap });
    }
    let mut dec = GzDecoder::new(gz);
    let mut out = Vec::with_capacity(signed.min(64 << 20) as usize);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = dec.read(&mut chunk).map_err(|e| GzipError::Corrupt(e.to_string()))?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&chunk[..n]);
        if out.len() as u64 > signed {
            return Err(GzipError::LargerThanSigned { signed });
        }
        let consumed = (gz.len() - dec.get_ref().len()).max(1) as u64;
        if out.len() as u64 > limits.ratio_grace_bytes && out.len() as u64 / consumed > limits.max_ratio {
            return Err(GzipError::Ratio { max: limits.max_ratio });
        }
    }
    if !dec.get_ref().is_empty() {
        return Err(GzipError::TrailingData);
    }
    Ok(out)
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
