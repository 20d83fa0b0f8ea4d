//! Steps 11-13 of spec section 8 for one part: inflate it within its caps, check its
//! digest, and walk its tar against the signed file list. [`verify`] is the entry point,
//! called by `VerifiedEnvelope::verify_part`; it returns the part's files as slices of the
//! inflated tar, copied out only when they fill little of it.
//!
//! A part that is what it should be is checked in one pass: the tar must be, byte for
//! byte, the canonical tar of the signed files (spec 3.1), so each header is compared with
//! the one the signed path and size make, and each file is hashed where it lies. Only a
//! part that fails that is walked entry by entry, to name the first thing wrong with it.

use std::ops::Range;

use bytes::Bytes;

use super::gzip;
use super::statement::{FileEntry, ProfileEntry};
use super::tar::{self, walk};
use super::verify::{Transport, VerifyError};
use crate::digest::Digest;
use crate::limits::Limits;

/// Steps 11-13 for the part `name`, signed as `profile` with the files `signed`.
pub(super) fn verify(
    name: &str,
    profile: &ProfileEntry,
    signed: &[FileEntry],
    transport: Transport<'_>,
    limits: &Limits,
) -> Result<Vec<(String, Bytes)>, VerifyError> {
    let part = || name.to_string();
    // spec 8.11
    let tar = match transport {
        Transport::Gzip(gz) => gzip::decompress(gz, profile.size, limits)
            .map_err(|source| VerifyError::Transport { part: part(), source })?,
        Transport::Tar(tar) => tar.to_vec(),
    };
    if tar.len() as u64 != profile.size {
        return Err(VerifyError::PartLength { part: part(), size: tar.len() as u64, signed: profile.size });
    }
    // Steps 12 and 13 each hash every byte of the tar: on two cores at once when the part
    // is large enough to pay for a thread. Step 12's verdict still comes first.
    let (actual, spans) = std::thread::scope(|s| {
        let digest = (tar.len() >= PARALLEL_HASH_BYTES).then(|| s.spawn(|| Digest::of(&tar)));
        let spans = canonical_files(&tar, signed);
        (digest.map_or_else(|| Digest::of(&tar), |h| h.join().expect("hashing does not panic")), spans)
    });
    // spec 8.12
    if actual != profile.digest {
        return Err(VerifyError::PartDigest { part: part(), expected: profile.digest, actual });
    }
    // spec 8.13
    let spans = match spans {
        Some(spans) => spans,
        None => walk_part(name, &tar, signed)?,
    };
    let (bytes, spans) = keep_files(tar, spans);
    Ok(signed.iter().zip(spans).map(|(f, span)| (f.path.clone(), bytes.slice(span))).collect())
}

/// The buffer the part's files are kept in, and where each file is in it: the tar itself
/// when the files fill most of it, else a copy of just the files. Small files come with a
/// header and padding each that would otherwise stay in memory as long as the bundle.
fn keep_files(tar: Vec<u8>, spans: Vec<Range<usize>>) -> (Bytes, Vec<Range<usize>>) {
    let file_bytes: usize = spans.iter().map(ExactSizeIterator::len).sum();
    if file_bytes >= tar.len() / 4 * 3 {
        return (Bytes::from(tar), spans);
    }
    let mut files = Vec::with_capacity(file_bytes);
    let spans = spans
        .into_iter()
        .map(|span| {
            let start = files.len();
            files.extend_from_slice(&tar[span]);
            start..files.len()
        })
        .collect();
    (Bytes::from(files), spans)
}

/// Below this size a part's tar is hashed on the verifying thread alone: starting a
/// thread costs more than it saves.
const PARALLEL_HASH_BYTES: usize = 256 * 1024;

/// Step 13 for a part that is what it should be: the canonical tar of exactly its signed
/// files (spec 3.1), each with its signed SHA-256. Returns where each file's bytes are;
/// `None` when anything differs, and [`walk_part`] then finds what.
fn canonical_files(tar: &[u8], signed: &[FileEntry]) -> Option<Vec<Range<usize>>> {
    let spans = tar::canonical_layout(tar, signed.iter().map(|f| (f.path.as_str(), f.size)))?;
    let intact = signed.iter().zip(&spans).all(|(f, span)| Digest::from_hex(&f.sha256).ok() == Some(Digest::of(&tar[span.clone()])));
    intact.then_some(spans)
}

