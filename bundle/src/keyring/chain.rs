//! Keyring chains (spec 7.3): the signed updates a store carries beside a bundle, followed
//! in order from the keyring a puller holds.

use serde_json::value::RawValue;

use super::{Keyring, TrustError};
use crate::envelope::{self, KEYRING_PAYLOAD_TYPE};
use crate::limits::Limits;

/// Adopts, in order, each update of `chain` newer than the keyring held at that point and
/// trusted by it; returns the newest keyring and the updates adopted, as signed.
pub(super) fn follow(from: &Keyring, chain: &[u8], limits: &Limits) -> Result<(Keyring, Vec<Vec<u8>>), TrustError> {
    if chain.len() as u64 > limits.keyring_chain_bytes {
        return Err(TrustError::Chain(format!("over {} bytes", limits.keyring_chain_bytes)));
    }
    let updates: Vec<&RawValue> = serde_json::from_slice(chain).map_err(|e| TrustError::Chain(e.to_string()))?;
    if updates.len() > limits.keyring_updates {
        return Err(TrustError::Chain(format!("over {} updates", limits.keyring_updates)));
    }
    let mut current = from.clone();
    let mut adopted = Vec::new();
    for update in updates {
        let env = envelope::decode(update.get().as_bytes(), KEYRING_PAYLOAD_TYPE, limits).map_err(TrustError::UpdateEnvelope)?;
        // An update the puller already went past was signed by keys it may no longer
        // trust, so it is skipped by its version before its signatures are checked;
        // a forged old version gains nothing by being skipped.
        let next = match Keyring::parse(&env.payload, limits) {
            Ok(next) if next.version() <= current.version() => continue,
            Ok(next) => next,
            Err(invalid) => {
                // Whether the current root signed it decides which error it is.
                current.signs_updates().check(&env).map_err(|e| TrustError::UpdateUntrusted {
                    update: "not a valid keyring".into(),
                    current: current.version(),
                    source: Box::new(e),
                })?;
                return Err(TrustError::UpdateKeyring(invalid));
            }
        };
        current.check_update(&next, &env)?;
        // Even signed, a leap would leave no room for the versions after it.
        if next.version() - current.version() > limits.max_keyring_version_step {
            let (to, from, step) = (next.version(), current.version(), limits.max_keyring_version_step);
            return Err(TrustError::Chain(format!("update to version {to} is more than {step} above version {from}")));
        }
        current = next;
        adopted.push(update.get().as_bytes().to_vec());
    }
    Ok((current, adopted))
}

/// A keyring chain from updates, oldest first (spec 7.3).
pub fn chain(updates: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"[".to_vec();
    for (i, u) in updates.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(u);
    }
    out.push(b']');
    out
}
