//! Signing keys kept in a PKCS#11 token (an HSM, a KMS with a PKCS#11 interface,
//! SoftHSM2): `uri` reads the RFC 7512 URI that names one, `token` opens it and signs
//! through `CKM_EDDSA` behind `airlock_bundle::Signer`. The key never enters this process.

mod token;
mod uri;

use std::path::PathBuf;

pub use token::TokenSigner;
pub use uri::{Pkcs11Uri, UriError};

/// Why the key a `pkcs11:` URI names cannot sign. No message carries the PIN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Pkcs11Error {
    #[error(transparent)]
    Uri(#[from] UriError),
    #[error("pkcs11 module {path}: {message}")]
    Module { path: PathBuf, message: String },
    #[error("no token matches the pkcs11 URI's '{attributes}'")]
    NoToken { attributes: String },
    #[error("{count} tokens match the pkcs11 URI's '{attributes}': add token=, serial= or slot-id= to name one")]
    TwoTokens { attributes: String, count: usize },
    #[error("pkcs11 pin-source {path}: {message}")]
    PinSource { path: PathBuf, message: String },
    #[error("pkcs11 login to the token of '{attributes}' refused: {message} (check pin-value or pin-source)")]
    Login { attributes: String, message: String },
    #[error("no {what} in the token matches the pkcs11 URI's '{attributes}'{}", if *logged_in { "" } else { " (no pin-value or pin-source given: a token shows its private keys after login only)" })]
    NoKey { what: &'static str, attributes: String, logged_in: bool },
    #[error("{count} objects of class {what} match the pkcs11 URI's '{attributes}': add object= or id= to name one")]
    TwoKeys { what: &'static str, attributes: String, count: usize },
    #[error("{uri}: the key is not Ed25519 (CKK_EC_EDWARDS on edwards25519) but {found}; bundles are signed with Ed25519 only")]
    NotEd25519 { uri: String, found: String },
    #[error("{uri}: the public key object beside the private key is unusable: {why}")]
    BadPublicKey { uri: String, why: String },
    #[error("{uri}: the private key's signature does not verify with the public key of the same object and id")]
    Mismatch { uri: String },
    #[error("{uri}: {message}")]
    Device { uri: String, message: String },
}
