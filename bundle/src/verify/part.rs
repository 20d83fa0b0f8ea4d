//! Steps 11-13 of spec section 8 for one part: inflate it within its caps, check its
//! digest, and walk its tar against the signed file list. [`verify`] is the entry point,
//! called by `VerifiedEnvelope::verify_part`; it returns the part's files as slices of the
//! inflated tar, copied out only when they fill little of it.
//!
//! A part that is what it should be is checked in one pass: the tar must be, byte for
//! byte, the canonical tar of the signed files (spec 3.1), so each file is hashed where
//! that tar puts it while the part is still being inflated, and each header is then
//! compared with the one the signed path and size make. Only a part that fails that is
//! walked entry by entry, to name the first thing wrong with it. Hashing as the bytes
//! arrive does not change what is checked or in which order failures are named.

use std::ops::Range;
use std::sync::mpsc;

use bytes::Bytes;

use super::error::VerifyError;
use crate::digest::{Digest, Hasher};
use crate::gzip::{self, GzipError};
use crate::limits::Limits;
use crate::statement::{FileEntry, ProfileEntry};
use crate::tar::{self, BLOCK, walk};

/// A compressed or plain canonical tar as a store hands it over.
#[derive(Debug, Clone, Copy)]
pub enum Transport<'a> {
    Gzip(&'a [u8]),
    Tar(&'a [u8]),
}

/// Steps 11-13 for the part `name`, signed as `profile` with the files `signed`.
pub(super) fn verify(
    name: &str,
    profile: &ProfileEntry,
    signed: &[FileEntry],
    transport: Transport<'_>,
    limits: &Limits,
) -> Result<Vec<(String, Bytes)>, VerifyError> {
    let part = || name.to_string();
    let mut tar = vec![
        0;
        match transport {
            Transport::Gzip(_) => gzip::room(profile.size),
            Transport::Tar(tar) => tar.len(),
        }
    ];
    // spec 8.11, hashing for 8.12 and 8.13 on the way
    let (len, actual, files_intact) =
        receive_and_hash(transport, &mut tar, profile, signed, limits).map_err(|source| VerifyError::Transport { part: part(), source })?;
    tar.truncate(len);
    if tar.len() as u64 != profile.size {
        return Err(VerifyError::PartLength { part: part(), size: tar.len() as u64, signed: profile.size });
    }
    // spec 8.12
    if actual != profile.digest {
        return Err(VerifyError::PartDigest { part: part(), expected: profile.digest, actual });
    }
    // spec 8.13
    let canonical = files_intact.then(|| tar::canonical_layout(&tar, signed.iter().map(|f| (f.path.as_str(), f.size))));
    let spans = match canonical.flatten() {
        Some(spans) => spans,
        None => walk_part(name, &tar, signed)?,
    };
    let (bytes, spans) = keep_files(tar, spans);
    Ok(signed.iter().zip(spans).map(|(f, span)| (f.path.clone(), bytes.slice(span))).collect())
}

/// Puts the part's tar into `buffer` (inflated, or copied as it came) and hashes it as it
/// lands: its digest (step 12), and each signed file where the canonical tar puts it (step
/// 13). A large part is inflated on this thread while a thread each hashes the digest and
/// the files, so the three overlap. Returns the tar's length, its digest and whether every
/// file hashed to its signed value.
fn receive_and_hash<'a>(
    transport: Transport<'_>,
    buffer: &'a mut [u8],
    profile: &ProfileEntry,
    signed: &[FileEntry],
    limits: &Limits,
) -> Result<(usize, Digest, bool), GzipError> {
    let mut digest = Hasher::default();
    let mut files = FileHashes::new(signed);
    if profile.size < PARALLEL_HASH_BYTES {
        let len = receive(transport, buffer, profile.size, limits, |piece| {
            digest.update(piece);
            files.update(piece);
        })?;
        return Ok((len, digest.finish(), files.intact()));
    }
    std::thread::scope(|s| {
        let (to_digest, pieces) = mpsc::channel::<&'a [u8]>();
        let digest = s.spawn(move || {
            pieces.into_iter().for_each(|piece| digest.update(piece));
            digest.finish()
        });
        let (to_files, pieces) = mpsc::channel::<&'a [u8]>();
        let files = s.spawn(move || {
            pieces.into_iter().for_each(|piece| files.update(piece));
            files.intact()
        });
        // A send fails only when its thread panicked, which the join reports.
        let len = receive(transport, buffer, profile.size, limits, |piece| {
            let _ = to_digest.send(piece);
            let _ = to_files.send(piece);
        });
        drop((to_digest, to_files));
        let digest = digest.join().expect("hashing does not panic");
        let intact = files.join().expect("hashing does not panic");
        Ok((len?, digest, intact))
    })
}

