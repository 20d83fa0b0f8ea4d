//! What a `--key` names: a PKCS#8 PEM file, or, when it starts with `pkcs11:`, a key kept
//! in a PKCS#11 token (RFC 7512 URI). Either opens to an `airlock_bundle::Signer`; the
//! commands sign through that and never ask which it is.
//!
//! A file whose name starts with `pkcs11:` is still reachable as `./pkcs11:...`.

use std::fmt;
use std::path::{Path, PathBuf};

use airlock_bundle::Signer;

use super::pkcs11::{Pkcs11Error, Pkcs11Uri, TokenSigner};
use super::{KeyFileError, load_private_key};

/// A `--key` value, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    File(PathBuf),
    Token(Pkcs11Uri),
}

impl KeySource {
    /// Reads a `--key` value. Nothing is opened yet; a refused URI never shows its PIN.
    pub fn parse(arg: &Path) -> Result<KeySource, KeyFileError> {
        match arg.to_str() {
            Some(text) if text.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("pkcs11:")) => {
                Ok(KeySource::Token(Pkcs11Uri::parse(text).map_err(Pkcs11Error::from)?))
            }
            _ => Ok(KeySource::File(arg.to_path_buf())),
        }
    }

    /// Loads the key file, or finds the key in its token and logs in.
    pub fn open(&self) -> Result<Box<dyn Signer>, KeyFileError> {
        match self {
            KeySource::File(path) => Ok(Box::new(load_private_key(path)?)),
            KeySource::Token(uri) => Ok(Box::new(TokenSigner::open(uri)?)),
        }
    }

    /// The key file; `None` for a key in a token, which has no directory beside it.
    pub fn file(&self) -> Option<&Path> {
        match self {
            KeySource::File(path) => Some(path),
            KeySource::Token(_) => None,
        }
    }
}

/// The file's path, or the URI without its query (so without any PIN).
impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::File(path) => write!(f, "{}", path.display()),
            KeySource::Token(uri) => write!(f, "{uri}"),
        }
    }
}

/// A `--key` opened: what it named, and the signer it opened to.
pub struct OpenedKey {
    pub source: KeySource,
    pub signer: Box<dyn Signer>,
}

/// Reads and opens every `--key` value, in order.
pub fn open_signers(args: &[PathBuf]) -> Result<Vec<OpenedKey>, KeyFileError> {
    args.iter()
        .map(|arg| {
            let source = KeySource::parse(arg)?;
            let signer = source.open()?;
            Ok(OpenedKey { source, signer })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::pkcs11::UriError;

    #[test]
    fn a_path_is_a_file_and_a_pkcs11_uri_a_token() {
        assert_eq!(KeySource::parse(Path::new("keys/ops.key")).unwrap(), KeySource::File("keys/ops.key".into()));
        assert_eq!(KeySource::parse(Path::new("./pkcs11:ops")).unwrap(), KeySource::File("./pkcs11:ops".into()));
        let token = KeySource::parse(Path::new("pkcs11:object=ops?module-path=/m.so&pin-value=1234")).unwrap();
        assert_eq!(token.file(), None);
        assert_eq!(token.to_string(), "pkcs11:object=ops");
    }

    #[test]
    fn rejects_a_bad_pkcs11_uri_before_opening_anything() {
        let err = KeySource::parse(Path::new("pkcs11:object=ops?pin-value=1234")).unwrap_err();
        assert_eq!(err, KeyFileError::Pkcs11(Pkcs11Error::Uri(UriError::NoModule)));
        assert!(!err.to_string().contains("1234"));
    }

    #[test]
    fn refuses_a_module_that_cannot_be_loaded() {
        let tmp = tempfile::tempdir().unwrap();
        let module = tmp.path().join("not-a-module.so");
        std::fs::write(&module, b"not a shared object").unwrap();
        let uri = format!("pkcs11:object=ops?module-path={}&pin-value=1234", module.display());
        let err = KeySource::parse(Path::new(&uri)).unwrap().open().err().unwrap();
        assert!(matches!(&err, KeyFileError::Pkcs11(Pkcs11Error::Module { path, .. }) if *path == module), "{err}");
        assert!(!err.to_string().contains("1234"));
    }
}
