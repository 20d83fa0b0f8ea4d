//! A SoftHSM2 token of the test's own: a configuration and a token directory in a temp
//! directory (never /var/lib/softhsm), initialised and filled with key pairs generated
//! inside it by `softhsm-keygen` (this crate's `src/bin`), a process of its own with
//! `SOFTHSM2_CONF` set.

use std::path::PathBuf;
use std::process::Command;

use airlock_bundle::PublicKey;

pub const LABEL: &str = "airlock";
pub const PIN: &str = "pin-4711-never-shown";
const SO_PIN: &str = "so-pin-0815";

/// Ed25519 key pairs the token holds, as (label, id): the online key, a root key, and
/// two keys sharing a label.
pub const ED25519: [(&str, u8); 4] = [("ops", 1), ("root", 2), ("twin", 4), ("twin", 5)];
/// A P-256 key pair: a key, but not one that signs bundles.
pub const P256: (&str, u8) = ("p256", 3);

/// The module `hack/softhsm.sh` installs, or `$AIRLOCK_PKCS11_MODULE`.
pub fn module() -> PathBuf {
    let module = std::env::var_os("AIRLOCK_PKCS11_MODULE").map_or_else(|| PathBuf::from("/usr/lib/softhsm/libsofthsm2.so"), PathBuf::from);
    assert!(module.is_file(), "no PKCS#11 module at {}: run hack/softhsm.sh (hack/test.sh does)", module.display());
    module
}

pub struct Token {
    pub dir: tempfile::TempDir,
}

impl Token {
    /// A new token with the keys above, generated inside it.
    pub fn new() -> Token {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("tokens")).expect("token dir");
        std::fs::write(
            dir.path().join("softhsm2.conf"),
            format!("directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n", dir.path().join("tokens").display()),
        )
        .expect("softhsm2.conf");
        std::fs::write(dir.path().join("pin"), format!("{PIN}\n")).expect("pin file");
        let token = Token { dir };
        let keys = ED25519.iter().map(|(label, id)| format!("{label}:{id}:ed25519")).chain([format!("{}:{}:p256", P256.0, P256.1)]);
        let out = Command::new(env!("CARGO_BIN_EXE_softhsm-keygen"))
            .arg(module())
            .arg(token.dir.path())
            .args([LABEL, SO_PIN, PIN])
            .args(keys)
            .env("SOFTHSM2_CONF", token.conf())
            .output()
            .expect("softhsm-keygen runs");
        assert!(out.status.success(), "generating keys in the token failed:\n{}", String::from_utf8_lossy(&out.stderr));
        for (label, id) in ED25519 {
            let raw: [u8; 32] = std::fs::read(token.dir.path().join(format!("{label}-{id}.raw")))
                .expect("the raw public key")
                .try_into()
                .expect("32 bytes");
            let pem = PublicKey::from_bytes(&raw).expect("an Ed25519 point").to_pem();
            std::fs::write(token.public(label, id), pem).expect("public key written");
        }
        token
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("softhsm2.conf")
    }

    pub fn pin_file(&self) -> PathBuf {
        self.dir.path().join("pin")
    }

    /// The public key file of an Ed25519 key pair of the token.
    pub fn public(&self, label: &str, id: u8) -> PathBuf {
        self.dir.path().join(format!("{label}-{id}.pub"))
    }

    /// The URI of the key `object`, its PIN read from the pin file.
    pub fn uri(&self, object: &str) -> String {
        format!("pkcs11:token={LABEL};object={object}?module-path={}&pin-source=file:{}", module().display(), self.pin_file().display())
    }
}
