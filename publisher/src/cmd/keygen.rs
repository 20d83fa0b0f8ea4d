//! `airlock-publisher keygen`: a signing key pair and the first keyring for pullers.

use std::path::PathBuf;

use airlock_cli::exit;
use clap::Args;

use crate::keys;

const EXAMPLES: &str = "Example:
  airlock-publisher keygen --out-dir keys --name ops
  # keys/ops.key (private, mode 0600), keys/ops.pub, keys/keyring.json (threshold 1)

Existing files are never overwritten.";

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct KeygenArgs {
    /// Directory to write the key pair and keyring.json to (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// Base name of the key files.
    #[arg(long, default_value = "airlock", value_name = "NAME")]
    pub name: String,
}

pub fn run(args: KeygenArgs) -> anyhow::Result<u8> {
    if args.name.is_empty() || args.name.contains('/') || args.name.starts_with('.') {
        anyhow::bail!("--name {:?} must be a plain file name", args.name);
    }
    let g = keys::keygen(&args.out_dir, &args.name)?;
    println!("private key: {}", g.private.display());
    println!("public key:  {}", g.public.display());
    println!("keyring:     {}", g.keyring.display());
    println!("key id:      {}", g.key_id);
    Ok(exit::OK)
}
