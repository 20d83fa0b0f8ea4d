//! `airlock-publisher keyring rotate` and `keyring sign`: the next keyring version and its
//! update, signed by the root of the current one (its own keys when it has no root), so
//! pullers adopt it from inside their bundles (spec 7.3). A root kept on machines apart
//! signs one holder after another: `rotate --partial`, then `sign` on each machine.

use std::path::{Path, PathBuf};

use airlock_cli::exit;
use clap::{Args, Subcommand};

use crate::keys::{self, Change};

const EXAMPLES: &str = "Examples:
  # A keyring that is its own root: replace key a by key c, signed by the current keys a and b
  airlock-publisher keyring rotate --keyring keyring.json --add c.pub --remove a.pub \\
      --key a.key --key b.key --out keyring-v2.json
  # writes keyring-v2.json and keyring-v2.json.update; then publish with
  airlock-publisher publish ... --key b.key --key c.key \\
      --keyring keyring-v2.json --keyring-chain keyring-v2.json.update

  # Revoke a stolen online key; the root (2 of 3) signs, one holder at a time:
  airlock-publisher keyring rotate --keyring keyring.json --add ops-2.pub --remove ops.pub \\
      --key alice.key --partial --out keyring-v3.json
  airlock-publisher keyring sign --keyring keyring.json --update keyring-v3.json.update --key bob.key
  # ... or with a root key kept in a PKCS#11 token, whose public key is read out with
  airlock-publisher keyring public-key --key 'pkcs11:token=root;object=carol?module-path=...' > carol.pub
  airlock-publisher keyring sign --keyring keyring.json --update keyring-v3.json.update \\
      --key 'pkcs11:token=root;object=carol?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin'";

