//! DSSE envelopes (spec section 6): the pre-authentication encoding, signing, and strict
//! decoding of received bytes. Whether a signature is trusted is the keyring's business.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use super::key::SigningKey;
use super::signer::{SignError, Signer};
use crate::limits::Limits;

pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const KEYRING_PAYLOAD_TYPE: &str = "application/vnd.airlock.keyring.v1+json";
/// A puller's signed status report (spec 14.2).
pub const REPORT_PAYLOAD_TYPE: &str = "application/vnd.airlock.report.v1+json";

/// Why envelope bytes could not be decoded (spec 8.1-8.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    #[error("envelope is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("envelope is not valid DSSE JSON: {0}")]
    Malformed(String),
    #[error("envelope payloadType is {actual:?}, expected {expected:?}")]
    PayloadType { expected: &'static str, actual: String },
    #[error("envelope {field} is not standard padded base64")]
    Base64 { field: &'static str },
    #[error("envelope has {count} signatures, over the limit of {limit}")]
    TooManySignatures { count: usize, limit: usize },
    #[error("signing: {0}")]
    Signing(#[from] SignError),
}

/// The JSON shape of a DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Envelope {
    pub payload_type: String,
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    pub keyid: String,
    pub sig: String,
}

/// An envelope whose structure was checked and whose payload and signatures were decoded.
/// Nothing about it is trusted yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedEnvelope {
    pub payload_type: String,
    pub payload: Vec<u8>,
    pub signatures: Vec<(String, [u8; 64])>,
}

/// The DSSE pre-authentication encoding (spec 6.2).
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {} {} ", payload_type.len(), payload_type, payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// The payload of `message` when it is the pre-authentication encoding of a payload of
/// `payload_type`: what a signer that does not trust its caller reads before signing.
pub fn pae_payload<'m>(message: &'m [u8], payload_type: &str) -> Option<&'m [u8]> {
    let head = format!("DSSEv1 {} {} ", payload_type.len(), payload_type);
    let rest = message.strip_prefix(head.as_bytes())?;
    let space = rest.iter().position(|b| *b == b' ')?;
    let len: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
    let payload = &rest[space + 1..];
    (payload.len() == len && pae(payload_type, payload) == message).then_some(payload)
}

/// Signs `payload` with every key in memory and returns the envelope's JSON bytes.
pub fn sign(payload_type: &str, payload: &[u8], keys: &[SigningKey]) -> Vec<u8> {
    sign_by(payload_type, payload, keys).expect("a key in memory always signs")
}

/// Signs `payload` with every signer, wherever its key is, and returns the envelope's
/// JSON bytes; the first signer that fails fails the whole envelope.
pub fn sign_by<S: Signer>(payload_type: &str, payload: &[u8], signers: &[S]) -> Result<Vec<u8>, SignError> {
    let mut envelopes = sign_all_by(payload_type, &[payload], signers)?;
    Ok(envelopes.pop().expect("one envelope per payload"))
}

/// [`sign_by`] for many payloads at once, each signer asked once for all of them: a key
/// in another process or a device answers one call rather than one per payload.
pub fn sign_all_by<S: Signer>(payload_type: &str, payloads: &[&[u8]], signers: &[S]) -> Result<Vec<Vec<u8>>, SignError> {
    let messages: Vec<Vec<u8>> = payloads.iter().map(|p| pae(payload_type, p)).collect();
    let messages: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    let mut signatures: Vec<Vec<EnvelopeSignature>> = payloads.iter().map(|_| Vec::with_capacity(signers.len())).collect();
    for signer in signers {
        let keyid = signer.public().key_id();
        for (envelope, sig) in signatures.iter_mut().zip(signer.sign_all(&messages)?) {
            envelope.push(EnvelopeSignature { keyid: keyid.clone(), sig: STANDARD.encode(sig) });
        }
    }
    Ok(payloads.iter().zip(&signatures).map(|(payload, signatures)| encode(payload_type, payload, signatures)).collect())
}

