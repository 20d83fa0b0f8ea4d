//! Reading an age file: armor off, header parsed with its sizes capped, the file key
//! unwrapped from an X25519 stanza, the header MAC checked over the bytes received, then
//! the STREAM payload opened chunk by chunk into a plaintext no larger than the caller's cap.
//! Strict where age is strict: canonical base64, a marked last chunk, no trailing data.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use ring::{aead, hmac};
use zeroize::Zeroizing;

use super::{
    AgeError, CHUNK_LEN, FILE_KEY_LEN, INTRO, Identity, PAYLOAD_NONCE_LEN, TAG_LEN, armor, chunk_nonce, header_mac_key, payload_key,
    wrap_key, x25519,
};

/// Bytes of a whole header: 64 X25519 stanzas take under 7 KiB; this leaves room for longer
/// stanza types and bounds the scan of a hostile file.
const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Bytes of one header line without its newline: an X25519 stanza line takes 53, and plugin
/// stanzas carry longer arguments.
const MAX_LINE_BYTES: usize = 4096;
/// Stanzas in one header: one per recipient; more is a file built to make readers work.
const MAX_STANZAS: usize = 64;
/// Bytes of one full stanza body line, 64 columns of base64.
const BODY_LINE_BYTES: usize = 48;
/// A chunk's ciphertext: its plaintext and the tag.
const SEALED_CHUNK_LEN: usize = CHUNK_LEN + TAG_LEN;

/// Decrypts an armored or binary age file with the first identity that unwraps one of its
/// X25519 stanzas. Other stanza types are skipped; an scrypt stanza must be alone, as age
/// requires, and then no identity here opens it. The plaintext may be at most
/// `max_plaintext` bytes: its size follows from the payload's length, which is checked
/// before any chunk is opened, so no more is ever allocated.
pub fn decrypt(file: &[u8], identities: &[Identity], max_plaintext: u64) -> Result<Vec<u8>, AgeError> {
    Opener::new(identities).open(file, max_plaintext)
}

/// Decrypts many files with the same identities, as [`decrypt`] does each, but unwraps a
/// header it has seen before, byte for byte, only once: files written under one
/// [`super::FileKey`] share their header, and an X25519 exchange is the costly part of
/// opening a small file. Identical header bytes, MAC included, can only give the file key
/// they gave before, so the result is the same as opening each file alone.
pub struct Opener<'a> {
    identities: &'a [Identity],
    known: HashMap<Vec<u8>, Zeroizing<[u8; FILE_KEY_LEN]>>,
}

impl<'a> Opener<'a> {
    pub fn new(identities: &'a [Identity]) -> Opener<'a> {
        Opener { identities, known: HashMap::new() }
    }

    /// One file, as [`decrypt`].
    pub fn open(&mut self, file: &[u8], max_plaintext: u64) -> Result<Vec<u8>, AgeError> {
        let dearmored;
        let binary = if armor::is_armored(file) {
            dearmored = armor::decode(file)?;
            &dearmored[..]
        } else {
            file
        };
        let header = Header::parse(binary)?;
        if header.stanzas.len() > 1 && header.stanzas.iter().any(|s| s.kind == b"scrypt") {
            return Err(header_err("an scrypt stanza must be the only one"));
        }
        let whole = &binary[..binary.len() - header.payload.len()];
        if let Some(file_key) = self.known.get(whole) {
            return open_payload(file_key, header.payload, max_plaintext);
        }
        let file_key = unwrap_file_key(&header.stanzas, self.identities)?;
        hmac::verify(&header_mac_key(&file_key), header.mac_input, &header.mac).map_err(|_| AgeError::Mac)?;
        let opened = open_payload(&file_key, header.payload, max_plaintext)?;
        self.known.insert(whole.to_vec(), file_key);
        Ok(opened)
    }
}

fn header_err(why: &str) -> AgeError {
    AgeError::Header(why.to_string())
}

/// One recipient stanza: its type, its other arguments and its decoded body.
struct Stanza<'a> {
    kind: &'a [u8],
    args: Vec<&'a [u8]>,
    body: Vec<u8>,
}

