//! The local files the settings name, each read through one size-capped reader: the
//! settings file registration writes (`--config`), the keyring, and (for the other
//! modules) any other file a flag names. Merging the file with the flags is `checked`'s.

use std::path::{Path, PathBuf};

use airlock_bundle::age::{Identity, parse_identities};
use airlock_bundle::{Keyring, Limits};
use anyhow::{Context, bail};
use serde::Deserialize;

use crate::engine::NamespacePolicy;

/// A settings file is a handful of fields; anything near this size is not one.
pub(super) const SETTINGS_FILE_BYTES: u64 = 64 * 1024;
/// 64 keys in PEM are about 8 KiB; the cap leaves room for comments and OpenSSH lines.
const KEYRING_FILE_BYTES: u64 = 1024 * 1024;

/// The settings file (`--config`), as registration writes it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct SettingsFile {
    pub source: Option<String>,
    pub cluster: Option<String>,
    pub keyring: Option<PathBuf>,
    /// The longest bundle validity, as `reportEvery`.
    pub max_validity: Option<String>,
    pub watch_namespaces: Option<Vec<String>>,
    pub namespace_policy: Option<NamespacePolicy>,
    pub state_namespace: Option<String>,
    pub report_to: Option<PathBuf>,
    pub report_key: Option<PathBuf>,
    pub age_identity: Option<PathBuf>,
    pub push_reports: Option<bool>,
    /// A duration such as `30m` (`airlock_cli::duration`).
    pub report_every: Option<String>,
    /// The sync Lease's duration, as `reportEvery`.
    pub lease_duration: Option<String>,
    /// How long validateHealths may take to pass, as `reportEvery`.
    pub check_timeout: Option<String>,
    /// The local override of the mass-prune guard, as `--allow-mass-prune`.
    pub allow_mass_prune: Option<bool>,
    /// Added to `--protect-namespace-keys`.
    pub protect_namespace_keys: Option<Vec<String>>,
    /// As `--allow-endpoints`.
    pub allow_endpoints: Option<bool>,
}

/// The settings file at `path`, if a flag names one; empty otherwise.
pub(super) fn read_settings_file(path: Option<&Path>) -> anyhow::Result<SettingsFile> {
    let Some(path) = path else { return Ok(SettingsFile::default()) };
    let bytes = read_capped(path, SETTINGS_FILE_BYTES).context("--config")?;
    serde_json::from_slice(&bytes).with_context(|| format!("settings file {}", path.display()))
}

/// Reads and parses a keyring file (spec section 7), naming it in any error.
pub fn read_keyring(path: &Path) -> anyhow::Result<Keyring> {
    Keyring::parse(&read_capped(path, KEYRING_FILE_BYTES)?, &Limits::SPEC).with_context(|| format!("keyring {}", path.display()))
}

/// An age identity file is a few lines per identity.
const IDENTITY_FILE_BYTES: u64 = 64 * 1024;

/// Reads and parses an age identity file (spec 2.7), naming it in any error.
pub fn read_identities(path: &Path) -> anyhow::Result<Vec<Identity>> {
    let bytes = read_capped(path, IDENTITY_FILE_BYTES)?;
    let text = String::from_utf8(bytes).with_context(|| format!("age identity file {}: not UTF-8", path.display()))?;
    parse_identities(&text).with_context(|| format!("age identity file {}", path.display()))
}

/// Reads a local file, refusing one larger than `cap` bytes.
pub fn read_capped(path: &Path, cap: u64) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > cap {
        bail!("{} is larger than {cap} bytes", path.display());
    }
    Ok(bytes)
}