/// Adds signatures by `signers` to an envelope, keeping the ones it holds; a key that
/// signed it already is not added twice. For updates whose signers hold their keys apart
/// (spec 7.3).
pub fn cosign<S: Signer>(bytes: &[u8], payload_type: &'static str, signers: &[S], limits: &Limits) -> Result<Vec<u8>, EnvelopeError> {
    let decoded = decode(bytes, payload_type, limits)?;
    let message = pae(payload_type, &decoded.payload);
    let mut signatures: Vec<EnvelopeSignature> =
        decoded.signatures.iter().map(|(keyid, sig)| EnvelopeSignature { keyid: keyid.clone(), sig: STANDARD.encode(sig) }).collect();
    for signer in signers {
        if !signatures.iter().any(|s| s.keyid == signer.public().key_id()) {
            signatures.push(signature(signer, &message)?);
        }
    }
    if signatures.len() > limits.signatures {
        return Err(EnvelopeError::TooManySignatures { count: signatures.len(), limit: limits.signatures });
    }
    Ok(encode(payload_type, &decoded.payload, &signatures))
}

fn signature<S: Signer>(signer: &S, message: &[u8]) -> Result<EnvelopeSignature, SignError> {
    Ok(EnvelopeSignature { keyid: signer.public().key_id(), sig: STANDARD.encode(signer.sign(message)?) })
}

/// `Envelope`'s JSON, written in place: the payload's base64 needs no escaping, and
/// serialising it through a `String` would copy and scan the largest field of every
/// bundle a publish signs twice more.
fn encode(payload_type: &str, payload: &[u8], signatures: &[EnvelopeSignature]) -> Vec<u8> {
    let encoded = base64::encoded_len(payload.len(), true).expect("a payload in memory has a base64 length");
    let mut out = Vec::with_capacity(encoded + 64 + 160 * signatures.len());
    out.extend_from_slice(b"{\"payloadType\":");
    serde_json::to_writer(&mut out, payload_type).expect("a string serialises");
    out.extend_from_slice(b",\"payload\":\"");
    let start = out.len();
    out.resize(start + encoded, 0);
    STANDARD.encode_slice(payload, &mut out[start..]).expect("the buffer holds the encoding");
    out.extend_from_slice(b"\",\"signatures\":");
    serde_json::to_writer(&mut out, signatures).expect("signatures serialise");
    out.push(b'}');
    out
}

