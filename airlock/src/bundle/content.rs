//! A bundle's files grouped in parts (spec sections 2 and 4), checked on the way in.
//!
//! File bytes are shared, not owned: a verified bundle's files are slices of the part
//! tars they arrived in, so verifying does not copy them, and cloning a bundle is cheap.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::path::{PathError, check_part_name, check_path};
use super::tar::{tar_size, write_canonical};
use crate::digest::{Digest, Hasher};
use crate::limits::Limits;

/// Why a set of files cannot be a bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContentError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("file {path:?} is listed twice")]
    DuplicatePath { path: String },
    #[error("file {path:?} belongs to part {part:?}, which the bundle does not declare")]
    UndeclaredPart { path: String, part: String },
    #[error("file {path:?} is {size} bytes, over the limit of {limit}")]
    FileTooLarge { path: String, size: u64, limit: u64 },
    #[error("bundle has {count} files, over the limit of {limit}")]
    TooManyFiles { count: usize, limit: usize },
    #[error("bundle has {count} parts, over the limit of {limit}")]
    TooManyParts { count: usize, limit: usize },
    #[error("bundle holds {size} bytes of files, over the limit of {limit}")]
    TooLarge { size: u64, limit: u64 },
}

/// The files of one bundle, grouped by part, every path checked.
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    parts: BTreeMap<String, Part>,
    /// The bundle digest when verification already established it (every file hashed
    /// against the signed list whose digest was checked), so it is not hashed again.
    known_digest: Option<Digest>,
}

impl PartialEq for Bundle {
    fn eq(&self, other: &Bundle) -> bool {
        self.parts == other.parts
    }
}

impl Eq for Bundle {}

/// One part: the files of one source profile (spec 2.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Part {
    files: BTreeMap<String, Bytes>,
}

impl Bundle {
    /// Builds a bundle from declared part names and files. Every file must belong to a
    /// declared part; a part may be empty (spec 2.4).
    pub fn new<P, F>(parts: P, files: F, limits: &Limits) -> Result<Bundle, ContentError>
    where
        P: IntoIterator<Item = String>,
        F: IntoIterator<Item = (String, Vec<u8>)>,
    {
        Bundle::build(parts, files.into_iter().map(|(path, bytes)| (path, Bytes::from(bytes))), limits)
    }

    /// A verified bundle: files borrowed from their part tars, and the bundle digest that
    /// verification proved they have.
    pub(crate) fn verified<P>(parts: P, files: Vec<(String, Bytes)>, digest: Digest, limits: &Limits) -> Result<Bundle, ContentError>
    where
        P: IntoIterator<Item = String>,
    {
        let bundle = Bundle::build(parts, files, limits)?;
        Ok(Bundle { known_digest: Some(digest), ..bundle })
    }

    fn build<P, F>(parts: P, files: F, limits: &Limits) -> Result<Bundle, ContentError>
    where
        P: IntoIterator<Item = String>,
        F: IntoIterator<Item = (String, Bytes)>,
    {
        let mut bundle = Bundle::default();
        for name in parts {
            check_part_name(&name)?;
            bundle.parts.entry(name).or_default();
        }
        if bundle.parts.len() > limits.parts {
            return Err(ContentError::TooManyParts { count: bundle.parts.len(), limit: limits.parts });
        }
        let (mut count, mut total) = (0usize, 0u64);
        for (path, bytes) in files {
            let part = check_path(&path)?.to_string();
            let size = bytes.len() as u64;
            if size > limits.file_bytes {
                return Err(ContentError::FileTooLarge { path, size, limit: limits.file_bytes });
            }
            count += 1;
            total += size;
            if count > limits.files {
                return Err(ContentError::TooManyFiles { count, limit: limits.files });
            }
            if total > limits.total_bytes {
                return Err(ContentError::TooLarge { size: total, limit: limits.total_bytes });
            }
            let Some(slot) = bundle.parts.get_mut(&part) else {
                return Err(ContentError::UndeclaredPart { path, part });
            };
            if slot.files.contains_key(&path) {
                return Err(ContentError::DuplicatePath { path });
            }
            slot.files.insert(path, bytes);
        }
        Ok(bundle)
    }

