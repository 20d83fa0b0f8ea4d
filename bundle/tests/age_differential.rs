//! Airlock's age code against the `age` crate, the reference implementation in Rust, in
//! both directions: what one encrypts the other decrypts to the same bytes, for every
//! STREAM boundary, armored and binary, one or several recipients, and both refuse a file
//! for someone else. Keys written by one are read by the other to the same recipient.

use std::io::Write;
use std::str::FromStr;

use age::secrecy::ExposeSecret;

use age::armor::{ArmoredWriter, Format};
use airlock_bundle::age::{AgeError, Identity, Recipient, decrypt, encrypt};

/// age's STREAM chunk: the sizes around its multiples are where readers go wrong.
const CHUNK: usize = 64 * 1024;
const SIZES: [usize; 9] = [0, 1, 100, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 2 * CHUNK + 17, 300_000];

fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

fn reference_identity(ours: &Identity) -> age::x25519::Identity {
    age::x25519::Identity::from_str(&ours.to_secret_string()).expect("age reads Airlock's identity string")
}

fn reference_recipient(ours: &Recipient) -> age::x25519::Recipient {
    age::x25519::Recipient::from_str(&ours.to_string()).expect("age reads Airlock's recipient string")
}

/// Encrypts with the age crate to every recipient, armored or binary.
fn reference_encrypt(plain: &[u8], recipients: &[age::x25519::Recipient], armored: bool) -> Vec<u8> {
    let encryptor = age::Encryptor::with_recipients(recipients.iter().map(|r| r as &dyn age::Recipient)).expect("recipients");
    let mut out = Vec::new();
    let format = if armored { Format::AsciiArmor } else { Format::Binary };
    let mut writer = encryptor.wrap_output(ArmoredWriter::wrap_output(&mut out, format).expect("armor")).expect("header");
    writer.write_all(plain).expect("payload");
    writer.finish().and_then(|armor| armor.finish()).expect("finish");
    out
}

#[test]
fn keys_read_both_ways() {
    let ours = Identity::generate();
    let reference = reference_identity(&ours);
    assert_eq!(reference.to_public().to_string(), ours.recipient().to_string());

    let generated = age::x25519::Identity::generate();
    let secret = generated.to_string();
    let parsed = Identity::parse(secret.expose_secret()).expect("Airlock reads age's identity");
    assert_eq!(parsed.recipient(), generated.to_public().to_string().parse().expect("Airlock reads age's recipient"));
}

#[test]
fn reference_encrypts_airlock_decrypts() {
    let identities: Vec<Identity> = (0..3).map(|_| Identity::generate()).collect();
    let recipients: Vec<age::x25519::Recipient> = identities.iter().map(|i| reference_recipient(&i.recipient())).collect();
    for size in SIZES {
        let plain = plaintext(size);
        for armored in [true, false] {
            let file = reference_encrypt(&plain, &recipients[..1], armored);
            assert_eq!(decrypt(&file, &identities[..1], u64::MAX).expect("one recipient"), plain, "{size} bytes, armored {armored}");
            let file = reference_encrypt(&plain, &recipients, armored);
            assert_eq!(decrypt(&file, &identities[2..], u64::MAX).expect("third of three"), plain, "{size} bytes, armored {armored}");
        }
    }
    let stranger = Identity::generate();
    let file = reference_encrypt(b"for someone else", &recipients, true);
    assert_eq!(decrypt(&file, &[stranger], u64::MAX), Err(AgeError::NoIdentity));
}

#[test]
fn airlock_encrypts_reference_decrypts() {
    let identities: Vec<Identity> = (0..3).map(|_| Identity::generate()).collect();
    let recipients: Vec<Recipient> = identities.iter().map(Identity::recipient).collect();
    for (n, size) in SIZES.into_iter().enumerate() {
        let plain = plaintext(size);
        let entropy = [n as u8 + 1; 32];
        let file = encrypt(&plain, &recipients[..1], &entropy);
        assert_eq!(age::decrypt(&reference_identity(&identities[0]), &file).expect("one recipient"), plain, "{size} bytes");
        let file = encrypt(&plain, &recipients, &entropy);
        assert_eq!(age::decrypt(&reference_identity(&identities[1]), &file).expect("second of three"), plain, "{size} bytes");
    }
    let file = encrypt(b"for someone else", &recipients, &[9; 32]);
    assert!(matches!(age::decrypt(&age::x25519::Identity::generate(), &file), Err(age::DecryptError::NoMatchingKeys)));
}