/// A parsed header and what follows it.
struct Header<'a> {
    stanzas: Vec<Stanza<'a>>,
    /// The received bytes the MAC covers: up to and including the final "---".
    mac_input: &'a [u8],
    mac: [u8; 32],
    payload: &'a [u8],
}

impl<'a> Header<'a> {
    fn parse(binary: &'a [u8]) -> Result<Header<'a>, AgeError> {
        let mut lines = Lines { data: binary, at: 0 };
        if lines.next()? != INTRO.as_bytes() {
            return Err(header_err("the first line is not age-encryption.org/v1"));
        }
        let mut stanzas = Vec::new();
        loop {
            let start = lines.at;
            let line = lines.next()?;
            if line.starts_with(b"---") {
                let Some(encoded) = line.strip_prefix(b"--- ").filter(|mac| !mac.contains(&b' ')) else {
                    return Err(header_err("the MAC line is not \"--- \" and one argument"));
                };
                let mac = decode_exact::<32>(encoded).ok_or_else(|| header_err("the header MAC is not 32 bytes of unpadded base64"))?;
                let (mac_input, payload) = (&binary[..start + 3], &binary[lines.at..]);
                if stanzas.is_empty() {
                    return Err(header_err("the header has no recipient stanza"));
                }
                return Ok(Header { stanzas, mac_input, mac, payload });
            }
            if stanzas.len() == MAX_STANZAS {
                return Err(AgeError::Header(format!("the header has more than {MAX_STANZAS} recipient stanzas")));
            }
            stanzas.push(stanza(line, &mut lines)?);
        }
    }
}

/// Parses the stanza that starts with `line`, reading its body lines from `lines`.
fn stanza<'a>(line: &'a [u8], lines: &mut Lines<'a>) -> Result<Stanza<'a>, AgeError> {
    let Some(args) = line.strip_prefix(b"-> ") else {
        return Err(header_err("a line that should start a stanza does not start with \"-> \""));
    };
    let mut args: Vec<&[u8]> = args.split(|&c| c == b' ').collect();
    if args.iter().any(|a| a.is_empty() || !a.iter().all(|c| (33..=126).contains(c))) {
        return Err(header_err("a stanza argument is empty or not printable ASCII"));
    }
    let kind = args.remove(0);
    let mut body = Vec::new();
    loop {
        let line = lines.next()?;
        let decoded = STANDARD_NO_PAD.decode(line).map_err(|_| header_err("a stanza body line is not canonical unpadded base64"))?;
        if decoded.len() > BODY_LINE_BYTES {
            return Err(header_err("a stanza body line is longer than 64 columns"));
        }
        body.extend_from_slice(&decoded);
        if decoded.len() < BODY_LINE_BYTES {
            return Ok(Stanza { kind, args, body });
        }
    }
}

/// Decodes unpadded canonical base64 of exactly `N` bytes.
fn decode_exact<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    STANDARD_NO_PAD.decode(text).ok()?.try_into().ok()
}

/// The header's lines, without their `\n`, each capped, the header as a whole capped too.
struct Lines<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Lines<'a> {
    fn next(&mut self) -> Result<&'a [u8], AgeError> {
        let rest = &self.data[self.at..];
        let Some(len) = rest.iter().take(MAX_LINE_BYTES + 1).position(|&c| c == b'\n') else {
            return Err(match rest.len() > MAX_LINE_BYTES {
                true => AgeError::Header(format!("a header line is longer than {MAX_LINE_BYTES} bytes")),
                false => header_err("the header ends before its MAC line"),
            });
        };
        self.at += len + 1;
        if self.at > MAX_HEADER_BYTES {
            return Err(AgeError::Header(format!("the header is longer than {MAX_HEADER_BYTES} bytes")));
        }
        Ok(&rest[..len])
    }
}

