//! The next keyring of a rotation (spec 7.3): the online and root keys changed as asked,
//! its update signed by the keys that must sign it, with the signers' keys on one machine
//! or, for a root kept apart, one signer after another.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use airlock_bundle::envelope::{self, KEYRING_PAYLOAD_TYPE};
use airlock_bundle::keyring::{Role, TrustError};
use airlock_bundle::{Keyring, Limits, PublicKey, Signer};

use super::{KeyFileError, create_new, refuse_existing};

/// What a rotation changes: keys added and removed, per role, and the thresholds.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub add: Vec<PublicKey>,
    pub remove: Vec<PublicKey>,
    pub threshold: Option<usize>,
    pub add_root: Vec<PublicKey>,
    pub remove_root: Vec<PublicKey>,
    pub root_threshold: Option<usize>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.add.is_empty()
            && self.remove.is_empty()
            && self.threshold.is_none()
            && self.add_root.is_empty()
            && self.remove_root.is_empty()
            && self.root_threshold.is_none()
    }
}

fn rotation(message: String) -> KeyFileError {
    KeyFileError::Rotation(message)
}

/// `keys` minus `remove` plus `add`, refusing to remove what is not there or add what is.
fn changed(role: &str, keys: &[PublicKey], add: &[PublicKey], remove: &[PublicKey]) -> Result<Vec<PublicKey>, KeyFileError> {
    let has = |k: &PublicKey| keys.iter().any(|c| c.key_id() == k.key_id());
    if let Some(k) = remove.iter().find(|k| !has(k)) {
        return Err(rotation(format!("--remove{role} key {} is not in the current keyring", k.key_id())));
    }
    if let Some(k) = add.iter().find(|k| has(k) && !remove.contains(k)) {
        return Err(rotation(format!("--add{role} key {} is already in the current keyring", k.key_id())));
    }
    let removed: BTreeSet<String> = remove.iter().map(PublicKey::key_id).collect();
    let mut next: Vec<PublicKey> = keys.iter().filter(|k| !removed.contains(&k.key_id())).copied().collect();
    next.extend(add.iter().copied());
    Ok(next)
}

/// The next keyring: `current` changed as `change` says, version + 1. A keyring without a
/// root is its own root: the first `--add-root` keys make its root.
pub fn next_keyring(current: &Keyring, change: &Change) -> Result<Keyring, KeyFileError> {
    let limits = &Limits::SPEC;
    let keys = changed("", current.keys(), &change.add, &change.remove)?;
    let online = Role::new("online", change.threshold.unwrap_or(current.threshold()), keys, limits).map_err(|e| rotation(e.to_string()))?;
    let root = match current.root() {
        Some(root) => {
            let keys = changed("-root", root.keys(), &change.add_root, &change.remove_root)?;
            Some((keys, change.root_threshold.unwrap_or(root.threshold())))
        }
        None if !change.remove_root.is_empty() => return Err(rotation("--remove-root: the current keyring has no root".into())),
        None if change.add_root.is_empty() => match change.root_threshold {
            Some(_) => return Err(rotation("--root-threshold: the current keyring has no root; give it one with --add-root".into())),
            None => None,
        },
        None => match (change.root_threshold, change.add_root.len()) {
            (Some(threshold), _) => Some((change.add_root.clone(), threshold)),
            (None, 1) => Some((change.add_root.clone(), 1)),
            (None, _) => return Err(rotation("--root-threshold is required with more than one --add-root key".into())),
        },
    };
    let root = root.map(|(keys, threshold)| Role::new("root", threshold, keys, limits)).transpose().map_err(|e| rotation(e.to_string()))?;
    Keyring::with_root(current.version() + 1, online, root).map_err(|e| rotation(e.to_string()))
}

/// Who must sign the update from `current` to `next`, for messages.
fn signers_needed(current: &Keyring, next: &Keyring) -> String {
    let (now, then) = (current.signs_updates(), next.signs_updates());
    let role = if current.root().is_some() { "root " } else { "" };
    let mut needed = format!("{} distinct {role}key(s) of keyring version {}", now.threshold(), current.version());
    if (current.root().is_some() || next.root().is_some()) && !now.same_as(then) {
        needed.push_str(&format!(" and {} of the root it names", then.threshold()));
    }
    needed
}

/// Whether `update` is an update from `current` its signers completed, and the keyring it
/// brings.
fn judge(current: &Keyring, update: &[u8]) -> Result<(Keyring, Result<(), TrustError>), KeyFileError> {
    let decoded = envelope::decode(update, KEYRING_PAYLOAD_TYPE, &Limits::SPEC).map_err(|e| rotation(e.to_string()))?;
    let next = Keyring::parse(&decoded.payload, &Limits::SPEC).map_err(|e| rotation(e.to_string()))?;
    if next.version() <= current.version() {
        return Err(rotation(format!("the update is to version {}, not above the keyring's {}", next.version(), current.version())));
    }
    let trusted = current.check_update(&next, &decoded);
    Ok((next, trusted))
}

/// Signs `next` as an update with `keys`. Refused when they are not enough for pullers to
/// adopt it, unless `partial`: the update then waits for `cosign_rotation` by the other
/// signers, and the message says who is still missing.
pub fn sign_rotation<S: Signer>(
    current: &Keyring,
    next: &Keyring,
    keys: &[S],
    partial: bool,
) -> Result<(Vec<u8>, Option<String>), KeyFileError> {
    let update = next.sign_update_by(keys).map_err(|e| rotation(e.to_string()))?;
    let (_, trusted) = judge(current, &update)?;
    match trusted {
        Ok(()) => Ok((update, None)),
        Err(e) if partial => Ok((update, Some(format!("not yet adoptable; it needs {}: {e}", signers_needed(current, next))))),
        Err(e) => Err(rotation(format!("the keys given with --key must include {}: {e}", signers_needed(current, next)))),
    }
}

/// Adds the signatures of `keys` to `update`, an update from `current`; returns the new
/// bytes, the keyring it brings, and who is still missing, if anyone.
pub fn cosign_rotation<S: Signer>(
    current: &Keyring,
    update: &[u8],
    keys: &[S],
) -> Result<(Vec<u8>, Keyring, Option<String>), KeyFileError> {
    let (next, _) = judge(current, update)?;
    let signs = |k: &S| current.signs_updates().holds(&k.public()) || next.signs_updates().holds(&k.public());
    if let Some(k) = keys.iter().find(|k| !signs(k)) {
        return Err(rotation(format!("key {} signs neither the current keyring's updates nor the next one's", k.public().key_id())));
    }
    let update = envelope::cosign(update, KEYRING_PAYLOAD_TYPE, keys, &Limits::SPEC).map_err(|e| rotation(e.to_string()))?;
    let (_, trusted) = judge(current, &update)?;
    let missing = trusted.err().map(|e| format!("not yet adoptable; it needs {}: {e}", signers_needed(current, &next)));
    Ok((update, next, missing))
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
mod tests;