#[derive(Debug, Clone, Subcommand)]
pub enum KeyringCommand {
    /// Write the next keyring version and its signed update.
    Rotate(RotateArgs),
    /// Add signatures to a keyring update written with `rotate --partial`.
    Sign(SignArgs),
    /// Print the public key (SPKI PEM) of a private key, to put it into a keyring: the way
    /// to read it out of a PKCS#11 token.
    PublicKey(PublicKeyArgs),
}

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct RotateArgs {
    /// The keyring pullers trust now.
    #[arg(long, value_name = "FILE")]
    pub keyring: PathBuf,
    /// Online public key to add (PEM or ssh-ed25519); repeatable.
    #[arg(long, value_name = "PUB")]
    pub add: Vec<PathBuf>,
    /// Online public key to remove (revoke); repeatable.
    #[arg(long, value_name = "PUB")]
    pub remove: Vec<PathBuf>,
    /// Online threshold of the next keyring (default: the current one).
    #[arg(long, value_name = "K")]
    pub threshold: Option<usize>,
    /// Root public key to add; repeatable. The first ones give a keyring without a root
    /// its root.
    #[arg(long, value_name = "PUB")]
    pub add_root: Vec<PathBuf>,
    /// Root public key to remove; repeatable.
    #[arg(long, value_name = "PUB")]
    pub remove_root: Vec<PathBuf>,
    /// Root threshold of the next keyring (default: the current one; required when
    /// giving a root of more than one key).
    #[arg(long, value_name = "K")]
    pub root_threshold: Option<usize>,
    /// Private key to sign the update with: of the current root (the current keys when
    /// there is none), and of the next root when it changes; repeatable. A PKCS#8 PEM
    /// file, or a key in a PKCS#11 token as an RFC 7512 `pkcs11:` URI.
    #[arg(long = "key", value_name = "FILE|URI", required = true)]
    pub keys: Vec<PathBuf>,
    /// Write the update even when its signatures are not yet enough, for `keyring sign`
    /// by the other holders.
    #[arg(long)]
    pub partial: bool,
    /// Where to write the next keyring; its signed update goes to OUT.update.
    #[arg(long, value_name = "NEXT")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct SignArgs {
    /// The keyring pullers trust now, the one the update follows.
    #[arg(long, value_name = "FILE")]
    pub keyring: PathBuf,
    /// The update to add signatures to; rewritten in place.
    #[arg(long, value_name = "FILE")]
    pub update: PathBuf,
    /// Private key to sign with; repeatable. A PKCS#8 PEM file, or a key in a PKCS#11
    /// token as an RFC 7512 `pkcs11:` URI.
    #[arg(long = "key", value_name = "FILE|URI", required = true)]
    pub keys: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct PublicKeyArgs {
    /// The private key: a PKCS#8 PEM file, or a key in a PKCS#11 token as an RFC 7512
    /// `pkcs11:` URI.
    #[arg(long = "key", value_name = "FILE|URI")]
    pub key: PathBuf,
}

pub fn run(command: KeyringCommand) -> anyhow::Result<u8> {
    match command {
        KeyringCommand::Rotate(args) => rotate(args),
        KeyringCommand::Sign(args) => sign(args),
        KeyringCommand::PublicKey(args) => public_key(args),
    }
}

fn rotate(args: RotateArgs) -> anyhow::Result<u8> {
    let current = keys::load_keyring(&args.keyring)?;
    let load = |paths: &[PathBuf]| paths.iter().map(|p| keys::load_public_key(p)).collect::<Result<Vec<_>, _>>();
    let change = Change {
        add: load(&args.add)?,
        remove: load(&args.remove)?,
        threshold: args.threshold,
        add_root: load(&args.add_root)?,
        remove_root: load(&args.remove_root)?,
        root_threshold: args.root_threshold,
    };
    if change.is_empty() {
        anyhow::bail!("nothing to rotate: give --add, --remove, --threshold, --add-root, --remove-root or --root-threshold");
    }
    let signing = load_private_keys(&args.keys)?;
    let next = keys::next_keyring(&current, &change)?;
    let (update, missing) = keys::sign_rotation(&current, &next, &signing, args.partial)?;
    let update_path = keys::write_rotation(&args.out, &next, &update)?;
    let root = next.root().map_or_else(|| "its own root".to_string(), |r| format!("root {} of {}", r.threshold(), r.keys().len()));
    println!(
        "keyring version {} (threshold {}, {} keys, {root}): {}",
        next.version(),
        next.threshold(),
        next.keys().len(),
        args.out.display()
    );
    println!("signed update: {}", update_path.display());
    Ok(report_missing(missing))
}

fn sign(args: SignArgs) -> anyhow::Result<u8> {
    let current = keys::load_keyring(&args.keyring)?;
    let bytes = std::fs::read(&args.update).map_err(|e| anyhow::anyhow!("{}: {e}", args.update.display()))?;
    let signing = load_private_keys(&args.keys)?;
    let (update, next, missing) =
        keys::cosign_rotation(&current, &bytes, &signing).map_err(|e| anyhow::anyhow!("{}: {e}", args.update.display()))?;
    replace(&args.update, &update)?;
    println!("keyring version {} update: {}", next.version(), args.update.display());
    Ok(report_missing(missing))
}

fn public_key(args: PublicKeyArgs) -> anyhow::Result<u8> {
    let signer = load_private_keys(std::slice::from_ref(&args.key))?.remove(0);
    print!("{}", signer.public().to_pem());
    Ok(exit::OK)
}

fn load_private_keys(args: &[PathBuf]) -> anyhow::Result<Vec<Box<dyn airlock_bundle::Signer>>> {
    Ok(keys::open_signers(args)?.into_iter().map(|k| k.signer).collect())
}

/// Says whether pullers would adopt the update yet: exit 0 when they would, 2 while
/// signatures are missing, so a script knows to pass it on.
fn report_missing(missing: Option<String>) -> u8 {
    match missing {
        None => {
            println!("complete: pullers adopt it from the next bundle published with it");
            exit::OK
        }
        Some(missing) => {
            println!("{missing}");
            exit::PARTIAL
        }
    }
}

/// Writes `bytes` over `path` through a file beside it, so a reader never sees half.
fn replace(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path)).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}