/// Hands the part's bytes to `each` in order as they land in `buffer`: inflated from the
/// transport copy within the caps of spec 8.11, or copied as they came.
fn receive<'a>(
    transport: Transport<'_>,
    buffer: &'a mut [u8],
    signed: u64,
    limits: &Limits,
    mut each: impl FnMut(&'a [u8]),
) -> Result<usize, GzipError> {
    match transport {
        Transport::Gzip(gz) => gzip::decompress_into(gz, buffer, signed, limits, each),
        Transport::Tar(tar) => {
            buffer.copy_from_slice(tar);
            each(buffer);
            Ok(tar.len())
        }
    }
}

/// Below this size a part's tar is hashed on the verifying thread alone: starting
/// threads costs more than it saves.
const PARALLEL_HASH_BYTES: u64 = 256 * 1024;

/// Step 13's hashes for a part that is the canonical tar of its signed files: each file is
/// hashed at the offset that tar puts it, as the bytes arrive in order. Whether the headers
/// and padding around them are canonical is `tar::canonical_layout`'s check, afterwards.
struct FileHashes<'s> {
    signed: &'s [FileEntry],
    /// The file being hashed, and where its bytes are in the tar.
    next: usize,
    span: Range<usize>,
    hasher: Hasher,
    /// Bytes of the tar seen so far.
    seen: usize,
    intact: bool,
}

