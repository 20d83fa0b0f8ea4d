//! Sprig's random functions: `randAlphaNum`, `randAlpha`, `randAscii`, `randNumeric`,
//! `randBytes`, `randInt`, `shuffle` and `uuidv4`. They draw from the render's stream
//! (`session`), so they repeat while the render's inputs do; with no entropy they fail.
//! Draws are uniform (rejection sampling, no modulo bias).

use std::sync::Arc;

use base64::Engine as _;
use gotmpl::{Value, ValueFunc};
use rand_chacha::ChaCha20Rng;
use rand_core::Rng as _;

use super::args::{count_at, failure, int_at, str_arg, text, want};
use crate::render::template::bounds;
use crate::render::template::session::Session;

const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const NUMERIC: &[u8] = b"0123456789";

pub(super) fn funcs(session: &Session) -> Vec<(&'static str, ValueFunc)> {
    let ascii: Vec<u8> = (32..=126).collect();
    let mut out = vec![
        chars(session, "randAlphaNum", ALPHANUMERIC.to_vec()),
        chars(session, "randAlpha", ALPHA.to_vec()),
        chars(session, "randNumeric", NUMERIC.to_vec()),
        chars(session, "randAscii", ascii),
    ];
    let s = session.clone();
    out.push((
        "randBytes",
        Arc::new(move |a: &[Value]| {
            want("randBytes", a, 1)?;
            let count = count_at("randBytes", a, 0)?;
            bounds::check("randBytes", count.div_ceil(3).saturating_mul(4))?;
            let bytes = s.random("randBytes", |stream| {
                let mut bytes = vec![0; count];
                stream.fill_bytes(&mut bytes);
                Ok(bytes)
            })?;
            Ok(text(base64::engine::general_purpose::STANDARD.encode(bytes)))
        }),
    ));
    let s = session.clone();
    out.push((
        "randInt",
        Arc::new(move |a: &[Value]| {
            want("randInt", a, 2)?;
            let (min, max) = (int_at("randInt", a, 0)?, int_at("randInt", a, 1)?);
            let span = max
                .checked_sub(min)
                .filter(|span| *span > 0)
                .ok_or_else(|| failure("randInt", format!("max {max} must exceed min {min}")))?;
            s.random("randInt", |stream| Ok(Value::Int(min + below(stream, span as u64) as i64)))
        }),
    ));
    let s = session.clone();
    out.push((
        "shuffle",
        Arc::new(move |a: &[Value]| {
            let mut characters: Vec<char> = str_arg("shuffle", a, 1, 0)?.chars().collect();
            s.random("shuffle", |stream| {
                // Fisher-Yates.
                for i in (1..characters.len()).rev() {
                    characters.swap(i, below(stream, i as u64 + 1) as usize);
                }
                Ok(text(characters.into_iter().collect::<String>()))
            })
        }),
    ));
    let s = session.clone();
    out.push((
        "uuidv4",
        Arc::new(move |a: &[Value]| {
            want("uuidv4", a, 0)?;
            s.random("uuidv4", |stream| Ok(text(uuid_v4(stream))))
        }),
    ));
    out
}

/// A function drawing `count` characters from `alphabet`.
fn chars(session: &Session, name: &'static str, alphabet: Vec<u8>) -> (&'static str, ValueFunc) {
    let session = session.clone();
    let f = move |a: &[Value]| {
        want(name, a, 1)?;
        let count = count_at(name, a, 0)?;
        bounds::check(name, count)?;
        session.random(name, |stream| {
            let picked: String = (0..count).map(|_| char::from(alphabet[below(stream, alphabet.len() as u64) as usize])).collect();
            Ok(text(picked))
        })
    };
    (name, Arc::new(f))
}

/// A uniform draw from `0..n`, `n > 0`.
fn below(stream: &mut ChaCha20Rng, n: u64) -> u64 {
    // Values past the last whole multiple of n would favour the low residues.
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let draw = stream.next_u64();
        if draw < zone {
            return draw % n;
        }
    }
}

/// A version 4 UUID (RFC 9562) in its canonical lower-case form, as google/uuid prints it.
fn uuid_v4(stream: &mut ChaCha20Rng) -> String {
    let mut bytes = [0u8; 16];
    stream.fill_bytes(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}