/// The file key from the first stanza an identity unwraps, identities in order.
fn unwrap_file_key(stanzas: &[Stanza<'_>], identities: &[Identity]) -> Result<Zeroizing<[u8; FILE_KEY_LEN]>, AgeError> {
    for identity in identities {
        for stanza in stanzas.iter().filter(|s| s.kind == b"X25519") {
            if let Some(key) = unwrap_x25519(stanza, identity)? {
                return Ok(key);
            }
        }
    }
    Err(AgeError::NoIdentity)
}

/// The file key of an X25519 stanza, `None` if it is not addressed to `identity`. A stanza
/// no X25519 identity could open is an error, as in age, not a stanza for someone else.
fn unwrap_x25519(stanza: &Stanza<'_>, identity: &Identity) -> Result<Option<Zeroizing<[u8; FILE_KEY_LEN]>>, AgeError> {
    let [share] = stanza.args[..] else {
        return Err(header_err("an X25519 stanza does not have exactly one argument"));
    };
    let share = decode_exact::<32>(share).ok_or_else(|| header_err("an X25519 stanza's share is not 32 bytes of unpadded base64"))?;
    if stanza.body.len() != FILE_KEY_LEN + TAG_LEN {
        return Err(header_err("an X25519 stanza's body is not a wrapped 16-byte file key"));
    }
    let shared = x25519(identity.secret, &share).ok_or_else(|| header_err("an X25519 stanza's share is a low-order point"))?;
    let mut body = Zeroizing::new(stanza.body.clone());
    let key = wrap_key(&shared, &share, &identity.recipient());
    match key.open_in_place(aead::Nonce::assume_unique_for_key([0; 12]), aead::Aad::empty(), &mut body) {
        Ok(opened) => Ok(Some(Zeroizing::new(opened.try_into().expect("16 bytes, checked above")))),
        Err(_) => Ok(None),
    }
}

/// Opens the payload: the 16-byte nonce, then the STREAM chunks.
fn open_payload(file_key: &[u8; FILE_KEY_LEN], payload: &[u8], max_plaintext: u64) -> Result<Vec<u8>, AgeError> {
    // The nonce is part of the header in age's reading: a file cut inside it is malformed,
    // not a payload that was changed.
    let (nonce, stream) = payload.split_first_chunk::<PAYLOAD_NONCE_LEN>().ok_or_else(|| header_err("the payload nonce is cut short"))?;
    let (chunks, size) = stream_shape(stream.len()).ok_or(AgeError::Payload)?;
    if size as u64 > max_plaintext {
        return Err(AgeError::TooLarge { limit: max_plaintext });
    }
    let key = payload_key(file_key, nonce);
    // Room for the last chunk's tag while it is opened in place.
    let mut out = Vec::with_capacity(size + TAG_LEN);
    for (counter, sealed) in stream.chunks(SEALED_CHUNK_LEN).enumerate() {
        let start = out.len();
        out.extend_from_slice(sealed);
        let nonce = chunk_nonce(counter as u64, counter + 1 == chunks);
        let opened = key.open_in_place(nonce, aead::Aad::empty(), &mut out[start..]).map_err(|_| AgeError::Payload)?.len();
        out.truncate(start + opened);
    }
    Ok(out)
}

/// The number of chunks and the plaintext size of a STREAM of `len` bytes, `None` if no
/// STREAM has that length. Every chunk but the last is full, so the length alone fixes
/// where chunks end: a last chunk shorter than a tag is cut, and an empty one after a
/// full chunk is refused as age refuses it.
fn stream_shape(len: usize) -> Option<(usize, usize)> {
    let chunks = len.div_ceil(SEALED_CHUNK_LEN);
    let last = len.checked_sub((chunks.checked_sub(1)?) * SEALED_CHUNK_LEN)?;
    if last < TAG_LEN || (last == TAG_LEN && chunks > 1) {
        return None;
    }
    Some((chunks, len - chunks * TAG_LEN))
}
