//! Signing keys and keyrings on disk: loading private keys (refusing ones others can
//! read), generating a key pair with its first keyring, and the next keyring of a rotation.
//!
//! The formats and the signing itself are `airlock_bundle::keyring`'s; this module only
//! deals with files, modes and the checks a person at a terminal needs.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use airlock_bundle::Limits;
use airlock_bundle::envelope::{self, KEYRING_PAYLOAD_TYPE};
use airlock_bundle::{Keyring, PublicKey, SigningKey};

/// Why a key or keyring file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("permissions {mode:04o} for '{path}' are too open: a private key must be readable by its owner only (chmod 600 '{path}')")]
    TooOpen { path: String, mode: u32 },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{path} already exists; refusing to overwrite it")]
    Exists { path: String },
    #[error("rotation: {0}")]
    Rotation(String),
}

fn io(path: &Path, e: impl std::fmt::Display) -> KeyFileError {
    KeyFileError::Io { path: path.display().to_string(), message: e.to_string() }
}

fn invalid(path: &Path, e: impl std::fmt::Display) -> KeyFileError {
    KeyFileError::Invalid { path: path.display().to_string(), message: e.to_string() }
}

/// Loads a PKCS#8 PEM private key, refusing a file that group or others may read or
/// write, as ssh does.
pub fn load_private_key(path: &Path) -> Result<SigningKey, KeyFileError> {
    let mode = std::fs::metadata(path).map_err(|e| io(path, e))?.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyFileError::TooOpen { path: path.display().to_string(), mode });
    }
    let pem = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    SigningKey::from_pkcs8_pem(&pem).map_err(|e| invalid(path, e))
}

pub fn load_public_key(path: &Path) -> Result<PublicKey, KeyFileError> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    PublicKey::parse(&text).map_err(|e| invalid(path, e))
}

pub fn load_keyring(path: &Path) -> Result<Keyring, KeyFileError> {
    let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
    Keyring::parse(&bytes, &Limits::SPEC).map_err(|e| invalid(path, e))
}

/// Reads keyring update files (spec 7.3) and checks they raise the version one after
/// another. Returns each update's bytes and the version of the last.
pub fn load_chain(paths: &[PathBuf]) -> Result<(Vec<Vec<u8>>, Option<u64>), KeyFileError> {
    let mut updates = Vec::with_capacity(paths.len());
    let mut last: Option<u64> = None;
    for path in paths {
        let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
        let env = envelope::decode(&bytes, KEYRING_PAYLOAD_TYPE, &Limits::SPEC).map_err(|e| invalid(path, e))?;
        let version = Keyring::parse(&env.payload, &Limits::SPEC).map_err(|e| invalid(path, e))?.version();
        if last.is_some_and(|l| version <= l) {
            return Err(invalid(path, format!("keyring update to version {version} comes after version {}", last.unwrap_or(0))));
        }
        last = Some(version);
        updates.push(bytes);
    }
    Ok((updates, last))
}

/// Writes `bytes` to a new file with `mode`, failing if it exists.
fn create_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), KeyFileError> {
    let mut f = OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => KeyFileError::Exists { path: path.display().to_string() },
        _ => io(path, e),
    })?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| io(path, e))
}

/// Refuses to start writing when any of `paths` exists, so a refused run leaves nothing
/// half-written.
fn refuse_existing(paths: &[&Path]) -> Result<(), KeyFileError> {
    match paths.iter().find(|p| p.exists()) {
        Some(p) => Err(KeyFileError::Exists { path: p.display().to_string() }),
        None => Ok(()),
    }
}

/// The files `keygen` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub private: PathBuf,
    pub public: PathBuf,
    pub keyring: PathBuf,
    pub key_id: String,
}

/// Generates `NAME.key` (0600), `NAME.pub` and `keyring.json` (version 1, threshold 1) in
/// `dir`, which is created when missing.
pub fn keygen(dir: &Path, name: &str) -> Result<Generated, KeyFileError> {
    let private = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let keyring_path = dir.join("keyring.json");
    refuse_existing(&[&private, &public, &keyring_path])?;
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let key = SigningKey::generate();
    let keyring = Keyring::new(1, 1, vec![key.public()], &Limits::SPEC).expect("one fresh key makes a valid keyring");
    create_new(&private, key.to_pkcs8_pem().as_bytes(), 0o600)?;
    create_new(&public, key.public().to_pem().as_bytes(), 0o644)?;
    create_new(&keyring_path, &keyring.to_json(), 0o644)?;
    Ok(Generated { private, public, keyring: keyring_path, key_id: key.public().key_id() })
}

/// The next keyring: `current` minus `remove` plus `add`, version + 1.
pub fn next_keyring(current: &Keyring, add: &[PublicKey], remove: &[PublicKey], threshold: Option<usize>) -> Result<Keyring, KeyFileError> {
    let has = |k: &PublicKey| current.keys().iter().any(|c| c.key_id() == k.key_id());
    if let Some(k) = remove.iter().find(|k| !has(k)) {
        return Err(KeyFileError::Rotation(format!("--remove key {} is not in the current keyring", k.key_id())));
    }
    if let Some(k) = add.iter().find(|k| has(k) && !remove.contains(k)) {
        return Err(KeyFileError::Rotation(format!("--add key {} is already in the current keyring", k.key_id())));
    }
    let removed: BTreeSet<String> = remove.iter().map(PublicKey::key_id).collect();
    let mut keys: Vec<PublicKey> = current.keys().iter().filter(|k| !removed.contains(&k.key_id())).copied().collect();
    keys.extend(add.iter().copied());
    let threshold = threshold.unwrap_or(current.threshold());
    Keyring::new(current.version() + 1, threshold, keys, &Limits::SPEC).map_err(|e| KeyFileError::Rotation(e.to_string()))
}