/// Decodes received envelope bytes (spec 8.1-8.2), expecting `payload_type`.
pub fn decode(bytes: &[u8], payload_type: &'static str, limits: &Limits) -> Result<DecodedEnvelope, EnvelopeError> {
    if bytes.len() as u64 > limits.envelope_bytes {
        return Err(EnvelopeError::TooLarge { limit: limits.envelope_bytes });
    }
    let env: Envelope = serde_json::from_slice(bytes).map_err(|e| EnvelopeError::Malformed(e.to_string()))?;
    if env.payload_type != payload_type {
        return Err(EnvelopeError::PayloadType { expected: payload_type, actual: env.payload_type });
    }
    if env.signatures.len() > limits.signatures {
        return Err(EnvelopeError::TooManySignatures { count: env.signatures.len(), limit: limits.signatures });
    }
    let payload = STANDARD.decode(&env.payload).map_err(|_| EnvelopeError::Base64 { field: "payload" })?;
    let signatures = env
        .signatures
        .into_iter()
        .map(|s| {
            let raw = STANDARD.decode(&s.sig).map_err(|_| EnvelopeError::Base64 { field: "sig" })?;
            let sig: [u8; 64] = raw.try_into().map_err(|_| EnvelopeError::Base64 { field: "sig" })?;
            Ok((s.keyid, sig))
        })
        .collect::<Result<_, EnvelopeError>>()?;
    Ok(DecodedEnvelope { payload_type: env.payload_type, payload, signatures })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_writes_what_serde_writes_for_the_envelope() {
        let keys = [SigningKey::from_seed([7; 32]), SigningKey::from_seed([8; 32])];
        for payload in [&b""[..], b"{}", b"x", b"\"quoted\" \\ \n\x00\xff", &[b'a'; 1000]] {
            let written = sign(IN_TOTO_PAYLOAD_TYPE, payload, &keys);
            let decoded: Envelope = serde_json::from_slice(&written).unwrap();
            assert_eq!(written, serde_json::to_vec(&decoded).unwrap());
            assert_eq!(STANDARD.decode(&decoded.payload).unwrap(), payload);
            assert_eq!(decoded.signatures.len(), 2);
        }
    }

    #[test]
    fn cosigning_adds_each_key_once_to_what_one_signing_writes() {
        let key = |seed| SigningKey::from_seed([seed; 32]);
        let alone = sign(KEYRING_PAYLOAD_TYPE, b"{}", &[key(7)]);
        let both = cosign(&alone, KEYRING_PAYLOAD_TYPE, &[key(8), key(7)], &Limits::SPEC).unwrap();
        assert_eq!(both, sign(KEYRING_PAYLOAD_TYPE, b"{}", &[key(7), key(8)]));
        assert_eq!(cosign(&both, KEYRING_PAYLOAD_TYPE, &[key(8)], &Limits::SPEC).unwrap(), both);
        assert!(matches!(cosign(&both, IN_TOTO_PAYLOAD_TYPE, &[] as &[SigningKey], &Limits::SPEC), Err(EnvelopeError::PayloadType { .. })));
    }

    #[test]
    fn reads_the_payload_of_its_own_encoding_only() {
        let message = pae(IN_TOTO_PAYLOAD_TYPE, b"{\"a\": 1}");
        assert_eq!(pae_payload(&message, IN_TOTO_PAYLOAD_TYPE), Some(&b"{\"a\": 1}"[..]));
        assert_eq!(pae_payload(&message, "text/plain"), None, "another payload type");
        assert_eq!(pae_payload(&message[..message.len() - 1], IN_TOTO_PAYLOAD_TYPE), None, "a length that does not match");
        assert_eq!(pae_payload(b"airlock-publisher template entropy secret v1", IN_TOTO_PAYLOAD_TYPE), None);
    }

    #[test]
    fn pae_matches_the_dsse_spec_example() {
        // The example from the DSSE protocol description.
        assert_eq!(pae("http://example.com/HelloWorld", b"hello world"), b"DSSEv1 29 http://example.com/HelloWorld 11 hello world");
    }

    #[test]
    fn rejects_malformed_envelopes() {
        let l = Limits::SPEC;
        let ok = r#"{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}"#;
        assert!(decode(ok.as_bytes(), IN_TOTO_PAYLOAD_TYPE, &l).is_ok());
        let dup = r#"{"payloadType":"application/vnd.in-toto+json","payload":"e30=","payload":"e30=","signatures":[]}"#;
        assert!(matches!(decode(dup.as_bytes(), IN_TOTO_PAYLOAD_TYPE, &l), Err(EnvelopeError::Malformed(_))));
        let b64 = r#"{"payloadType":"application/vnd.in-toto+json","payload":"e30","signatures":[]}"#;
        assert_eq!(decode(b64.as_bytes(), IN_TOTO_PAYLOAD_TYPE, &l), Err(EnvelopeError::Base64 { field: "payload" }));
        assert!(matches!(decode(ok.as_bytes(), KEYRING_PAYLOAD_TYPE, &l), Err(EnvelopeError::PayloadType { .. })));
        let small = Limits { envelope_bytes: 10, ..l };
        assert_eq!(decode(ok.as_bytes(), IN_TOTO_PAYLOAD_TYPE, &small), Err(EnvelopeError::TooLarge { limit: 10 }));
    }
}
