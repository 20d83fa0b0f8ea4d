//! `airlock-publisher keygen`: a signing key pair and, for an online key, the first keyring
//! for pullers.

use std::path::PathBuf;

use airlock_bundle::Limits;
use airlock_bundle::keyring::Role;
use airlock_cli::exit;
use clap::{Args, ValueEnum};

use crate::keys;

const EXAMPLES: &str = "Examples:
  airlock-publisher keygen --out-dir keys --name ops
  # keys/ops.key (private, mode 0600), keys/ops.pub, keys/keyring.json (threshold 1,
  # its own root: the key signs bundles and keyring updates)

  # An offline root, 2 of 3 (each holder on their own machine):
  airlock-publisher keygen --role root --out-dir root-alice --name alice
  # then the online key and a keyring whose updates only the root signs:
  airlock-publisher keygen --out-dir keys --name ops \\
      --root alice.pub --root bob.pub --root carol.pub --root-threshold 2

Existing files are never overwritten.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyRole {
    /// Signs bundles; gets keyring.json beside it.
    Online,
    /// Signs keyring updates only, kept offline; no keyring is written.
    Root,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct KeygenArgs {
    /// Directory to write the key pair (and keyring.json) to (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// Base name of the key files.
    #[arg(long, default_value = "airlock", value_name = "NAME")]
    pub name: String,
    /// What the key is for (bundles-format.md 7.1).
    #[arg(long, value_enum, default_value = "online")]
    pub role: KeyRole,
    /// Public key of the keyring's root role (PEM or ssh-ed25519); repeatable. Without
    /// one the keyring is its own root.
    #[arg(long = "root", value_name = "PUB", conflicts_with = "role")]
    pub root: Vec<PathBuf>,
    /// How many root keys must sign a keyring update (default: 1 for one root key).
    #[arg(long, value_name = "K", requires = "root")]
    pub root_threshold: Option<usize>,
}

pub fn run(args: KeygenArgs) -> anyhow::Result<u8> {
    if args.name.is_empty() || args.name.contains('/') || args.name.starts_with('.') {
        anyhow::bail!("--name {:?} must be a plain file name", args.name);
    }
    let root = match (args.root.len(), args.root_threshold) {
        (0, _) => None,
        (1, None) => Some(1),
        (_, Some(k)) => Some(k),
        (_, None) => anyhow::bail!("--root-threshold is required with more than one --root key"),
    };
    let root = match root {
        Some(threshold) => {
            let keys = args.root.iter().map(|p| keys::load_public_key(p)).collect::<Result<Vec<_>, _>>()?;
            Some(Role::new("root", threshold, keys, &Limits::SPEC).map_err(|e| anyhow::anyhow!("--root: {e}"))?)
        }
        None => None,
    };
    let g = keys::keygen(&args.out_dir, &args.name, args.role == KeyRole::Online, root)?;
    println!("private key: {}", g.private.display());
    println!("public key:  {}", g.public.display());
    if let Some(keyring) = &g.keyring {
        println!("keyring:     {}", keyring.display());
    }
    println!("key id:      {}", g.key_id);
    Ok(exit::OK)
}
