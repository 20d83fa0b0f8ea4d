//! Signing keys and keyrings on disk: loading private keys (refusing ones others can
//! read), generating a key pair with its first keyring; the next keyring of a rotation is
//! `rotation`'s. A key may stay in a PKCS#11 token instead of a file: `source` tells the
//! two apart, `pkcs11` opens a token's.
//!
//! The formats and the signing itself are `airlock_bundle::keyring`'s; this module only
//! deals with files, modes and the checks a person at a terminal needs.

pub mod pkcs11;
mod rotation;
mod source;

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use airlock_bundle::Limits;
use airlock_bundle::envelope::{self, KEYRING_PAYLOAD_TYPE};
use airlock_bundle::keyring::Role;
use airlock_bundle::{Keyring, PublicKey, SigningKey};

pub use rotation::{Change, cosign_rotation, next_keyring, sign_rotation, write_rotation};
pub use source::open_signers;

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
    #[error(transparent)]
    Pkcs11(#[from] pkcs11::Pkcs11Error),
}

pub(crate) fn io(path: &Path, e: impl std::fmt::Display) -> KeyFileError {
    KeyFileError::Io { path: path.display().to_string(), message: e.to_string() }
}

fn invalid(path: &Path, e: impl std::fmt::Display) -> KeyFileError {
    KeyFileError::Invalid { path: path.display().to_string(), message: e.to_string() }
}

/// Loads a PKCS#8 PEM private key, refusing a file that group or others may read or
/// write, as ssh does, but for the one shape a Kubernetes Secret volume gives a non-root
/// container ([`secret_volume_shape`]).
pub fn load_private_key(path: &Path) -> Result<SigningKey, KeyFileError> {
    let meta = std::fs::metadata(path).map_err(|e| io(path, e))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 && !secret_volume_shape(mode, meta.uid(), meta.gid(), own_ids()) {
        return Err(KeyFileError::TooOpen { path: path.display().to_string(), mode });
    }
    let pem = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    SigningKey::from_pkcs8_pem(&pem).map_err(|e| invalid(path, e))
}

/// A file owned by root, readable by root and by the group it belongs to, which is this
/// process's own group, and by nobody else, writable by nobody: what the kubelet makes of a
/// Secret's key (`defaultMode: 0400`) for a pod with `fsGroup`, the only way a non-root
/// container can read a Secret. Only root and this process's group can read it, as only
/// its owner could read a 0600 file of its own.
fn secret_volume_shape(mode: u32, uid: u32, gid: u32, (own_uid, own_gid): (u32, u32)) -> bool {
    mode & 0o7777 & !0o440 == 0 && uid == 0 && own_uid != 0 && gid == own_gid
}

/// This process's user and group: the owner of `/proc/self`, which is the process's
/// effective ids; (0, 0) when unknown, which accepts no Secret-volume shape.
fn own_ids() -> (u32, u32) {
    std::fs::metadata("/proc/self").map_or((0, 0), |m| (m.uid(), m.gid()))
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
pub(crate) fn create_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), KeyFileError> {
    let mut f = OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => KeyFileError::Exists { path: path.display().to_string() },
        _ => io(path, e),
    })?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| io(path, e))
}

/// Refuses to start writing when any of `paths` exists, so a refused run leaves nothing
/// half-written.
pub(crate) fn refuse_existing(paths: &[&Path]) -> Result<(), KeyFileError> {
    match paths.iter().find(|p| p.exists()) {
        Some(p) => Err(KeyFileError::Exists { path: p.display().to_string() }),
        None => Ok(()),
    }
}

/// The files `keygen` wrote; no keyring for a root key, which goes into one by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub private: PathBuf,
    pub public: PathBuf,
    pub keyring: Option<PathBuf>,
    pub key_id: String,
}

/// Generates `NAME.key` (0600) and `NAME.pub` in `dir`, which is created when missing,
/// and, for an online key, `keyring.json` (version 1, threshold 1) whose root is `root`
/// (none: the keyring is its own root). A root key gets no keyring: its holder hands the
/// public key to whoever makes the keyring.
pub fn keygen(dir: &Path, name: &str, online: bool, root: Option<Role>) -> Result<Generated, KeyFileError> {
    let private = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let keyring_path = online.then(|| dir.join("keyring.json"));
    refuse_existing(&[&private, &public, keyring_path.as_deref().unwrap_or(&private)])?;
    let key = SigningKey::generate();
    let keyring = match &keyring_path {
        Some(_) => {
            let online = Role::new("online", 1, vec![key.public()], &Limits::SPEC).expect("one fresh key is a valid role");
            Some(Keyring::with_root(1, online, root).expect("a fresh key is in no root"))
        }
        None => None,
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    create_new(&private, key.to_pkcs8_pem().as_bytes(), 0o600)?;
    create_new(&public, key.public().to_pem().as_bytes(), 0o644)?;
    if let (Some(path), Some(keyring)) = (&keyring_path, keyring) {
        create_new(path, &keyring.to_json(), 0o644)?;
    }
    Ok(Generated { private, public, keyring: keyring_path, key_id: key.public().key_id() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_private_keys_others_can_read() {
        let tmp = tempfile::tempdir().unwrap();
        let g = keygen(tmp.path(), "ops", true, None).unwrap();
        assert_eq!(std::fs::metadata(&g.private).unwrap().permissions().mode() & 0o777, 0o600);
        let key = load_private_key(&g.private).unwrap();
        assert_eq!(key.public().key_id(), g.key_id);
        assert_eq!(load_public_key(&g.public).unwrap().key_id(), g.key_id);
        assert_eq!(load_keyring(g.keyring.as_ref().unwrap()).unwrap().keys()[0].key_id(), g.key_id);
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
    fn accepts_group_read_only_as_a_secret_volume_gives_it() {
        let me = (65532, 65532);
        assert!(secret_volume_shape(0o440, 0, 65532, me), "root:fsGroup 0440");
        for (mode, uid, gid, own, why) in [
            (0o444, 0, 65532, me, "others may read"),
            (0o460, 0, 65532, me, "group may write"),
            (0o640, 0, 65532, me, "the owner may write"),
            (0o440, 0, 1000, me, "another group"),
            (0o440, 1000, 65532, me, "owned by another user"),
            (0o440, 65532, 65532, me, "our own file: chmod 600 is ours to do"),
            (0o440, 0, 0, (0, 0), "running as root"),
            (0o2440, 0, 65532, me, "setgid"),
        ] {
            assert!(!secret_volume_shape(mode, uid, gid, own), "{why}");
        }
    }

    #[test]
    fn keygen_refuses_to_overwrite() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("keyring.json"), "{}").unwrap();
        let err = keygen(tmp.path(), "ops", true, None).unwrap_err();
        assert!(matches!(err, KeyFileError::Exists { ref path } if path.ends_with("keyring.json")), "{err}");
        assert!(!tmp.path().join("ops.key").exists(), "nothing is written when refusing");
    }
}
