//! Encrypting a cluster's confidential files (spec 2.7), the publisher's half of
//! [`crate::verify::VerifiedBundle::decrypt`].
//!
//! A file is sealed as an ASCII-armored age file, at its path with `.age` appended, and the
//! statement signs both that ciphertext (as every file) and the plaintext's size and
//! digest. The plaintext starts with a comment line holding a salt, so the digest a store
//! can read cannot be checked against guessed passwords.
//!
//! Every random value of a seal derives from one HMAC of the publisher's secret over the
//! cluster and its recipients, the cluster's seed: the age file key and its header, once
//! for all the cluster's files, and for each file, from the seed keyed over its path and
//! digest, the salt and the payload nonce. A file that did not change seals to the same
//! bytes, so an unchanged cluster is not published again, while anyone without the secret
//! sees values they cannot tell from random ones. Equal ciphertexts thus only ever say
//! "unchanged", which the bundle digest says anyway. One header per cluster means one
//! X25519 exchange per recipient and cluster, not per file, and one call to the secret,
//! which may sit behind an oracle in another process; the seed gives whoever holds it no
//! more than that oracle already answers for the cluster.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use ring::hmac;

use crate::age::{FileKey, Recipient};
use crate::cluster::ClusterId;
use crate::content::{ContentError, Part};
use crate::digest::Digest;
use crate::limits::Limits;
use crate::mac::{Mac, framed};
use crate::path::SEALED_SUFFIX;
use crate::statement::Plaintext;

/// Separates this use of the publisher's secret from any other HMAC under it.
const DOMAIN: &[u8] = b"airlock seal v2";
/// What the first line of every sealed plaintext starts with (spec 2.7).
pub const SALT_PREFIX: &str = "# airlock.dev/salt: ";

/// Seals files for one cluster.
pub struct Sealer {
    cluster: String,
    recipients: Vec<Recipient>,
    secret: Arc<dyn Mac>,
    /// The seed's HMAC key and the file key, made by the first file sealed: a cluster
    /// with nothing to seal costs neither the oracle call nor the X25519 exchanges.
    keys: OnceLock<(hmac::Key, FileKey)>,
}

impl Sealer {
    /// A sealer to `recipients`, the cluster's own first, keyed by the publisher's
    /// `secret`, which may be an oracle. `recipients` must not be empty.
    pub fn new(cluster: &ClusterId, recipients: Vec<Recipient>, secret: Arc<dyn Mac>) -> Sealer {
        assert!(!recipients.is_empty(), "a seal needs a recipient");
        Sealer { cluster: cluster.to_string(), recipients, secret, keys: OnceLock::new() }
    }

    /// The recipients as the statement lists them.
    pub fn recipients(&self) -> Vec<String> {
        self.recipients.iter().map(ToString::to_string).collect()
    }

    /// `part` with every file for which `confidential` holds sealed; the others as they are.
    pub fn seal_part(
        &self,
        name: &str,
        part: &Part,
        confidential: impl Fn(&str, &[u8]) -> bool,
        limits: &Limits,
    ) -> Result<Part, ContentError> {
        let files = part.files().map(|(path, bytes)| match part.plaintext(path) {
            Some(plaintext) => (path.to_string(), Bytes::copy_from_slice(bytes), Some(plaintext.clone())),
            None if confidential(path, bytes) => {
                let (path, sealed, plaintext) = self.seal_file(path, bytes);
                (path, Bytes::from(sealed), Some(plaintext))
            }
            None => (path.to_string(), Bytes::copy_from_slice(bytes), None),
        });
        Part::sealed(name, files, limits)
    }

    /// One file sealed: its new path, the armored age file, and what it decrypts to.
    pub fn seal_file(&self, path: &str, bytes: &[u8]) -> (String, Vec<u8>, Plaintext) {
        let (seed, file_key) = self.keys.get_or_init(|| self.keys());
        let digest = Digest::of(bytes).hex_digits();
        let key = hmac::Key::new(hmac::HMAC_SHA256, hmac::sign(seed, &framed(b"file", &[path.as_bytes(), &digest])).as_ref());
        let salt = hmac::sign(&key, b"salt");
        let mut entropy = [0; 32];
        entropy.copy_from_slice(hmac::sign(&key, b"age").as_ref());

        let mut plaintext = format!("{SALT_PREFIX}{}\n", hex::encode(salt.as_ref())).into_bytes();
        plaintext.extend_from_slice(bytes);
        let sealed = file_key.encrypt(&plaintext, &entropy);
        let signed = Plaintext { size: plaintext.len() as u64, sha256: Digest::of(&plaintext).hex() };
        (format!("{path}{SEALED_SUFFIX}"), sealed, signed)
    }

