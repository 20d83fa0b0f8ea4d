//! What a reader keeps of a bundle it read through an OCI manifest, so that a store which
//! says that manifest is still the newest needs no reading again (spec 8, its last
//! paragraph). What is kept are bytes, not conclusions: restoring them checks that the
//! manifest's bytes hash to the digest the store just confirmed and that the envelope and
//! keyring chain hash to what that manifest names, and the caller verifies them in full. A
//! reader's own state, edited, can thus at worst make it read again.

use serde::{Deserialize, Serialize};

use airlock_bundle::digest::Digest;

use crate::fetched::{EnvelopeDigests, Fetched, Locator};
use crate::oci::RawManifest;

/// The manifest, envelope and keyring chain as a store served them, base64 in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadBytes {
    #[serde(with = "base64_bytes")]
    pub manifest: Vec<u8>,
    #[serde(with = "base64_bytes")]
    pub envelope: Vec<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "base64_opt")]
    pub keyring_chain: Option<Vec<u8>>,
}

impl ReadBytes {
    /// How many bytes keeping these takes.
    pub fn len(&self) -> usize {
        self.manifest.len() + self.envelope.len() + self.keyring_chain.as_ref().map_or(0, Vec::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Fetched {
    /// What to keep so that [`Fetched::from_read_bytes`] can stand in for reading this again;
    /// `None` for Git, whose reads go through no manifest.
    pub fn read_bytes(&self) -> Option<ReadBytes> {
        match &self.locator {
            Locator::Oci(raw) => {
                Some(ReadBytes { manifest: raw.bytes.clone(), envelope: self.envelope.clone(), keyring_chain: self.keyring_chain.clone() })
            }
            Locator::Git { .. } => None,
        }
    }

    /// The bundle `kept` holds, for a store that just confirmed `manifest` as its newest,
    /// when `kept` is exactly that manifest and what it names; `None` when it is not (kept
    /// bytes damaged or edited), and the caller reads again.
    pub fn from_read_bytes(store: &str, kept: &ReadBytes, manifest: &Digest) -> Option<Fetched> {
        if Digest::of(&kept.manifest) != *manifest {
            return None;
        }
        let raw = RawManifest::parse(store, "kept manifest", kept.manifest.clone()).ok()?;
        let named = EnvelopeDigests::of_manifest(store, &raw.manifest).ok()?;
        let chain = kept.keyring_chain.as_deref().map(Digest::of);
        (named.envelope == Digest::of(&kept.envelope) && named.chain == chain).then(|| Fetched {
            envelope: kept.envelope.clone(),
            keyring_chain: kept.keyring_chain.clone(),
            locator: Locator::Oci(Box::new(raw)),
        })
    }
}

mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        STANDARD.decode(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

mod base64_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(bytes) => super::base64_bytes::serialize(bytes, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped(#[serde(with = "super::base64_bytes")] Vec<u8>);
        Ok(Option::<Wrapped>::deserialize(d)?.map(|Wrapped(bytes)| bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::PublishMeta;
    use crate::oci;
    use airlock_bundle::testkit::Fixture;

    fn fetched(chain: Option<Vec<u8>>) -> Fetched {
        let fx = Fixture::new(1);
        let mut signed = fx.signed(1, Fixture::files());
        signed.keyring_chain = chain;
        let artifact = oci::artifact(&signed, &PublishMeta::default(), &oci::GzipCache::default());
        let raw = RawManifest::parse("test", "manifest", artifact.manifest_bytes.clone()).unwrap();
        Fetched { envelope: signed.envelope.clone(), keyring_chain: signed.keyring_chain.clone(), locator: Locator::Oci(Box::new(raw)) }
    }

    #[test]
    fn kept_bytes_stand_in_only_for_the_manifest_they_are() {
        for chain in [None, Some(b"[]".to_vec())] {
            let original = fetched(chain);
            let kept = original.read_bytes().unwrap();
            let back: ReadBytes = serde_json::from_str(&serde_json::to_string(&kept).unwrap()).unwrap();
            assert_eq!(back, kept);
            let digest = original.manifest().unwrap();
            let restored = Fetched::from_read_bytes("test", &kept, &digest).expect("intact");
            assert_eq!(
                (restored.manifest(), restored.envelope, restored.keyring_chain),
                (Some(digest), original.envelope.clone(), original.keyring_chain.clone())
            );

            assert!(Fetched::from_read_bytes("test", &kept, &Digest::of(b"newer")).is_none(), "another manifest");
            let mut envelope = kept.clone();
            envelope.envelope[10] ^= 1;
            assert!(Fetched::from_read_bytes("test", &envelope, &digest).is_none(), "an edited envelope");
            let mut dropped = kept.clone();
            dropped.keyring_chain = if kept.keyring_chain.is_some() { None } else { Some(b"[]".to_vec()) };
            assert!(Fetched::from_read_bytes("test", &dropped, &digest).is_none(), "a chain dropped or added");
        }
    }

    #[test]
    fn git_reads_keep_nothing() {
        let git = Fetched { envelope: b"{}".to_vec(), keyring_chain: None, locator: Locator::Git { commit: "0".repeat(40) } };
        assert_eq!(git.read_bytes(), None);
    }
}
