//! `airlock-publisher keyring rotate`: the next keyring version, signed by keys of the
//! current one, so pullers adopt it from inside their bundles (spec 7.3).

use std::path::PathBuf;

use airlock_cli::exit;
use clap::{Args, Subcommand};

use crate::keys;

const EXAMPLES: &str = "Example: replace key a by key c, signed by the current keys a and b:
  airlock-publisher keyring rotate --keyring keyring.json --add c.pub --remove a.pub \\
      --key a.key --key b.key --out keyring-v2.json
  # writes keyring-v2.json and keyring-v2.json.update; then publish with
  airlock-publisher publish ... --key b.key --key c.key \\
      --keyring keyring-v2.json --keyring-chain keyring-v2.json.update";

#[derive(Debug, Clone, Subcommand)]
pub enum KeyringCommand {
    /// Write the next keyring version and its signed update.
    Rotate(RotateArgs),
}

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct RotateArgs {
    /// The keyring pullers trust now.
    #[arg(long, value_name = "FILE")]
    pub keyring: PathBuf,
    /// Public key to add (PEM or ssh-ed25519); repeatable.
    #[arg(long, value_name = "PUB")]
    pub add: Vec<PathBuf>,
    /// Public key to remove (revoke); repeatable.
    #[arg(long, value_name = "PUB")]
    pub remove: Vec<PathBuf>,
    /// Threshold of the next keyring (default: the current one).
    #[arg(long, value_name = "K")]
    pub threshold: Option<usize>,
    /// Private key of the CURRENT keyring to sign the update with; repeat up to its threshold.
    #[arg(long = "key", value_name = "FILE", required = true)]
    pub keys: Vec<PathBuf>,
    /// Where to write the next keyring; its signed update goes to OUT.update.
    #[arg(long, value_name = "NEXT")]
    pub out: PathBuf,
}

pub fn run(command: KeyringCommand) -> anyhow::Result<u8> {
    let KeyringCommand::Rotate(args) = command;
    let current = keys::load_keyring(&args.keyring)?;
    let load = |paths: &[PathBuf]| paths.iter().map(|p| keys::load_public_key(p)).collect::<Result<Vec<_>, _>>();
    let (add, remove) = (load(&args.add)?, load(&args.remove)?);
    if add.is_empty() && remove.is_empty() && args.threshold.is_none() {
        anyhow::bail!("nothing to rotate: give --add, --remove or --threshold");
    }
    let signing = args.keys.iter().map(|p| keys::load_private_key(p)).collect::<Result<Vec<_>, _>>()?;
    let next = keys::next_keyring(&current, &add, &remove, args.threshold)?;
    let update = keys::sign_rotation(&current, &next, &signing)?;
    let update_path = keys::write_rotation(&args.out, &next, &update)?;
    println!("keyring version {} (threshold {}, {} keys): {}", next.version(), next.threshold(), next.keys().len(), args.out.display());
    println!("signed update: {}", update_path.display());
    Ok(exit::OK)
}
