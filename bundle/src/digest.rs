//! SHA-256 digests as the contract writes them: `sha256:<lowercase hex>`.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// A SHA-256 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 32]);

/// A string that is not `sha256:` followed by 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a sha256 digest: {0:?}")]
pub struct BadDigest(pub String);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// Lowercase hex, without the `sha256:` prefix.
    pub fn hex(&self) -> String {
        String::from_utf8(self.hex_digits().to_vec()).expect("hex digits are ASCII")
    }

    /// The 64 digits of [`Digest::hex`], without allocating. A publish writes digests as hex
    /// for every file, part and manifest (file lists, statements, OCI manifests), and
    /// `hex::encode` collects them a `char` at a time.
    pub fn hex_digits(&self) -> [u8; 64] {
        let mut digits = [0u8; 64];
        hex::encode_to_slice(self.0, &mut digits).expect("32 bytes are 64 hex digits");
        digits
    }

    /// The first [`NAME_HASH_DIGITS`] hex digits: what stands for a longer name, URL or
    /// source inside a name of its own (a cache directory, a file, a shortened name).
    pub fn name_hex(&self) -> String {
        let digits = self.hex_digits();
        String::from_utf8(digits[..NAME_HASH_DIGITS].to_vec()).expect("hex digits are ASCII")
    }

    /// Parses 64 lowercase hex digits (no prefix).
    pub fn from_hex(s: &str) -> Result<Digest, BadDigest> {
        let bad = || BadDigest(s.to_string());
        if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).map_err(|_| bad())?;
        Ok(Digest(out))
    }
}

impl FromStr for Digest {
    type Err = BadDigest;
    fn from_str(s: &str) -> Result<Digest, BadDigest> {
        let hex = s.strip_prefix("sha256:").ok_or_else(|| BadDigest(s.to_string()))?;
        Digest::from_hex(hex)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.hex_digits();
        f.write_str("sha256:")?;
        f.write_str(std::str::from_utf8(&digits).expect("hex digits are ASCII"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Hex digits of a digest that stand for a longer name inside a name ([`Digest::name_hex`]):
/// 64 bits keep apart far more names than one store, bundle or cluster holds.
pub const NAME_HASH_DIGITS: usize = 16;

/// What [`hash_suffixed`] adds to its head: a `-` and the hash.
pub const HASH_SUFFIX_BYTES: usize = NAME_HASH_DIGITS + 1;

/// `<head>-<hash>`, or the hash alone when `head` is empty, where the hash is the
/// [`Digest::name_hex`] of `whole`: a name too long for its limit, cut by the caller to a
/// readable `head` of at most the limit less [`HASH_SUFFIX_BYTES`], that stays as distinct
/// as the whole it stands for.
pub fn hash_suffixed(head: &str, whole: &[u8]) -> String {
    let hash = Digest::of(whole).name_hex();
    if head.is_empty() { hash } else { format!("{head}-{hash}") }
}

/// Incremental hashing for streams.
#[derive(Default, Clone)]
pub struct Hasher(Sha256);

impl Hasher {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    pub fn finish(self) -> Digest {
        Digest(self.0.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortened_names_end_in_the_hash_of_the_whole() {
        let hex = Digest::of(b"fleet/edge-1").hex();
        assert_eq!(Digest::of(b"fleet/edge-1").name_hex(), hex[..NAME_HASH_DIGITS]);
        assert_eq!(hash_suffixed("fleet", b"fleet/edge-1"), format!("fleet-{}", &hex[..16]));
        assert_eq!(hash_suffixed("", b"fleet/edge-1").len(), HASH_SUFFIX_BYTES - 1);
    }

    #[test]
    fn round_trips_and_rejects_uppercase_and_short() {
        let d = Digest::of(b"{}");
        assert_eq!(d.to_string(), "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
        assert_eq!(d.to_string().parse::<Digest>().unwrap(), d);
        assert!(d.to_string().to_uppercase().parse::<Digest>().is_err());
        assert!("sha256:abcd".parse::<Digest>().is_err());
        assert!(d.hex().parse::<Digest>().is_err(), "prefix is required");
        assert_eq!(d.hex_digits(), *b"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
        assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{d}\""));
    }
}
