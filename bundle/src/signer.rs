//! The seam between the contract's signing code and whoever holds a key: [`Signer`] makes
//! Ed25519 signatures and names its public key, whether the key is in this process's
//! memory ([`SigningKey`]) or in a device that never lets it out (a PKCS#11 token, which
//! the publisher implements above the contract). The envelope code (`envelope::sign_by`,
//! `envelope::cosign`) signs through it; nothing here talks to a device.

use std::ops::Deref;

use ed25519_dalek::Signer as _;

use crate::key::{PublicKey, SigningKey};

/// Why a signer made no signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// The device holding the key refused or failed; `message` is the device's answer.
    #[error("key {key_id}: the signing device failed: {message}")]
    Device { key_id: String, message: String },
    /// The device answered with bytes its own public key does not verify: pullers would
    /// reject every envelope carrying them.
    #[error("key {key_id}: the device's signature does not verify with its public key")]
    BadSignature { key_id: String },
}

/// Makes pure Ed25519 signatures (RFC 8032) with one key.
pub trait Signer: Send + Sync {
    /// The public key that verifies this signer's signatures.
    fn public(&self) -> PublicKey;

    /// The signature of `message`.
    fn sign(&self, message: &[u8]) -> Result<[u8; 64], SignError>;

    /// The signatures of `messages`, in order: one call for many, so a signer whose key is
    /// away (in another process, in a device) can answer them together.
    fn sign_all(&self, messages: &[&[u8]]) -> Result<Vec<[u8; 64]>, SignError> {
        messages.iter().map(|m| self.sign(m)).collect()
    }

    /// The key itself when it is in this process's memory; `None` for a device that keeps
    /// it. For derivations that were keyed by the key's bytes before devices existed.
    fn in_memory(&self) -> Option<&SigningKey> {
        None
    }
}

impl Signer for SigningKey {
    fn public(&self) -> PublicKey {
        SigningKey::public(self)
    }

    fn sign(&self, message: &[u8]) -> Result<[u8; 64], SignError> {
        Ok(self.inner().sign(message).to_bytes())
    }

    /// On every core: a publish signs a chunk of clusters' statements in one call, and
    /// hashing each statement twice (SHA-512) is most of the cost.
    fn sign_all(&self, messages: &[&[u8]]) -> Result<Vec<[u8; 64]>, SignError> {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        if cores == 1 || messages.len() < PARALLEL_FROM {
            return messages.iter().map(|m| Signer::sign(self, m)).collect();
        }
        let share = messages.len().div_ceil(cores);
        std::thread::scope(|s| {
            let signing: Vec<_> = messages
                .chunks(share)
                .map(|some| s.spawn(move || some.iter().map(|m| Signer::sign(self, m)).collect::<Result<Vec<_>, _>>()))
                .collect();
            let mut signatures = Vec::with_capacity(messages.len());
            for thread in signing {
                signatures.extend(thread.join().expect("a signing thread panicked")?);
            }
            Ok(signatures)
        })
    }

    fn in_memory(&self) -> Option<&SigningKey> {
        Some(self)
    }
}

/// Fewer messages than this are signed on the calling thread: starting threads would cost
/// more than it saves.
const PARALLEL_FROM: usize = 32;

/// A boxed or borrowed signer signs as the one it points to.
impl<P> Signer for P
where
    P: Deref + Send + Sync,
    P::Target: Signer,
{
    fn public(&self) -> PublicKey {
        (**self).public()
    }

    fn sign(&self, message: &[u8]) -> Result<[u8; 64], SignError> {
        (**self).sign(message)
    }

    fn sign_all(&self, messages: &[&[u8]]) -> Result<Vec<[u8; 64]>, SignError> {
        (**self).sign_all(messages)
    }

    fn in_memory(&self) -> Option<&SigningKey> {
        (**self).in_memory()
    }
}

/// Checks a signature a device made, so a faulty device fails the signing rather than
/// every puller's verification.
pub fn checked(public: &PublicKey, message: &[u8], signature: [u8; 64]) -> Result<[u8; 64], SignError> {
    match public.verifies(message, &signature) {
        true => Ok(signature),
        false => Err(SignError::BadSignature { key_id: public.key_id() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device that signs with one key and claims another's public key.
    struct Swapped(SigningKey, SigningKey);

    impl Signer for Swapped {
        fn public(&self) -> PublicKey {
            self.1.public()
        }
        fn sign(&self, message: &[u8]) -> Result<[u8; 64], SignError> {
            checked(&self.public(), message, Signer::sign(&self.0, message)?)
        }
    }

    #[test]
    fn an_in_memory_key_signs_what_its_public_key_verifies() {
        let key = SigningKey::from_seed([3; 32]);
        let boxed: Box<dyn Signer> = Box::new(SigningKey::from_seed([3; 32]));
        let sig = Signer::sign(&boxed, b"m").unwrap();
        assert!(key.public().verifies(b"m", &sig));
        assert_eq!(sig, Signer::sign(&key, b"m").unwrap(), "Ed25519 is deterministic");
        assert_eq!(boxed.in_memory().map(|k| k.public()), Some(key.public()));
        assert_eq!(checked(&key.public(), b"m", sig), Ok(sig));
    }

    #[test]
    fn rejects_a_device_signature_its_public_key_does_not_verify() {
        let device = Swapped(SigningKey::from_seed([1; 32]), SigningKey::from_seed([2; 32]));
        assert_eq!(device.sign(b"m"), Err(SignError::BadSignature { key_id: SigningKey::from_seed([2; 32]).public().key_id() }));
        assert!(device.in_memory().is_none());
    }
}
