//! Sprig's password and secret functions: `bcrypt`, `htpasswd`, `derivePassword`,
//! `encryptAES` and `decryptAES`.
//!
//! `bcrypt`'s salt (and so `htpasswd`'s) and `encryptAES`'s IV come from the render's
//! stream, so the hashes and ciphertexts repeat while the render's inputs do. The costly
//! ones (`bcrypt`, `htpasswd`, `derivePassword`) count against the render's budget.
//! Departure, on bad input only: Sprig returns the error text as the password, hash or
//! plaintext; here the render fails with the reason.

use std::sync::Arc;

use base64::Engine as _;
use cbc::cipher::block_padding::{NoPadding, Pkcs7};
use cbc::cipher::{BlockModeDecrypt as _, BlockModeEncrypt as _, KeyIvInit as _};
use gotmpl::{Value, ValueFunc};
use rand_core::Rng as _;
use ring::hmac;

use super::args::{Call, failure, int_at, str_arg, string_at, text, want};
use crate::render::template::session::Session;

/// Go's `bcrypt.DefaultCost`, which Sprig uses.
const BCRYPT_COST: u32 = 10;

/// The Master Password algorithm's scope, which derivePassword salts with.
const MASTER_PASSWORD_SCOPE: &[u8] = b"com.lyndir.masterpassword";

pub(super) fn funcs(session: &Session) -> Vec<(&'static str, ValueFunc)> {
    let (s1, s2, s3, s4) = (session.clone(), session.clone(), session.clone(), session.clone());
    vec![
        ("bcrypt", Arc::new(move |a: &[Value]| Ok(text(bcrypt(&s1, "bcrypt", str_arg("bcrypt", a, 1, 0)?)?))) as ValueFunc),
        (
            "htpasswd",
            Arc::new(move |a: &[Value]| {
                let (user, password) = (str_arg("htpasswd", a, 2, 0)?, string_at("htpasswd", a, 1)?);
                if user.contains(':') {
                    return Err(failure("htpasswd", format!("invalid username: {user}")));
                }
                Ok(text(format!("{user}:{}", bcrypt(&s2, "htpasswd", password)?)))
            }),
        ),
        (
            "derivePassword",
            Arc::new(move |a: &[Value]| {
                s3.costly("derivePassword")?;
                derive_password(a)
            }),
        ),
        (
            "encryptAES",
            Arc::new(move |a: &[Value]| {
                let (password, plaintext) = (str_arg("encryptAES", a, 2, 0)?, string_at("encryptAES", a, 1)?);
                if plaintext.is_empty() {
                    return Ok(text(""));
                }
                let mut iv = [0u8; 16];
                s4.random("encryptAES", |stream| {
                    stream.fill_bytes(&mut iv);
                    Ok(())
                })?;
                let sealed = cbc::Encryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv.into())
                    .encrypt_padded_vec::<Pkcs7>(plaintext.as_bytes());
                Ok(text(base64::engine::general_purpose::STANDARD.encode([iv.as_slice(), &sealed].concat())))
            }),
        ),
        ("decryptAES", Arc::new(|a: &[Value]| decrypt_aes(a))),
    ]
}

/// Go's bcrypt of `password` at the default cost, with a salt from the render's stream.
fn bcrypt(session: &Session, name: &str, password: &str) -> gotmpl::Result<String> {
    session.costly(name)?;
    let mut salt = [0u8; 16];
    session.random(name, |stream| {
        stream.fill_bytes(&mut salt);
        Ok(())
    })?;
    let hash = bcrypt::non_truncating_hash_with_salt(password, BCRYPT_COST, salt)
        .map_err(|e| failure(name, format!("failed to encrypt string with bcrypt: {e}")))?;
    Ok(hash.format_for_version(bcrypt::Version::TwoA))
}

/// Sprig's AES key: the password's first 32 bytes, zero-padded.
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let bytes = password.as_bytes();
    key[..bytes.len().min(32)].copy_from_slice(&bytes[..bytes.len().min(32)]);
    key
}

/// Sprig's `decryptAES PASSWORD BASE64`: the IV is the first block, and the last byte
/// says how much padding to drop.
fn decrypt_aes(args: &[Value]) -> Call {
    let (password, sealed) = (str_arg("decryptAES", args, 2, 0)?, string_at("decryptAES", args, 1)?);
    if sealed.is_empty() {
        return Ok(text(""));
    }
    let bytes =
        base64::engine::general_purpose::STANDARD.decode(sealed).map_err(|e| failure("decryptAES", format!("invalid base64: {e}")))?;
    if bytes.len() < 32 || bytes.len() % 16 != 0 {
        return Err(failure("decryptAES", "the ciphertext is not an IV and whole AES blocks"));
    }
    let (iv, body) = bytes.split_at(16);
    let iv: [u8; 16] = iv.try_into().map_err(|_| failure("decryptAES", "the IV is not 16 bytes"))?;
    let plain = cbc::Decryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv.into())
        .decrypt_padded_vec::<NoPadding>(body)
        .map_err(|e| failure("decryptAES", e))?;
    let padding = usize::from(plain.last().copied().unwrap_or(0));
    let kept = plain.len().checked_sub(padding).ok_or_else(|| failure("decryptAES", "the padding is longer than the plaintext"))?;
    String::from_utf8(plain[..kept].to_vec())
        .map(text)
        .map_err(|_| failure("decryptAES", "the plaintext is not UTF-8 text (wrong password?)"))
}

/// The Master Password templates per password type: each letter picks a character class.
fn templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn class(letter: u8) -> &'static [u8] {
    match letter {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

/// Sprig's `derivePassword COUNTER TYPE PASSWORD USER SITE`: the Master Password
/// algorithm (scrypt of the master password salted with the user, then HMAC-SHA256 of
/// the site and counter choosing a template and its characters). Deterministic.
fn derive_password(args: &[Value]) -> Call {
    want("derivePassword", args, 5)?;
    let counter = u32::try_from(int_at("derivePassword", args, 0)?)
        .map_err(|_| failure("derivePassword", "the counter must fit in 32 unsigned bits"))?;
    let strings: Vec<&str> = (1..5).map(|i| string_at("derivePassword", args, i)).collect::<Result<_, _>>()?;
    let (kind, password, user, site) = (strings[0], strings[1], strings[2], strings[3]);
    let templates = templates(kind).ok_or_else(|| failure("derivePassword", format!("cannot find password template {kind}")))?;
    let length = |s: &str| u32::try_from(s.len()).map(u32::to_be_bytes).map_err(|_| failure("derivePassword", "an argument is too long"));
    let salt = [MASTER_PASSWORD_SCOPE, &length(user)?, user.as_bytes()].concat();
    let mut key = [0u8; 64];
    let params = scrypt::Params::new(15, 8, 2).map_err(|e| failure("derivePassword", e))?;
    scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| failure("derivePassword", e))?;
    let message = [MASTER_PASSWORD_SCOPE, &length(site)?, site.as_bytes(), &counter.to_be_bytes()].concat();
    let seed = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), &message);
    let seed = seed.as_ref();
    let template = templates[usize::from(seed[0]) % templates.len()].as_bytes();
    let derived: String = template
        .iter()
        .enumerate()
        .map(|(i, letter)| {
            let characters = class(*letter);
            char::from(characters[usize::from(seed[i + 1]) % characters.len()])
        })
        .collect();
    Ok(text(derived))
}
