//! The two secrets a publish run derives from its first signing key, so they need no file
//! of their own and a new key renews them: the template entropy (every random value a
//! template renders) and the seal secret (`airlock_bundle::seal`). bundles-format.md
//! describes both derivations; a key file's is the one the publisher always used, a
//! token's goes through a signature because the key never leaves the token.

use airlock_bundle::{SignError, Signer};
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use ring::hmac;

/// Separates the entropy secret from any other use of the signing key.
pub(super) const ENTROPY_LABEL: &[u8] = b"airlock-publisher template entropy secret v1";
/// Separates the seal secret likewise.
pub(super) const SEAL_LABEL: &[u8] = b"airlock-publisher seal secret v1";

/// HMAC-SHA256 of `label`, keyed by what only the key's holder has: a key in memory's
/// PKCS#8 v2 PEM, a token's Ed25519 signature of `label`.
pub(super) fn derive(key: &dyn Signer, label: &[u8]) -> Result<[u8; 32], SignError> {
    let keyed_by = match key.in_memory() {
        // The PEM with seed and public key, as it always was: any other encoding would
        // change every random value a template has rendered.
        Some(file_key) => {
            let seed_only = file_key.to_pkcs8_pem();
            let inner = ed25519_dalek::SigningKey::from_pkcs8_pem(&seed_only).expect("a PEM of our own");
            inner.to_pkcs8_pem(LineEnding::LF).expect("PKCS#8 encodes").as_bytes().to_vec()
        }
        // Ed25519 signatures are deterministic (RFC 8032), so the label's is as fixed as the
        // key and as secret: only the key's holder can make it, and it is never published.
        // The labels do not start with "DSSEv1 ", so no envelope's message (spec 6.2) is one.
        None => key.sign(label)?.to_vec(),
    };
    let mac = hmac::Key::new(hmac::HMAC_SHA256, &keyed_by);
    let mut secret = [0; 32];
    secret.copy_from_slice(hmac::sign(&mac, label).as_ref());
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use airlock_bundle::{PublicKey, SigningKey};
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    /// A key that, like a token's, will not show itself.
    struct Device(SigningKey);

    impl Signer for Device {
        fn public(&self) -> PublicKey {
            self.0.public()
        }
        fn sign(&self, message: &[u8]) -> Result<[u8; 64], SignError> {
            Signer::sign(&self.0, message)
        }
    }

    fn hmac_of(key: &[u8], label: &[u8]) -> Vec<u8> {
        hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), label).as_ref().to_vec()
    }

    /// RFC 5958 OneAsymmetricKey v2 of an Ed25519 key, written out by hand.
    fn pkcs8_v2_pem(seed: [u8; 32], public: &[u8]) -> String {
        let head = [0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
        let der = [&head[..], &seed, &[0x81, 0x21, 0x00], public].concat();
        let b64 = STANDARD.encode(der);
        let lines: Vec<&str> = b64.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
        format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", lines.join("\n"))
    }

    #[test]
    fn a_key_file_keys_the_secrets_by_its_pkcs8_v2_pem_as_always() {
        let key = SigningKey::from_seed([5; 32]);
        let public = &key.public().spki_der()[12..];
        for label in [ENTROPY_LABEL, SEAL_LABEL] {
            let expected = hmac_of(pkcs8_v2_pem([5; 32], public).as_bytes(), label);
            assert_eq!(derive(&key, label).unwrap().to_vec(), expected);
        }
        assert_eq!(
            hex::encode(derive(&key, ENTROPY_LABEL).unwrap()),
            "61d1cccc5cb346c868bbe1db380bf99a6c4ffe9b06f159f23a37bddaee60c564",
            "the entropy of the seed every sealing test uses"
        );
    }

    #[test]
    fn a_token_keys_the_secrets_by_its_signature_of_the_label() {
        let device = Device(SigningKey::from_seed([5; 32]));
        for label in [ENTROPY_LABEL, SEAL_LABEL] {
            let signature = Signer::sign(&device.0, label).unwrap();
            let secret = derive(&device, label).unwrap();
            assert_eq!(secret.to_vec(), hmac_of(&signature, label));
            assert_eq!(derive(&device, label).unwrap(), secret, "the same every run");
            assert_ne!(secret, derive(&device.0, label).unwrap(), "a token's secrets are not its key file's");
        }
        assert_ne!(derive(&device, ENTROPY_LABEL).unwrap(), derive(&device, SEAL_LABEL).unwrap());
    }
}
