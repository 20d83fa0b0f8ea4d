//! A keyed hash whose key the caller may not hold: HMAC-SHA256 under a publisher's secret.
//! The secret can live in this process ([`Secret`]) or behind an oracle in another one
//! (the publisher's render worker asks its signer), and every derivation keyed by it
//! (seals, template entropy) gives the same bytes either way.

use ring::hmac;

/// HMAC-SHA256 under a secret the implementation keeps.
pub trait Mac: Send + Sync {
    /// HMAC-SHA256(secret, `message`).
    fn mac(&self, message: &[u8]) -> [u8; 32];
}

/// A secret held in this process.
#[derive(Clone)]
pub struct Secret(hmac::Key);

impl Secret {
    pub fn new(secret: &[u8; 32]) -> Secret {
        Secret(hmac::Key::new(hmac::HMAC_SHA256, secret))
    }
}

impl Mac for Secret {
    fn mac(&self, message: &[u8]) -> [u8; 32] {
        let mut out = [0; 32];
        out.copy_from_slice(hmac::sign(&self.0, message).as_ref());
        out
    }
}

impl std::fmt::Debug for Secret {
    // By hand, so the secret never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// `fields`, each prefixed by its length as 8 bytes big-endian, after `domain`: what the
/// derivations MAC, so `["ab", "c"]` and `["a", "bc"]` differ.
pub fn framed(domain: &[u8], fields: &[&[u8]]) -> Vec<u8> {
    let mut message = domain.to_vec();
    for field in fields {
        message.extend_from_slice(&(field.len() as u64).to_be_bytes());
        message.extend_from_slice(field);
    }
    message
}