    /// Parts in name order.
    pub fn parts(&self) -> impl Iterator<Item = (&str, &Part)> {
        self.parts.iter().map(|(n, p)| (n.as_str(), p))
    }

    pub fn part(&self, name: &str) -> Option<&Part> {
        self.parts.get(name)
    }

    /// All files in path order (parts are prefixes, so part order is path order).
    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.parts.values().flat_map(Part::files)
    }

    pub fn file_count(&self) -> usize {
        self.parts.values().map(|p| p.files.len()).sum()
    }

    /// The bundle digest (spec section 4).
    pub fn digest(&self) -> Digest {
        self.known_digest.unwrap_or_else(|| bundle_digest(self.files().map(|(p, b)| (p, Digest::of(b)))))
    }
}

impl Part {
    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().map(|(p, b)| (p.as_str(), &b[..]))
    }

    /// The canonical tar of this part (spec section 3).
    pub fn tar(&self) -> Vec<u8> {
        write_canonical(&self.files().collect::<Vec<_>>())
    }

    pub fn tar_size(&self) -> u64 {
        tar_size(self.files.values().map(|b| b.len() as u64))
    }
}

/// The bundle digest of a file list given in path order (spec section 4): the SHA-256 of
/// its `sha256sum` listing.
pub fn bundle_digest<'a>(files: impl IntoIterator<Item = (&'a str, Digest)>) -> Digest {
    let mut h = Hasher::default();
    for (path, digest) in files {
        h.update(digest.hex().as_bytes());
        h.update(b"  ");
        h.update(path.as_bytes());
        h.update(b"\n");
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn groups_files_and_digests_like_sha256sum() {
        let b = Bundle::new(
            parts(&["ClusterProfile.b", "ClusterProfile.a", "ClusterProfile.empty"]),
            [
                ("ClusterProfile.b/x.yaml".to_string(), b"b\n".to_vec()),
                ("ClusterProfile.a/y.yaml".to_string(), b"a\n".to_vec()),
            ],
            &Limits::SPEC,
        )
        .unwrap();
        let names: Vec<_> = b.parts().map(|(n, _)| n).collect();
        assert_eq!(names, ["ClusterProfile.a", "ClusterProfile.b", "ClusterProfile.empty"]);
        assert_eq!(b.part("ClusterProfile.empty").unwrap().tar(), vec![0u8; 1024]);
        // printf 'a\n' | sha256sum; printf 'b\n' | sha256sum; then sha256sum of the listing.
        let listing = format!(
            "{}  ClusterProfile.a/y.yaml\n{}  ClusterProfile.b/x.yaml\n",
            Digest::of(b"a\n").hex(),
            Digest::of(b"b\n").hex()
        );
        assert_eq!(b.digest(), Digest::of(listing.as_bytes()));
    }

    #[test]
    fn rejects_duplicates_undeclared_parts_and_limits() {
        let one = |p: &str| (p.to_string(), b"x".to_vec());
        let decl = parts(&["ClusterProfile.a"]);
        let err = Bundle::new(decl.clone(), [one("ClusterProfile.a/x.yaml"), one("ClusterProfile.a/x.yaml")], &Limits::SPEC);
        assert_eq!(err, Err(ContentError::DuplicatePath { path: "ClusterProfile.a/x.yaml".into() }));
        let err = Bundle::new(decl.clone(), [one("ClusterProfile.b/x.yaml")], &Limits::SPEC);
        assert!(matches!(err, Err(ContentError::UndeclaredPart { .. })));
        let small = Limits { files: 1, file_bytes: 1, total_bytes: 1, ..Limits::SPEC };
        let err = Bundle::new(decl.clone(), [one("ClusterProfile.a/x.yaml"), one("ClusterProfile.a/y.yaml")], &small);
        assert_eq!(err, Err(ContentError::TooManyFiles { count: 2, limit: 1 }));
        let err = Bundle::new(decl, [("ClusterProfile.a/x.yaml".into(), b"xy".to_vec())], &small);
        assert!(matches!(err, Err(ContentError::FileTooLarge { size: 2, limit: 1, .. })));
    }
}