/// Signs `next` as an update with keys of `current`, refusing when fewer than its
/// threshold of distinct current keys are given: pullers would reject such an update.
pub fn sign_rotation(current: &Keyring, next: &Keyring, keys: &[SigningKey]) -> Result<Vec<u8>, KeyFileError> {
    let update = next.sign_update(keys);
    let decoded = envelope::decode(&update, KEYRING_PAYLOAD_TYPE, &Limits::SPEC).expect("own update decodes");
    current.check(&decoded).map_err(|e| {
        KeyFileError::Rotation(format!(
            "the --key files must include {} distinct key(s) of keyring version {}: {e}",
            current.threshold(),
            current.version()
        ))
    })?;
    Ok(update)
}

/// Writes the next keyring as `out` and its signed update as `out.update`.
pub fn write_rotation(out: &Path, next: &Keyring, update: &[u8]) -> Result<PathBuf, KeyFileError> {
    let mut update_path = out.as_os_str().to_owned();
    update_path.push(".update");
    let update_path = PathBuf::from(update_path);
    refuse_existing(&[out, &update_path])?;
    create_new(out, &next.to_json(), 0o644)?;
    create_new(&update_path, update, 0o644)?;
    Ok(update_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_private_keys_others_can_read() {
        let tmp = tempfile::tempdir().unwrap();
        let g = keygen(tmp.path(), "ops").unwrap();
        assert_eq!(std::fs::metadata(&g.private).unwrap().permissions().mode() & 0o777, 0o600);
        let key = load_private_key(&g.private).unwrap();
        assert_eq!(key.public().key_id(), g.key_id);
        assert_eq!(load_public_key(&g.public).unwrap().key_id(), g.key_id);
        assert_eq!(load_keyring(&g.keyring).unwrap().keys()[0].key_id(), g.key_id);
        for mode in [0o644, 0o640, 0o604, 0o660] {
            std::fs::set_permissions(&g.private, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = load_private_key(&g.private).err().unwrap();
            assert_eq!(err, KeyFileError::TooOpen { path: g.private.display().to_string(), mode });
        }
        assert!(
            format!("{}", KeyFileError::TooOpen { path: "x".into(), mode: 0o644 }).starts_with("permissions 0644 for 'x' are too open")
        );
    }

    #[test]
    fn keygen_refuses_to_overwrite() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("keyring.json"), "{}").unwrap();
        let err = keygen(tmp.path(), "ops").unwrap_err();
        assert!(matches!(err, KeyFileError::Exists { ref path } if path.ends_with("keyring.json")), "{err}");
        assert!(!tmp.path().join("ops.key").exists(), "nothing is written when refusing");
    }

    #[test]
    fn rotation_needs_the_current_threshold_and_chains() {
        let (a, b, c) = (SigningKey::from_seed([1; 32]), SigningKey::from_seed([2; 32]), SigningKey::from_seed([3; 32]));
        let current = Keyring::new(1, 2, vec![a.public(), b.public()], &Limits::SPEC).unwrap();
        let next = next_keyring(&current, &[c.public()], &[a.public()], None).unwrap();
        assert_eq!((next.version(), next.threshold(), next.keys().len()), (2, 2, 2));
        let err = sign_rotation(&current, &next, std::slice::from_ref(&a)).unwrap_err();
        assert!(matches!(err, KeyFileError::Rotation(_)), "{err}");
        let err = sign_rotation(&current, &next, std::slice::from_ref(&c)).unwrap_err();
        assert!(matches!(err, KeyFileError::Rotation(_)), "a new key cannot sign its own admission: {err}");
        let b_public = b.public();
        let update = sign_rotation(&current, &next, &[a, b]).unwrap();
        let adopted = current.follow_chain(&airlock_bundle::keyring::chain(&[update]), &Limits::SPEC).unwrap();
        assert_eq!(adopted, next);
        assert!(matches!(next_keyring(&current, &[], &[c.public()], None), Err(KeyFileError::Rotation(_))));
        assert!(matches!(next_keyring(&current, &[b_public], &[], None), Err(KeyFileError::Rotation(_))));
        assert!(matches!(next_keyring(&current, &[], &[b_public], None), Err(KeyFileError::Rotation(_))), "threshold 2 of 1 key");
    }

    #[test]
    fn chains_must_raise_the_version() {
        let tmp = tempfile::tempdir().unwrap();
        let a = SigningKey::from_seed([1; 32]);
        let v1 = Keyring::new(1, 1, vec![a.public()], &Limits::SPEC).unwrap();
        let v2 = next_keyring(&v1, &[SigningKey::from_seed([2; 32]).public()], &[], None).unwrap();
        let update = write_rotation(&tmp.path().join("v2.json"), &v2, &sign_rotation(&v1, &v2, std::slice::from_ref(&a)).unwrap()).unwrap();
        assert_eq!(load_chain(std::slice::from_ref(&update)).unwrap().1, Some(2));
        assert!(matches!(load_chain(&[update.clone(), update.clone()]), Err(KeyFileError::Invalid { .. })));
        assert!(matches!(write_rotation(&tmp.path().join("v2.json"), &v2, b"x"), Err(KeyFileError::Exists { .. })));
    }
}
