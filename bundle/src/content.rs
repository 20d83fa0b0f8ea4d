//! A bundle's files grouped in parts (spec sections 2 and 4), checked on the way in.
//!
//! File bytes are shared, not owned: a verified bundle's files are slices of the part
//! tars they arrived in, so verifying does not copy them, and cloning a bundle is cheap.
//! A part is immutable once built and its clones share what is worked out from it (file
//! digests, tar digest): a publisher hands one shared profile's part to thousands of
//! bundles, and must not hash it again for each.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::path::{PathError, check_part_name, check_path, is_sealed};
use super::tar::{tar_size, write_canonical};
use crate::digest::{Digest, Hasher};
use crate::limits::Limits;
use crate::statement::Plaintext;

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
    #[error("part {part:?} is given twice")]
    DuplicatePart { part: String },
    #[error("bundle has {count} parts, over the limit of {limit}")]
    TooManyParts { count: usize, limit: usize },
    #[error("bundle holds {size} bytes of files, over the limit of {limit}")]
    TooLarge { size: u64, limit: u64 },
    #[error("file {path:?}: an encrypted file needs the .age suffix and its plaintext's size and digest, a file in clear neither")]
    Sealing { path: String },
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
#[derive(Debug, Clone, Default)]
pub struct Part {
    files: BTreeMap<String, Bytes>,
    /// What each encrypted file decrypts to (spec 2.7), by path.
    plaintexts: BTreeMap<String, Plaintext>,
    /// Worked out once, for this part and every clone of it.
    derived: Arc<Derived>,
}

#[derive(Debug, Default)]
struct Derived {
    /// Each file's digest, in path order.
    file_digests: OnceLock<Vec<Digest>>,
    /// The digest of the canonical tar.
    tar_digest: OnceLock<Digest>,
}

impl PartialEq for Part {
    fn eq(&self, other: &Part) -> bool {
        self.files == other.files && self.plaintexts == other.plaintexts
    }
}

impl Eq for Part {}

/// Files and bytes counted against the limits as they are added.
#[derive(Default)]
struct Tally {
    files: usize,
    bytes: u64,
}

impl Tally {
    fn add(&mut self, files: usize, bytes: u64, limits: &Limits) -> Result<(), ContentError> {
        self.files += files;
        self.bytes += bytes;
        if self.files > limits.files {
            return Err(ContentError::TooManyFiles { count: self.files, limit: limits.files });
        }
        if self.bytes > limits.total_bytes {
            return Err(ContentError::TooLarge { size: self.bytes, limit: limits.total_bytes });
        }
        Ok(())
    }
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