impl<'s> FileHashes<'s> {
    fn new(signed: &'s [FileEntry]) -> FileHashes<'s> {
        let mut files = FileHashes { signed, next: 0, span: 0..0, hasher: Hasher::default(), seen: 0, intact: true };
        files.locate(0);
        files
    }

    /// Places the next file after a header at `header`.
    fn locate(&mut self, header: usize) {
        let size = self.signed.get(self.next).map_or(0, |f| usize::try_from(f.size).unwrap_or(usize::MAX));
        let start = header.saturating_add(BLOCK);
        self.span = start..start.saturating_add(size);
    }

    /// The next bytes of the tar.
    fn update(&mut self, piece: &[u8]) {
        let end = self.seen + piece.len();
        while self.intact && self.next < self.signed.len() {
            let (from, to) = (self.span.start.max(self.seen), self.span.end.min(end));
            if from < to {
                self.hasher.update(&piece[from - self.seen..to - self.seen]);
            }
            if self.span.end > end {
                break;
            }
            let actual = std::mem::take(&mut self.hasher).finish();
            self.intact = Digest::from_hex(&self.signed[self.next].sha256) == Ok(actual);
            self.next += 1;
            self.locate(self.span.end.next_multiple_of(BLOCK));
        }
        self.seen = end;
    }

    /// Whether every signed file was there with its signed hash.
    fn intact(&self) -> bool {
        self.intact && self.next == self.signed.len()
    }
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
    use crate::gzip;
    use crate::testkit::Fixture;

    /// A signed bundle of one part of `count` files of about `size` bytes.
    fn part_of(count: usize, size: usize) -> crate::SignedBundle {
        let files = (0..count)
            .map(|i| {
                (
                    format!("ClusterProfile.big/ConfigMap.cm-{i:03}.yaml"),
                    format!("kind: ConfigMap\n# {i:03}\n").repeat(size / 20).into_bytes(),
                )
            })
            .collect();
        Fixture::new(1).signed(1, files)
    }

    /// Large enough to be hashed on two threads.
    fn large() -> crate::SignedBundle {
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

    fn check(signed: &crate::SignedBundle, transport: Transport<'_>) -> Result<Vec<(String, Bytes)>, VerifyError> {
        let p = &signed.statement.predicate;
        verify("ClusterProfile.big", &p.profiles[0], &p.files, transport, &Limits::SPEC)
    }

    #[test]
    fn verifies_a_large_part_and_lends_its_files_from_the_tar() {
        let signed = large();
        let tar = signed.bundle.part("ClusterProfile.big").unwrap().tar();
        assert!(tar.len() as u64 >= PARALLEL_HASH_BYTES, "the test must cover the threaded path");
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

    /// Whether the files hash to their signed values when the tar arrives in pieces of
    /// `piece` bytes.
    fn files_intact(tar: &[u8], files: &[FileEntry], piece: usize) -> bool {
        let mut hashes = FileHashes::new(files);
        tar.chunks(piece).for_each(|p| hashes.update(p));
        hashes.intact()
    }

    #[test]
    fn hashes_files_across_any_cut_of_the_tar_and_the_walk_agrees() {
        let mut files = Fixture::files();
        files.push(("ClusterProfile.web/empty.yaml".into(), Vec::new()));
        files.push(("ClusterProfile.web/long.yaml".into(), b"kind: ConfigMap\n".repeat(100)));
        let signed = Fixture::new(1).signed(1, files);
        let p = &signed.statement.predicate;
        for profile in &p.profiles {
            let files: Vec<FileEntry> = p.files.iter().filter(|f| f.path.starts_with(&format!("{}/", profile.name))).cloned().collect();
            let tar = signed.bundle.part(&profile.name).unwrap().tar();
            for piece in [1, 7, 511, 512, 513, 4096, tar.len()] {
                assert!(files_intact(&tar, &files, piece), "{} in pieces of {piece}", profile.name);
            }
            let fast = tar::canonical_layout(&tar, files.iter().map(|f| (f.path.as_str(), f.size))).unwrap();
            assert_eq!(walk_part(&profile.name, &tar, &files).unwrap(), fast);
            // A changed byte anywhere in a file's content, or a tar cut short, is not intact.
            for span in &fast {
                for at in [span.start, span.end - 1].into_iter().filter(|_| !span.is_empty()) {
                    let mut changed = tar.clone();
                    changed[at] ^= 1;
                    assert!(!files_intact(&changed, &files, 100), "byte {at} changed");
                }
            }
            if let Some(last) = fast.iter().rev().find(|s| !s.is_empty()) {
                assert!(!files_intact(&tar[..last.end - 1], &files, 100), "cut before the end of the last file");
            }
        }
    }

    #[test]
    fn a_changed_header_leaves_the_files_intact_but_fails_the_layout_and_the_walk() {
        let signed = large();
        let tar = signed.bundle.part("ClusterProfile.big").unwrap().tar();
        let files = &signed.statement.predicate.files;
        let mut changed = tar.clone();
        // The mode field of the 21st header (every file takes 6 blocks here).
        changed[512 * 6 * 20 + 101] = b'7';
        assert!(files_intact(&changed, files, 4096), "no file's content changed");
        let err = check(&signed, Transport::Tar(&changed)).unwrap_err();
        assert!(matches!(err, VerifyError::PartDigest { .. }), "{err}");
        assert_eq!(tar::canonical_layout(&changed, files.iter().map(|f| (f.path.as_str(), f.size))), None);
        let err = walk_part("ClusterProfile.big", &changed, files).unwrap_err();
        assert!(matches!(err, VerifyError::Tar { source: tar::TarError::Malformed(_), .. }), "checksum: {err}");
    }
}