/// Step 13 entry by entry, naming the first entry that differs from the signed list.
fn walk_part(name: &str, tar: &[u8], signed: &[FileEntry]) -> Result<Vec<Range<usize>>, VerifyError> {
    let part = || name.to_string();
    let entries = walk(tar).map_err(|source| VerifyError::Tar { part: part(), source })?;
    let mut spans = Vec::with_capacity(entries.len());
    let mut expected = signed.iter();
    for entry in entries {
        let Some(want) = expected.next() else {
            return Err(VerifyError::UnexpectedEntry { part: part(), path: entry.path });
        };
        if want.path != entry.path {
            return Err(if signed.iter().any(|f| f.path == entry.path) {
                VerifyError::MissingEntry { part: part(), path: want.path.clone() }
            } else {
                VerifyError::UnexpectedEntry { part: part(), path: entry.path }
            });
        }
        if want.size != entry.bytes.len() as u64 || want.sha256 != Digest::of(entry.bytes).hex() {
            return Err(VerifyError::EntryMismatch { part: part(), path: entry.path });
        }
        spans.push(entry.offset..entry.offset + entry.bytes.len());
    }
    if let Some(missing) = expected.next() {
        return Err(VerifyError::MissingEntry { part: part(), path: missing.path.clone() });
    }
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::gzip;
    use crate::testkit::Fixture;

    /// A signed bundle of one part of `count` files of about `size` bytes.
    fn part_of(count: usize, size: usize) -> crate::bundle::SignedBundle {
        let files = (0..count)
            .map(|i| (format!("ClusterProfile.big/ConfigMap.cm-{i:03}.yaml"), format!("kind: ConfigMap\n# {i:03}\n").repeat(size / 20).into_bytes()))
            .collect();
        Fixture::new(1).signed(1, files)
    }

    /// Large enough to be hashed on two threads.
    fn large() -> crate::bundle::SignedBundle {
        part_of(300, 1_900)
    }

    /// Whether each file's bytes follow the previous file's directly (a copy of just the
    /// files) rather than a header later (slices of the tar).
    fn packed(files: &[(String, Bytes)]) -> bool {
        files.windows(2).all(|w| w[0].1.as_ptr().wrapping_add(w[0].1.len()) == w[1].1.as_ptr())
    }

    #[test]
    fn keeps_large_files_in_the_tar_and_copies_small_ones_out() {
        for (size, copied) in [(4_000, false), (100, true)] {
            let signed = part_of(100, size);
            let tar = signed.bundle.part("ClusterProfile.big").unwrap().tar();
            let files = check(&signed, Transport::Tar(&tar)).unwrap();
            assert_eq!(packed(&files), copied, "files of {size} bytes");
            let expected: Vec<(&str, &[u8])> = signed.bundle.files().collect();
            assert_eq!(files.iter().map(|(p, b)| (p.as_str(), &b[..])).collect::<Vec<_>>(), expected);
        }
    }

    fn check(signed: &crate::bundle::SignedBundle, transport: Transport<'_>) -> Result<Vec<(String, Bytes)>, VerifyError> {
        let p = &signed.statement.predicate;
        verify("ClusterProfile.big", &p.profiles[0], &p.files, transport, &Limits::SPEC)
    }

    #[test]
    fn verifies_a_large_part_and_lends_its_files_from_the_tar() {
        let signed = large();
        let tar = signed.bundle.part("ClusterProfile.big").unwrap().tar();
        assert!(tar.len() >= PARALLEL_HASH_BYTES, "the test must cover the two-thread path");
        let files = check(&signed, Transport::Gzip(&gzip::compress(&tar))).unwrap();
        let expected: Vec<(&str, &[u8])> = signed.bundle.files().collect();
        let got: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (p.as_str(), &b[..])).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn rejects_a_changed_file_in_a_large_part_by_its_digest_first() {
        let signed = large();
        let mut tar = signed.bundle.part("ClusterProfile.big").unwrap().tar();
        // Inside the content of the 100th file: both step 12 and step 13 fail; 12 is named.
        tar[100 * 1024 + 600] ^= 1;
        let err = check(&signed, Transport::Tar(&tar)).unwrap_err();
        assert!(matches!(err, VerifyError::PartDigest { .. }), "{err}");
    }

    #[test]
    fn the_one_pass_check_and_the_walk_find_the_same_files() {
        let signed = large();
        let tar = signed.bundle.part("ClusterProfile.big").unwrap().tar();
        let files = &signed.statement.predicate.files;
        let fast = canonical_files(&tar, files).expect("a canonical tar passes the one-pass check");
        assert_eq!(walk_part("ClusterProfile.big", &tar, files).unwrap(), fast);
        // Any other bytes send it to the walk, which then names what is wrong.
        let mut changed = tar.clone();
        changed[512 + 3] ^= 1;
        assert_eq!(canonical_files(&changed, files), None);
        assert!(matches!(walk_part("ClusterProfile.big", &changed, files), Err(VerifyError::EntryMismatch { .. })));
    }
}
