//! Canonical tar (spec section 3): writing it, and walking one in memory.
//!
//! The writer is a pure function of the files, so the same part always has the same
//! digest. The walker never touches a filesystem: it checks every header against the
//! canonical header for the same path and size, which refuses links, devices, PAX and GNU
//! extensions, odd modes and owners in one comparison, and hands back borrowed slices.

use std::io::Read;
use std::ops::Range;

use super::path::ustar_split;

pub(super) const BLOCK: usize = 512;
const END: usize = 2 * BLOCK;

/// Why a tar was refused while walking it (spec 8.13).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TarError {
    #[error("tar is malformed: {0}")]
    Malformed(String),
    #[error("tar entry {path:?} is not a regular file (type {typeflag:?})")]
    NotRegularFile { path: String, typeflag: char },
    #[error("tar entry {path:?} has a non-canonical header")]
    NonCanonicalHeader { path: String },
    #[error("tar has data after its end-of-archive marker")]
    TrailingData,
}

/// Size of the canonical tar of files with these sizes (spec 3.1).
pub fn tar_size(sizes: impl IntoIterator<Item = u64>) -> u64 {
    END as u64 + sizes.into_iter().map(|s| BLOCK as u64 + s.div_ceil(512) * 512).sum::<u64>()
}

/// Writes the canonical tar of `files`, which must be sorted bytewise by path and have
/// paths that passed [`super::path::check_path`].
pub fn write_canonical(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::with_capacity(tar_size(files.iter().map(|(_, b)| b.len() as u64)) as usize);
    for (path, bytes) in files {
        out.extend_from_slice(&header(path, bytes.len() as u64).expect("checked path"));
        out.extend_from_slice(bytes);
        out.resize(out.len().next_multiple_of(BLOCK), 0);
    }
    out.resize(out.len() + END, 0);
    out
}

/// The canonical ustar header for a path and size (spec 3.2).
pub fn header(path: &str, size: u64) -> Option<[u8; BLOCK]> {
    let (prefix, name) = ustar_split(path)?;
    let mut h = [0u8; BLOCK];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    Some(h)
}

/// Where each file's bytes sit when `tar` is, byte for byte, the canonical tar (spec 3.1)
/// of files with these paths and sizes in this order; `None` when it is not. This is the
/// whole of a walk for a tar that is what it should be, at the cost of one comparison per
/// header and a scan of the padding; [`walk`] names what is wrong with one that is not.
pub fn canonical_layout<'a>(tar: &[u8], files: impl IntoIterator<Item = (&'a str, u64)>) -> Option<Vec<Range<usize>>> {
    let zeros = |range: Range<usize>| tar.get(range).is_some_and(|b| b.iter().all(|&x| x == 0));
    let mut at = 0usize;
    let mut spans = Vec::new();
    for (path, size) in files {
        let start = at.checked_add(BLOCK)?;
        let end = start.checked_add(usize::try_from(size).ok()?)?;
        if tar.get(at..start)? != header(path, size)?.as_slice() || !zeros(end..end.next_multiple_of(BLOCK)) {
            return None;
        }
        spans.push(start..end);
        at = end.next_multiple_of(BLOCK);
    }
    (tar.len() == at.checked_add(END)? && zeros(at..tar.len())).then_some(spans)
}

/// One file found in a tar: its path and its bytes, borrowed from the tar, which they
/// start `offset` bytes into.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub path: String,
    pub offset: usize,
    pub bytes: &'a [u8],
}

