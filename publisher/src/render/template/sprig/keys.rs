//! Private keys for Sprig's `genPrivateKey` and certificate functions: generating them
//! from the render's stream, writing them as Go's `pemBlockForKey` does (`RSA PRIVATE
//! KEY`, `EC PRIVATE KEY`, or PKCS#8 `PRIVATE KEY` for Ed25519), reading them back as
//! Go's `parsePrivateKeyPEM` does, and signing certificates with them.
//!
//! Departure: `genPrivateKey "dsa"` fails. DSA is deprecated (FIPS 186-5 withdrew it, Go
//! froze `crypto/dsa`) and no maintained Rust crate generates its 2048-bit parameters.

use std::sync::Arc;

use gotmpl::{Value, ValueFunc};
use p256::ecdsa::signature::Signer as _;
use p256::elliptic_curve::Generate as _;
use rand_chacha::ChaCha20Rng;
use rsa::pkcs1::{DecodeRsaPrivateKey as _, EncodeRsaPrivateKey as _};
use rsa::pkcs8::{DecodePrivateKey as _, EncodePublicKey as _};
use sha2::{Digest as _, Sha256};
use x509_cert::der;
use x509_cert::der::pem::LineEnding;

use super::args::{failure, str_arg, text};
use crate::render::template::session::Session;

/// What Go's `x509.MarshalPKCS8PrivateKey` writes for an Ed25519 seed: version 0,
/// algorithm id-Ed25519, then the seed as an OCTET STRING inside the privateKey OCTET STRING.
const ED25519_PKCS8_PREFIX: [u8; 16] = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];

/// DigestInfo before a SHA-256 digest in a PKCS #1 v1.5 signature (RFC 8017, 9.2).
const SHA256_DIGEST_INFO: [u8; 19] =
    [0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20];

pub(super) enum PrivateKey {
    Rsa(Box<rsa::PrivateKey>),
    Ecdsa(p256::SecretKey),
    Ed25519(ed25519_dalek::SigningKey),
}

pub(super) fn funcs(session: &Session) -> Vec<(&'static str, ValueFunc)> {
    let session = session.clone();
    vec![(
        "genPrivateKey",
        Arc::new(move |a: &[Value]| {
            let kind = str_arg("genPrivateKey", a, 1, 0)?;
            let key = match kind {
                "" | "rsa" => generate(&session, "genPrivateKey", Kind::Rsa(4096))?,
                "ecdsa" => generate(&session, "genPrivateKey", Kind::Ecdsa)?,
                "ed25519" => generate(&session, "genPrivateKey", Kind::Ed25519)?,
                "dsa" => return Err(failure("genPrivateKey", "DSA keys are not supported (deprecated); use rsa, ecdsa or ed25519")),
                other => return Err(failure("genPrivateKey", format!("Unknown type {other}"))),
            };
            Ok(text(key.to_pem().map_err(|e| failure("genPrivateKey", e))?))
        }),
    )]
}

pub(super) enum Kind {
    Rsa(usize),
    Ecdsa,
    Ed25519,
}

/// A new key of `kind` from the render's stream, counted against its budget.
pub(super) fn generate(session: &Session, name: &str, kind: Kind) -> gotmpl::Result<PrivateKey> {
    session.costly(name)?;
    session.random(name, |stream: &mut ChaCha20Rng| {
        Ok(match kind {
            Kind::Rsa(bits) => PrivateKey::Rsa(Box::new(
                rsa::PrivateKey::new(stream, bits).map_err(|e| failure(name, format!("error generating rsa key: {e}")))?,
            )),
            Kind::Ecdsa => PrivateKey::Ecdsa(p256::SecretKey::generate_from_rng(stream)),
            Kind::Ed25519 => PrivateKey::Ed25519(ed25519_dalek::SigningKey::generate(stream)),
        })
    })
}

impl PrivateKey {
    /// The key as Go's `pem.EncodeToMemory(pemBlockForKey(key))` writes it.
    pub fn to_pem(&self) -> Result<String, String> {
        let (label, der) = match self {
            PrivateKey::Rsa(key) => ("RSA PRIVATE KEY", key.to_pkcs1_der().map_err(|e| e.to_string())?.as_bytes().to_vec()),
            PrivateKey::Ecdsa(key) => ("EC PRIVATE KEY", key.to_sec1_der().map_err(|e| e.to_string())?.to_vec()),
            PrivateKey::Ed25519(key) => ("PRIVATE KEY", [ED25519_PKCS8_PREFIX.as_slice(), key.as_bytes()].concat()),
        };
        der::pem::encode_string(label, LineEnding::LF, &der).map_err(|e| e.to_string())
    }