    /// Builds a bundle from parts already built, some perhaps shared with other bundles.
    pub fn from_parts(parts: impl IntoIterator<Item = (String, Part)>, limits: &Limits) -> Result<Bundle, ContentError> {
        let mut bundle = Bundle::default();
        let mut tally = Tally::default();
        for (name, part) in parts {
            check_part_name(&name)?;
            for (path, bytes) in &part.files {
                let owner = check_path(path)?;
                if owner != name {
                    return Err(ContentError::UndeclaredPart { path: path.clone(), part: owner.to_string() });
                }
                check_file_size(path, bytes, limits)?;
                tally.add(1, bytes.len() as u64, limits)?;
            }
            if bundle.parts.contains_key(&name) {
                return Err(ContentError::DuplicatePart { part: name });
            }
            bundle.parts.insert(name, part);
        }
        if bundle.parts.len() > limits.parts {
            return Err(ContentError::TooManyParts { count: bundle.parts.len(), limit: limits.parts });
        }
        Ok(bundle)
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
        let mut tally = Tally::default();
        for (path, bytes) in files {
            let part = check_path(&path)?.to_string();
            check_file_size(&path, &bytes, limits)?;
            tally.add(1, bytes.len() as u64, limits)?;
            let Some(slot) = bundle.parts.get_mut(&part) else {
                return Err(ContentError::UndeclaredPart { path, part });
            };
            // Nothing has read the part yet, so nothing derived from it is stale.
            slot.insert(path, bytes)?;
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

    /// All files in path order. That is not part order: a part's name followed by `-` or
    /// `.` sorts before the same name followed by `/`, so `a-b/x` comes before `a/x`.
    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.by_path().into_iter().map(|(path, bytes, _)| (path, bytes))
    }

    /// Every file with its digest, in path order.
    fn by_path(&self) -> Vec<(&str, &[u8], Digest)> {
        let mut files: Vec<_> = self
            .parts
            .values()
            .flat_map(|p| p.files().zip(p.file_digests().iter().copied()).map(|((path, bytes), d)| (path, bytes, d)))
            .collect();
        // Each part's run is sorted already; the stable sort merges the runs.
        files.sort_by(|a, b| a.0.cmp(b.0));
        files
    }

    /// Every file with its shared bytes, part by part.
    pub(crate) fn shared_files(&self) -> Vec<(String, Bytes)> {
        self.parts.values().flat_map(|p| p.files.iter().map(|(path, bytes)| (path.clone(), bytes.clone()))).collect()
    }

    pub fn file_count(&self) -> usize {
        self.parts.values().map(|p| p.files.len()).sum()
    }

    /// The bundle digest (spec section 4).
    pub fn digest(&self) -> Digest {
        self.known_digest.unwrap_or_else(|| bundle_digest(self.by_path().into_iter().map(|(path, _, d)| (path, d))))
    }
}

fn check_file_size(path: &str, bytes: &Bytes, limits: &Limits) -> Result<(), ContentError> {
    let size = bytes.len() as u64;
    if size > limits.file_bytes {
        return Err(ContentError::FileTooLarge { path: path.to_string(), size, limit: limits.file_bytes });
    }
    Ok(())
}

impl Part {
    /// Builds part `name` from its files, each of whose paths must lie in it.
    pub fn new<B: Into<Bytes>>(name: &str, files: impl IntoIterator<Item = (String, B)>, limits: &Limits) -> Result<Part, ContentError> {
        Part::sealed(name, files.into_iter().map(|(path, bytes)| (path, bytes.into(), None)), limits)
    }

    /// [`Part::new`] for files some of which are encrypted: those come with what they
    /// decrypt to, and only those have the `.age` suffix (spec 2.7).
    pub fn sealed(
        name: &str,
        files: impl IntoIterator<Item = (String, Bytes, Option<Plaintext>)>,
        limits: &Limits,
    ) -> Result<Part, ContentError> {
        check_part_name(name)?;
        let mut part = Part::default();
        let mut tally = Tally::default();
        for (path, bytes, plaintext) in files {
            let owner = check_path(&path)?;
            if owner != name {
                return Err(ContentError::UndeclaredPart { part: owner.to_string(), path });
            }
            if is_sealed(&path) != plaintext.is_some() {
                return Err(ContentError::Sealing { path });
            }
            check_file_size(&path, &bytes, limits)?;
            tally.add(1, bytes.len() as u64, limits)?;
            if let Some(plaintext) = plaintext {
                part.plaintexts.insert(path.clone(), plaintext);
            }
            part.insert(path, bytes)?;
        }
        Ok(part)
    }

    /// What the encrypted file `path` decrypts to; `None` for a file in clear.
    pub fn plaintext(&self, path: &str) -> Option<&Plaintext> {
        self.plaintexts.get(path)
    }

    fn insert(&mut self, path: String, bytes: Bytes) -> Result<(), ContentError> {
        if self.files.contains_key(&path) {
            return Err(ContentError::DuplicatePath { path });
        }
        self.files.insert(path, bytes);
        Ok(())
    }

    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().map(|(p, b)| (p.as_str(), &b[..]))
    }

    /// Each file's SHA-256, in path order.
    pub fn file_digests(&self) -> &[Digest] {
        self.derived.file_digests.get_or_init(|| self.files.values().map(|b| Digest::of(b)).collect())
    }

    /// The digest of the canonical tar (spec 3.4), worked out by `compute` unless this part
    /// or a clone of it already did.
    pub(crate) fn tar_digest(&self, compute: impl FnOnce() -> Digest) -> Digest {
        *self.derived.tar_digest.get_or_init(compute)
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
        h.update(&digest.hex_digits());
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
            [("ClusterProfile.b/x.yaml".to_string(), b"b\n".to_vec()), ("ClusterProfile.a/y.yaml".to_string(), b"a\n".to_vec())],
            &Limits::SPEC,
        )
        .unwrap();
        let names: Vec<_> = b.parts().map(|(n, _)| n).collect();
        assert_eq!(names, ["ClusterProfile.a", "ClusterProfile.b", "ClusterProfile.empty"]);
        assert_eq!(b.part("ClusterProfile.empty").unwrap().tar(), vec![0u8; 1024]);
        // printf 'a\n' | sha256sum; printf 'b\n' | sha256sum; then sha256sum of the listing.
        let listing =
            format!("{}  ClusterProfile.a/y.yaml\n{}  ClusterProfile.b/x.yaml\n", Digest::of(b"a\n").hex(), Digest::of(b"b\n").hex());
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