/// Walks a tar held in memory and returns its entries in order. Every header must be the
/// canonical header of its path and size, and the archive must end with exactly the
/// end-of-archive marker. Path grammar, order and the match with the signed file list are
/// the caller's checks.
pub fn walk(tar: &[u8]) -> Result<Vec<Entry<'_>>, TarError> {
    let malformed = |e: std::io::Error| TarError::Malformed(e.to_string());
    let mut archive = tar::Archive::new(tar);
    let mut entries = Vec::new();
    // raw(true): see PAX and GNU long-name headers as entries, so they are refused
    // instead of silently changing the next entry's path.
    for entry in archive.entries().map_err(malformed)?.raw(true) {
        let mut entry = entry.map_err(malformed)?;
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let typeflag = entry.header().entry_type().as_byte();
        if typeflag != b'0' {
            return Err(TarError::NotRegularFile { path, typeflag: typeflag as char });
        }
        let size = entry.header().size().map_err(malformed)?;
        let start = entry.raw_file_position() as usize;
        let end = start.checked_add(size as usize).filter(|&e| e <= tar.len());
        let (Some(end), Some(canonical)) = (end, header(&path, size)) else {
            return Err(TarError::NonCanonicalHeader { path });
        };
        if entry.header().as_bytes()[..] != canonical[..] || entry.raw_header_position() as usize + BLOCK != start {
            return Err(TarError::NonCanonicalHeader { path });
        }
        // Drain so the archive's reader advances past this entry's data.
        std::io::copy(&mut entry.by_ref().take(size), &mut std::io::sink()).map_err(malformed)?;
        entries.push(Entry { path, offset: start, bytes: &tar[start..end] });
    }
    let data_end = entries.last().map_or(0, |e| (e.offset + e.bytes.len()).next_multiple_of(BLOCK));
    if tar.len() != data_end + END || tar[data_end..].iter().any(|&b| b != 0) {
        return Err(TarError::TrailingData);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        write_canonical(&[("ClusterProfile.a/one.yaml", b"kind: ConfigMap\n"), ("ClusterProfile.a/two.yaml", &[b'x'; 600])])
    }

    #[test]
    fn is_reproducible_and_sized_as_specified() {
        let tar = sample();
        assert_eq!(tar, sample());
        assert_eq!(tar.len() as u64, tar_size([16, 600]));
        assert_eq!(tar.len(), 512 + 512 + 512 + 1024 + 1024);
    }

    #[test]
    fn walk_returns_files_in_order() {
        let tar = sample();
        let entries = walk(&tar).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].path, "ClusterProfile.a/one.yaml");
        assert_eq!(entries[0].bytes, b"kind: ConfigMap\n");
        assert_eq!(entries[1].bytes.len(), 600);
    }

    #[test]
    fn canonical_layout_finds_the_files_of_a_canonical_tar_only() {
        let tar = sample();
        let files = [("ClusterProfile.a/one.yaml", 16), ("ClusterProfile.a/two.yaml", 600)];
        assert_eq!(canonical_layout(&tar, files), Some(vec![512..528, 1536..2136]));
        assert_eq!(canonical_layout(&tar, [files[1], files[0]]), None, "order");
        assert_eq!(canonical_layout(&tar, [files[0]]), None, "an entry left over");
        assert_eq!(canonical_layout(&tar, [files[0], ("ClusterProfile.a/two.yaml", 601)]), None, "size");
        for at in [600, tar.len() - 1] {
            let mut dirty = tar.clone();
            dirty[at] = 1;
            assert_eq!(canonical_layout(&dirty, files), None, "a non-zero byte of padding at {at}");
        }
        for len in 0..tar.len() {
            assert_eq!(canonical_layout(&tar[..len], files), None, "truncated at {len}");
        }
    }

    #[test]
    fn walks_long_split_paths() {
        let long = format!("ClusterProfile.a/{}/{}.yaml", "d".repeat(80), "f".repeat(80));
        let tar = write_canonical(&[(&long, b"x")]);
        assert_eq!(walk(&tar).unwrap()[0].path, long);
    }

    #[test]
    fn walks_empty_part() {
        assert_eq!(walk(&write_canonical(&[])).unwrap(), vec![]);
    }

    #[test]
    fn rejects_symlink_hardlink_and_device_entries() {
        for (flag, c) in [(b'2', '2'), (b'1', '1'), (b'3', '3'), (b'4', '4'), (b'6', '6'), (b'x', 'x'), (b'L', 'L')] {
            let mut tar = write_canonical(&[("ClusterProfile.a/one.yaml", b"")]);
            tar[156] = flag;
            fix_checksum(&mut tar[..512]);
            assert_eq!(walk(&tar), Err(TarError::NotRegularFile { path: "ClusterProfile.a/one.yaml".into(), typeflag: c }));
        }
    }

    #[test]
    fn rejects_non_canonical_mode_and_mtime() {
        for (at, val) in [(100usize, &b"0000755\0"[..]), (136, b"00000000001\0"), (108, b"0000001\0")] {
            let mut tar = write_canonical(&[("ClusterProfile.a/one.yaml", b"x")]);
            tar[at..at + val.len()].copy_from_slice(val);
            fix_checksum(&mut tar[..512]);
            assert!(matches!(walk(&tar), Err(TarError::NonCanonicalHeader { .. })), "field at {at}");
        }
    }

    #[test]
    fn rejects_trailing_data_and_truncation() {
        let mut tar = sample();
        tar.extend_from_slice(&[0u8; 512]);
        assert_eq!(walk(&tar), Err(TarError::TrailingData));
        let tar = sample();
        for len in 0..tar.len() {
            assert!(walk(&tar[..len]).is_err(), "truncated at {len} accepted");
        }
    }

    #[test]
    fn rejects_a_flipped_byte_anywhere_in_a_header() {
        let tar = sample();
        for i in 0..512 {
            let mut bad = tar.clone();
            bad[i] ^= 0x01;
            assert!(walk(&bad).is_err(), "flip at {i} accepted");
        }
    }

    #[test]
    fn gnu_tar_lists_plain_files_with_canonical_metadata() {
        use std::io::Write;
        let mut child = std::process::Command::new("tar")
            .args(["--numeric-owner", "-tvf", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("GNU tar is on every Debian machine");
        child.stdin.take().unwrap().write_all(&sample()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let listing = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = listing.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("-rw-r--r-- 0/0"), "{listing}");
        assert!(lines[0].contains("1970-01-01 00:00 ClusterProfile.a/one.yaml"), "{listing}");
    }

    fn fix_checksum(h: &mut [u8]) {
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }
}