    /// Go's `parsePrivateKeyPEM`: the first PEM block, as PKCS #8, PKCS #1 or SEC 1.
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        let (label, der) = first_pem_block(pem).ok_or("no PEM data in input")?;
        match label.as_str() {
            "PRIVATE KEY" => Self::from_pkcs8(&der).map_err(|e| format!("decoding PEM as PKCS#8: {e}")),
            "RSA PRIVATE KEY" => rsa::PrivateKey::from_pkcs1_der(&der)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(|e| format!("parsing RSA private key from PEM: {e}")),
            "EC PRIVATE KEY" => {
                p256::SecretKey::from_sec1_der(&der).map(PrivateKey::Ecdsa).map_err(|e| format!("parsing EC private key from PEM: {e}"))
            }
            other if other.ends_with(" PRIVATE KEY") => Err(format!("invalid private key type {other}")),
            other => Err(format!("no private key data in PEM block of type {other}")),
        }
    }

    fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        if let Ok(key) = rsa::PrivateKey::from_pkcs8_der(der) {
            return Ok(PrivateKey::Rsa(Box::new(key)));
        }
        if let Ok(key) = p256::SecretKey::from_pkcs8_der(der) {
            return Ok(PrivateKey::Ecdsa(key));
        }
        ed25519_dalek::SigningKey::from_pkcs8_der(der).map(PrivateKey::Ed25519).map_err(|e| e.to_string())
    }

    /// The DER SubjectPublicKeyInfo of the public half.
    pub fn public_key_info(&self) -> Result<Vec<u8>, String> {
        let document = match self {
            PrivateKey::Rsa(key) => key.to_public_key().to_public_key_der(),
            PrivateKey::Ecdsa(key) => key.public_key().to_public_key_der(),
            PrivateKey::Ed25519(key) => key.verifying_key().to_public_key_der(),
        };
        document.map(|d| d.as_bytes().to_vec()).map_err(|e| e.to_string())
    }

    /// The DER AlgorithmIdentifier Go's `x509.CreateCertificate` signs with for this key:
    /// SHA-256 with RSA (NULL parameters), ECDSA with SHA-256, or Ed25519.
    pub fn signature_algorithm(&self) -> &'static [u8] {
        match self {
            PrivateKey::Rsa(_) => &[0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05, 0x00],
            PrivateKey::Ecdsa(_) => &[0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02],
            PrivateKey::Ed25519(_) => &[0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70],
        }
    }

    /// The signature of `message` for that algorithm; all three are deterministic (ECDSA
    /// per RFC 6979), so a certificate's bytes follow from its fields and key.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            PrivateKey::Rsa(key) => {
                let padding = rsa::pkcs1v15::Pkcs1v15Sign { hash_len: Some(32), prefix: SHA256_DIGEST_INFO.into() };
                key.sign(padding, &Sha256::digest(message)).map_err(|e| e.to_string())
            }
            PrivateKey::Ecdsa(key) => {
                let signature: p256::ecdsa::Signature = p256::ecdsa::SigningKey::from(key).sign(message);
                Ok(signature.to_der().as_bytes().to_vec())
            }
            PrivateKey::Ed25519(key) => Ok(key.sign(message).to_bytes().to_vec()),
        }
    }
}

/// The label and bytes of the first PEM block in `text`, as Go's `pem.Decode` finds it
/// after any leading text.
pub(super) fn first_pem_block(text: &str) -> Option<(String, Vec<u8>)> {
    let start = text.find("-----BEGIN ")?;
    let label_end = start + text[start..].find("-----\n").or_else(|| text[start..].find("-----\r\n"))?;
    let label = &text[start + "-----BEGIN ".len()..label_end];
    let end_marker = format!("-----END {label}-----");
    let end = label_end + text[label_end..].find(&end_marker)? + end_marker.len();
    let (decoded_label, der) = der::pem::decode_vec(&text.as_bytes()[start..end]).ok()?;
    Some((decoded_label.to_string(), der))
}