    #[test]
    fn parts_built_apart_make_the_bundle_files_make() {
        let files = [("ClusterProfile.a/x.yaml", "x\n"), ("ClusterProfile.a/y.yaml", "y\n"), ("ClusterProfile.b/z.yaml", "z\n")];
        let owned = || files.iter().map(|(p, b)| (p.to_string(), b.as_bytes().to_vec()));
        let whole = Bundle::new(parts(&["ClusterProfile.a", "ClusterProfile.b", "ClusterProfile.c"]), owned(), &Limits::SPEC).unwrap();
        let part = |name: &str| Part::new(name, owned().filter(|(p, _)| p.starts_with(&format!("{name}/"))), &Limits::SPEC).unwrap();
        let names = ["ClusterProfile.c", "ClusterProfile.a", "ClusterProfile.b"];
        let built = Bundle::from_parts(names.map(|n| (n.to_string(), part(n))), &Limits::SPEC).unwrap();
        assert_eq!(built, whole);
        assert_eq!(built.digest(), whole.digest());
    }

    #[test]
    fn parts_built_apart_are_checked_like_files() {
        let one = |p: &str| (p.to_string(), b"x".to_vec());
        let err = Part::new("ClusterProfile.a", [one("ClusterProfile.b/x.yaml")], &Limits::SPEC);
        assert_eq!(err, Err(ContentError::UndeclaredPart { path: "ClusterProfile.b/x.yaml".into(), part: "ClusterProfile.b".into() }));
        let err = Part::new("ClusterProfile.a", [one("ClusterProfile.a/x.yaml"), one("ClusterProfile.a/x.yaml")], &Limits::SPEC);
        assert_eq!(err, Err(ContentError::DuplicatePath { path: "ClusterProfile.a/x.yaml".into() }));
        let a = Part::new("ClusterProfile.a", [one("ClusterProfile.a/x.yaml"), one("ClusterProfile.a/y.yaml")], &Limits::SPEC).unwrap();
        let err = Bundle::from_parts([("ClusterProfile.b".to_string(), a.clone())], &Limits::SPEC);
        assert_eq!(err, Err(ContentError::UndeclaredPart { path: "ClusterProfile.a/x.yaml".into(), part: "ClusterProfile.a".into() }));
        let twice = [("ClusterProfile.a".to_string(), a.clone()), ("ClusterProfile.a".to_string(), Part::default())];
        assert_eq!(Bundle::from_parts(twice, &Limits::SPEC), Err(ContentError::DuplicatePart { part: "ClusterProfile.a".into() }));
        // The bundle's limits count every part's files together.
        let b = Part::new("ClusterProfile.b", [one("ClusterProfile.b/x.yaml")], &Limits::SPEC).unwrap();
        let two = Limits { files: 2, ..Limits::SPEC };
        let err = Bundle::from_parts([("ClusterProfile.a".to_string(), a), ("ClusterProfile.b".to_string(), b)], &two);
        assert_eq!(err, Err(ContentError::TooManyFiles { count: 3, limit: 2 }));
    }

    #[test]
    fn clones_of_a_part_share_what_was_worked_out() {
        let part = Part::new("ClusterProfile.a", [("ClusterProfile.a/x.yaml".to_string(), b"x\n".to_vec())], &Limits::SPEC).unwrap();
        let clone = part.clone();
        assert_eq!(clone.file_digests(), [Digest::of(b"x\n")]);
        assert!(std::ptr::eq(part.file_digests(), clone.file_digests()), "the clone's digests are the part's");
        let tar = Digest::of(&part.tar());
        assert_eq!(part.tar_digest(|| tar), tar);
        assert_eq!(clone.tar_digest(|| unreachable!("worked out once for both")), tar);
    }
}
