//! The randomness of a render. Sprig's random functions (`randAlphaNum`, `uuidv4`,
//! `shuffle`, `randInt`, `randBytes`), its generated keys and certificates, the salts of
//! `bcrypt` and `htpasswd` and the IV of `encryptAES` all draw from one stream per render,
//! seeded from a [`RenderEntropy`]. Entry point: [`RenderEntropy::derive`].
//!
//! Go's Sprig reads the operating system's random source, so a template calling any of
//! these renders differently every time: the publisher would find every such bundle
//! changed and publish it on every run, and the puller would roll a new password or
//! certificate out each time. Here the stream is a function of a secret and of what the
//! render depends on:
//!
//! - seed = HMAC-SHA256(secret, domain tag ‖ each context part, length-prefixed);
//! - the render's draws come, in call order, from ChaCha20 keyed with the seed.
//!
//! What that gives, and what it asks of the caller:
//!
//! - **Stable.** The same secret and context, with the same template and data, give the
//!   same bytes, so an unchanged cluster is not re-published. (`now` is the other input
//!   that varies between runs: see `RenderEnv::now`.)
//! - **Fresh on change.** A different context gives an unrelated seed. The caller puts
//!   everything the render depends on into the context (cluster, profile, resource, key,
//!   and a digest of the template text and its data), so any change to them rolls new
//!   values; two renders that share a context share a stream, hence equal passwords.
//! - **Unpredictable without the secret.** HMAC-SHA256 is a PRF and ChaCha20 a CSPRNG:
//!   someone who reads the bundles and knows every context, but not the secret, can tell
//!   the outputs from OS randomness no better than by guessing the 256-bit secret.
//! - **Recomputable with it.** Whoever holds the secret can rebuild every generated
//!   password and private key of every cluster: it needs the care of a signing key, and
//!   changing it renews them all at the next publish.
//!
//! It does not choose the secret or assemble the context; `render/` does.

use std::fmt;
use std::sync::Arc;

use airlock_bundle::mac::{Mac, framed};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;

/// Separates this use of the secret from any other HMAC under it.
const DOMAIN: &[u8] = b"airlock template entropy v1";

/// A render's seed, derived on first use: most renders call no random function, and the
/// secret may be an oracle in another process. `Debug` hides it.
#[derive(Clone)]
pub struct RenderEntropy {
    secret: Arc<dyn Mac>,
    message: Vec<u8>,
}

impl RenderEntropy {
    /// The seed for one render from the publisher's `secret` and the render's `context`
    /// parts (each is length-prefixed, so `["ab", "c"]` and `["a", "bc"]` differ).
    pub fn derive(secret: Arc<dyn Mac>, context: &[&[u8]]) -> Self {
        Self { secret, message: framed(DOMAIN, context) }
    }

    fn seed(&self) -> [u8; 32] {
        self.secret.mac(&self.message)
    }

    /// The generator a render draws from, from its first byte.
    pub(super) fn stream(&self) -> ChaCha20Rng {
        ChaCha20Rng::from_seed(self.seed())
    }
}

impl fmt::Debug for RenderEntropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RenderEntropy(..)")
    }
}

#[cfg(test)]
mod tests {
    use rand_core::Rng as _;

    use super::*;

    use airlock_bundle::mac::Secret;

    fn first_bytes(entropy: &RenderEntropy) -> [u8; 16] {
        let mut out = [0; 16];
        entropy.stream().fill_bytes(&mut out);
        out
    }

    #[test]
    fn the_same_secret_and_context_give_the_same_stream() {
        let a = RenderEntropy::derive(Arc::new(Secret::new(&[7; 32])), &[b"edge-1", b"web"]);
        let b = RenderEntropy::derive(Arc::new(Secret::new(&[7; 32])), &[b"edge-1", b"web"]);
        assert_eq!(first_bytes(&a), first_bytes(&b));
    }

    #[test]
    fn another_secret_or_context_gives_another_stream() {
        let base = first_bytes(&RenderEntropy::derive(Arc::new(Secret::new(&[7; 32])), &[b"edge-1", b"web"]));
        for other in [
            RenderEntropy::derive(Arc::new(Secret::new(&[8; 32])), &[b"edge-1", b"web"]),
            RenderEntropy::derive(Arc::new(Secret::new(&[7; 32])), &[b"edge-2", b"web"]),
            RenderEntropy::derive(Arc::new(Secret::new(&[7; 32])), &[b"edge-1w", b"eb"]),
            RenderEntropy::derive(Arc::new(Secret::new(&[7; 32])), &[b"edge-1", b"web", b""]),
        ] {
            assert_ne!(first_bytes(&other), base, "{other:?}");
        }
    }

    /// The seed pins the derivation: an upgrade that changed it would renew every generated
    /// password. Computed apart, with Python's hmac.
    #[test]
    fn derives_the_seed_it_always_did() {
        let seed = RenderEntropy::derive(Arc::new(Secret::new(&[7; 32])), &[b"edge-1", b"web"]).seed();
        assert_eq!(hex::encode(seed), "32aba9a64878ad0c75794c5d6867ee429adf3115c1e538f684abc0959b57e56f");
    }

    #[test]
    fn debug_hides_the_seed() {
        assert_eq!(format!("{:?}", RenderEntropy::derive(Arc::new(Secret::new(&[1; 32])), &[])), "RenderEntropy(..)");
    }
}