    /// The cluster's seed, as an HMAC key, and the file key and header it gives.
    fn keys(&self) -> (hmac::Key, FileKey) {
        let mut message = framed(DOMAIN, &[self.cluster.as_bytes()]);
        for recipient in &self.recipients {
            message.extend_from_slice(recipient.as_bytes());
        }
        let seed = hmac::Key::new(hmac::HMAC_SHA256, &self.secret.mac(&message));
        let mut entropy = [0; 32];
        entropy.copy_from_slice(hmac::sign(&seed, b"header").as_ref());
        let file_key = FileKey::new(&self.recipients, &entropy);
        (seed, file_key)
    }
}

/// Whether a file holds a `v1` `Secret`, which is sealed for a cluster with a recipient.
/// A file that does not parse counts as holding one: it is better sealed for nothing than
/// left in clear by mistake.
pub fn holds_secret(bytes: &[u8]) -> bool {
    // A publish asks this of every file of most bundles: `str::contains` searches with
    // SIMD, where a scan of every six-byte window costs a comparison per byte.
    let text = match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains("Secret") => return false,
        Ok(text) => text,
        Err(_) => return bytes.windows(6).any(|w| w == b"Secret"),
    };
    match crate::yaml::manifests(text) {
        Ok(documents) => documents.iter().any(|d| is_secret(&d.value)),
        Err(_) => true,
    }
}

