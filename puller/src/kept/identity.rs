//! An age identity as the state keeps it: its secret string in the state Secret, never in
//! a log or a debug print. Which identities are kept is `identities`' business.

use airlock_bundle::age::Identity;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An identity as the state keeps it: its `AGE-SECRET-KEY-1` string. `Debug` shows the
/// recipient alone, as `Identity`'s does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptIdentity(pub Identity);

impl Serialize for KeptIdentity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_secret_string())
    }
}

impl<'de> Deserialize<'de> for KeptIdentity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Identity::parse(&text).map(KeptIdentity).map_err(serde::de::Error::custom)
    }
}
