//! The worker's keys and secrets: public halves it holds, signatures and keyed hashes the
//! signer makes. The key and the two secrets derived from it never enter the worker.
//! Signatures are taken as they come: the signer checks what a device makes, and a key in
//! its memory signs correctly, so checking them again here would only double the cost of
//! signing a chunk.

use std::sync::Arc;

use airlock_bundle::mac::Mac;
use airlock_bundle::{PublicKey, SignError, Signer};

use super::rpc::Peer;
use super::wire::{Call, Message, SecretName};

/// One signing key of the signer's.
pub struct SignerProxy {
    pub peer: Arc<Peer>,
    /// Its position among the signer's keys.
    pub key: usize,
    pub public: PublicKey,
}

impl Signer for SignerProxy {
    fn public(&self) -> PublicKey {
        self.public
    }

    fn sign(&self, message: &[u8]) -> Result<[u8; 64], SignError> {
        let failed = |message: String| SignError::Device { key_id: self.public.key_id(), message };
        let signature: Vec<u8> =
            self.peer.call_blocking("sign", &Call::Sign { key: self.key, message: message.to_vec() }).map_err(|e| failed(e.to_string()))?;
        signature.try_into().map_err(|_| failed("a signature that is not 64 bytes".into()))
    }

    fn sign_all(&self, messages: &[&[u8]]) -> Result<Vec<[u8; 64]>, SignError> {
        let failed = |message: String| SignError::Device { key_id: self.public.key_id(), message };
        let call = Call::SignAll { key: self.key, messages: messages.iter().map(|m| Message(m.to_vec())).collect() };
        let signatures: Vec<Vec<u8>> = self.peer.call_blocking("sign", &call).map_err(|e| failed(e.to_string()))?;
        if signatures.len() != messages.len() {
            return Err(failed(format!("{} signatures for {} messages", signatures.len(), messages.len())));
        }
        signatures.into_iter().map(|s| s.try_into().map_err(|_| failed("a signature that is not 64 bytes".into()))).collect()
    }
}

/// One derived secret of the signer's.
pub struct MacProxy {
    pub peer: Arc<Peer>,
    pub secret: SecretName,
}

impl Mac for MacProxy {
    fn mac(&self, message: &[u8]) -> [u8; 32] {
        match self.peer.call_blocking::<[u8; 32]>("mac", &Call::Mac { secret: self.secret, message: message.to_vec() }) {
            Ok(mac) => mac,
            // Only a closed channel fails a MAC: without its signer the worker has nothing
            // left to do, and a value it made up would seal or render wrong bytes.
            Err(e) => {
                tracing::error!("render worker: {e}; exiting");
                std::process::exit(airlock_cli::exit::ERROR.into());
            }
        }
    }
}