/// Whether a manifest is a core `v1` `Secret`.
pub fn is_secret(manifest: &serde_json::Value) -> bool {
    manifest.get("kind").and_then(|k| k.as_str()) == Some("Secret") && manifest.get("apiVersion").and_then(|v| v.as_str()) == Some("v1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::age::{self, Identity};

    const SECRET_YAML: &[u8] = b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: web\nstringData:\n  password: hunter2\n";

    fn secret(byte: u8) -> Arc<dyn Mac> {
        Arc::new(crate::mac::Secret::new(&[byte; 32]))
    }

    fn sealer(identity: &Identity) -> Sealer {
        Sealer::new(&"fleet/edge-1".parse().unwrap(), vec![identity.recipient()], secret(7))
    }

    /// The salt pins the derivation: an upgrade that changed it would seal every unchanged
    /// Secret anew and publish every cluster again. Computed apart, with Python's hmac and
    /// the recipient from Python's `cryptography`.
    #[test]
    fn seals_with_the_salt_computed_apart() {
        let (_, sealed, _) = sealer(&Identity::from_secret([1; 32])).seal_file("ClusterProfile.web/Secret.web.db.yaml", SECRET_YAML);
        let opened = age::decrypt(&sealed, &[Identity::from_secret([1; 32])], 1 << 20).unwrap();
        let first = std::str::from_utf8(&opened).unwrap().lines().next().unwrap().to_string();
        assert_eq!(first, format!("{SALT_PREFIX}142c98989a41c02dac0bebd37b14e79363809fb33358cc38aa3e4e7e6fcc6db2"));
    }

    #[test]
    fn seals_to_the_same_bytes_until_something_it_covers_changes() {
        let identity = Identity::from_secret([1; 32]);
        let (path, sealed, plaintext) = sealer(&identity).seal_file("ClusterProfile.web/Secret.web.db.yaml", SECRET_YAML);
        assert_eq!(path, "ClusterProfile.web/Secret.web.db.yaml.age");
        assert_eq!(sealer(&identity).seal_file("ClusterProfile.web/Secret.web.db.yaml", SECRET_YAML).1, sealed);
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
        let opened = age::decrypt(&sealed, std::slice::from_ref(&identity), 1 << 20).unwrap();
        assert_eq!((opened.len() as u64, Digest::of(&opened).hex()), (plaintext.size, plaintext.sha256.clone()));
        let first = std::str::from_utf8(&opened).unwrap().lines().next().unwrap();
        assert!(first.starts_with(SALT_PREFIX) && first.len() == SALT_PREFIX.len() + 64, "{first}");
        assert_eq!(&opened[first.len() + 1..], SECRET_YAML);
        let other_path = sealer(&identity).seal_file("ClusterProfile.web/Secret.web.db2.yaml", SECRET_YAML);
        let other_cluster = Sealer::new(&"fleet/edge-2".parse().unwrap(), vec![identity.recipient()], secret(7))
            .seal_file("ClusterProfile.web/Secret.web.db.yaml", SECRET_YAML);
        let other_secret = Sealer::new(&"fleet/edge-1".parse().unwrap(), vec![identity.recipient()], secret(8))
            .seal_file("ClusterProfile.web/Secret.web.db.yaml", SECRET_YAML);
        for (what, other) in [("path", other_path), ("cluster", other_cluster), ("secret", other_secret)] {
            assert_ne!(other.1, sealed, "{what}");
            assert_ne!(other.2, plaintext, "{what}: the salt changes with it");
        }
    }

    /// The binary age file inside the armor.
    fn dearmor(sealed: &[u8]) -> Vec<u8> {
        use base64::Engine;
        let text = std::str::from_utf8(sealed).unwrap();
        let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        base64::engine::general_purpose::STANDARD.decode(body).unwrap()
    }

    /// Everything before the payload nonce: the intro, the stanzas and the MAC line.
    fn header(sealed: &[u8]) -> Vec<u8> {
        let binary = dearmor(sealed);
        let end = binary.windows(4).position(|w| w == b"\n---").unwrap() + 1;
        let end = end + binary[end..].iter().position(|&c| c == b'\n').unwrap() + 1;
        binary[..end].to_vec()
    }

    #[test]
    fn one_cluster_shares_a_header_across_files_but_no_payload_key() {
        let (identity, other) = (Identity::from_secret([1; 32]), Identity::from_secret([2; 32]));
        let sealer = sealer(&identity);
        let (_, a, _) = sealer.seal_file("ClusterProfile.web/Secret.web.db.yaml", SECRET_YAML);
        let (_, b, _) = sealer.seal_file("ClusterProfile.web/Secret.web.db2.yaml", SECRET_YAML);
        let (_, c, _) = sealer.seal_file("ClusterProfile.web/Secret.web.db.yaml", b"apiVersion: v1\nkind: Secret\n");
        assert_eq!(header(&a), header(&b));
        assert_eq!(header(&a), header(&c));
        let nonce = |sealed: &[u8]| {
            let binary = dearmor(sealed);
            binary[header(sealed).len()..][..16].to_vec()
        };
        assert!(nonce(&a) != nonce(&b) && nonce(&a) != nonce(&c) && nonce(&b) != nonce(&c), "a payload key per file");
        let mut opener = age::Opener::new(std::slice::from_ref(&identity));
        for sealed in [&a, &b, &c] {
            assert_eq!(opener.open(sealed, 1 << 20).unwrap(), age::decrypt(sealed, std::slice::from_ref(&identity), 1 << 20).unwrap());
        }
        let two = Sealer::new(&"fleet/edge-1".parse().unwrap(), vec![identity.recipient(), other.recipient()], secret(7));
        let other_cluster = Sealer::new(&"fleet/edge-2".parse().unwrap(), vec![identity.recipient()], secret(7));
        for (what, sealer) in [("recipients", two), ("cluster", other_cluster)] {
            let (_, d, _) = sealer.seal_file("ClusterProfile.web/Secret.web.db.yaml", SECRET_YAML);
            assert_ne!(header(&d), header(&a), "{what}: another file key");
        }
    }

    #[test]
    fn finds_secrets_among_documents_and_counts_unreadable_files_as_secret() {
        assert!(holds_secret(SECRET_YAML));
        assert!(holds_secret(
            b"kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\n---\nkind: Secret\napiVersion: v1\nmetadata: {name: b}\n"
        ));
        assert!(!holds_secret(b"kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\ndata: {k: v}\n"));
        assert!(!holds_secret(b"kind: Secret\napiVersion: example.com/v1\nmetadata: {name: a}\n"));
        assert!(!holds_secret(b"kind: ConfigMap\napiVersion: v1\nmetadata: {name: Secret}\n"));
        assert!(holds_secret(b"kind: Secret\n\xff"));
        assert!(holds_secret(b"kind: Secret\n  bad: [indent\n"));
    }

    #[test]
    fn seals_only_what_is_confidential_and_keeps_sealed_files() {
        let identity = Identity::from_secret([1; 32]);
        let part = Part::new(
            "ClusterProfile.web",
            [
                ("ClusterProfile.web/ConfigMap.web.a.yaml".to_string(), b"kind: ConfigMap\n".to_vec()),
                ("ClusterProfile.web/Secret.web.db.yaml".to_string(), SECRET_YAML.to_vec()),
            ],
            &Limits::SPEC,
        )
        .unwrap();
        let sealer = sealer(&identity);
        let sealed = sealer.seal_part("ClusterProfile.web", &part, |_, bytes| holds_secret(bytes), &Limits::SPEC).unwrap();
        let paths: Vec<&str> = sealed.files().map(|(p, _)| p).collect();
        assert_eq!(paths, ["ClusterProfile.web/ConfigMap.web.a.yaml", "ClusterProfile.web/Secret.web.db.yaml.age"]);
        assert!(sealed.plaintext(paths[0]).is_none() && sealed.plaintext(paths[1]).is_some());
        let again = sealer.seal_part("ClusterProfile.web", &sealed, |_, bytes| holds_secret(bytes), &Limits::SPEC).unwrap();
        assert_eq!(again, sealed, "a sealed file is not sealed twice, and the rest only when confidential");
    }
}
