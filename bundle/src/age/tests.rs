use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use ring::{aead, hmac};

use super::*;

/// A pair written once by `age-keygen` 1.1.1: the identity and the recipient it printed.
const KEYGEN_IDENTITY: &str = "AGE-SECRET-KEY-1K5LHFDJ6HWFQQ90K2S3LC8GW0JW2U20R622SJRFVCPFE00SQYSZSFJJFQX";
const KEYGEN_RECIPIENT: &str = "age1n0zldkf4ntfvw5dny7t2swkygrrtg9sln0mlv6e9p7c440e4ss6qgn36kj";

fn identity(seed: u8) -> Identity {
    Identity::from_secret([seed; 32])
}

fn entropy(seed: u8) -> [u8; 32] {
    [seed ^ 0xa5; 32]
}

fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// The binary file of `plaintext` for identity 1, with `entropy(seed)`.
fn binary_for(plaintext: &[u8], seed: u8) -> Vec<u8> {
    armor::decode(&encrypt(plaintext, &[identity(1).recipient()], &entropy(seed))).unwrap()
}

/// Where the payload starts: after the MAC line.
fn header_len(binary: &[u8]) -> usize {
    let mac_line = binary.windows(5).position(|w| w == b"\n--- ").unwrap() + 1;
    mac_line + binary[mac_line..].iter().position(|&c| c == b'\n').unwrap() + 1
}

/// The binary file with its header's stanza lines edited and the MAC recomputed with the
/// file key of `entropy(seed)`, so only the edit can be refused.
fn remac(binary: &[u8], seed: u8, edit: impl FnOnce(&mut String)) -> Vec<u8> {
    let end = header_len(binary);
    let header = std::str::from_utf8(&binary[..end]).unwrap();
    let mut text = header[..header.rfind("---").unwrap()].to_string();
    edit(&mut text);
    text.push_str("---");
    let mac = hmac::sign(&header_mac_key(&encrypt::file_key(&entropy(seed))), text.as_bytes());
    text = format!("{text} {}\n", STANDARD_NO_PAD.encode(mac.as_ref()));
    [text.as_bytes(), &binary[end..]].concat()
}

/// Where the share of the `nth` X25519 stanza starts.
fn share_at(binary: &[u8], nth: usize) -> usize {
    binary.windows(10).enumerate().filter(|(_, w)| w == b"-> X25519 ").nth(nth).unwrap().0 + 10
}

fn open(file: &[u8]) -> Result<Vec<u8>, AgeError> {
    decrypt(file, &[identity(1)], u64::MAX)
}

#[test]
fn round_trips_at_every_chunk_boundary() {
    for len in [0, 1, CHUNK_LEN - 1, CHUNK_LEN, CHUNK_LEN + 1, 200 * 1024] {
        let data = plaintext(len);
        let file = encrypt(&data, &[identity(1).recipient()], &entropy(1));
        assert_eq!(decrypt(&file, &[identity(1)], len as u64), Ok(data.clone()), "{len} bytes armored");
        let binary = armor::decode(&file).unwrap();
        assert_eq!(open(&binary), Ok(data), "{len} bytes binary");
        // A full last chunk is marked last, never followed by an empty one.
        let chunks = len.div_ceil(CHUNK_LEN).max(1);
        assert_eq!(binary.len() - header_len(&binary), PAYLOAD_NONCE_LEN + len + chunks * TAG_LEN, "{len} bytes");
    }
}

#[test]
fn every_recipient_decrypts() {
    let file = encrypt(b"two", &[identity(1).recipient(), identity(2).recipient()], &entropy(1));
    assert_eq!(decrypt(&file, &[identity(1)], 3), Ok(b"two".to_vec()));
    assert_eq!(decrypt(&file, &[identity(2)], 3), Ok(b"two".to_vec()));
    assert_eq!(decrypt(&file, &[identity(3), identity(2)], 3), Ok(b"two".to_vec()));
    let binary = armor::decode(&file).unwrap();
    let header = std::str::from_utf8(&binary[..header_len(&binary)]).unwrap();
    assert_eq!(header.matches("\n-> X25519 ").count(), 2);
}

#[test]
fn same_inputs_give_same_bytes() {
    let recipients = [identity(1).recipient(), identity(2).recipient()];
    let file = encrypt(b"stable", &recipients, &entropy(1));
    assert_eq!(file, encrypt(b"stable", &recipients, &entropy(1)));
    assert_ne!(file, encrypt(b"stable", &recipients, &entropy(2)));
    assert_ne!(file, encrypt(b"stable", &[recipients[1], recipients[0]], &entropy(1)));
}

#[test]
#[should_panic(expected = "at least one recipient")]
fn refuses_to_encrypt_to_no_one() {
    encrypt(b"x", &[], &entropy(1));
}

#[test]
fn rejects_wrong_identity() {
    let file = encrypt(b"secret", &[identity(1).recipient()], &entropy(1));
    assert_eq!(decrypt(&file, &[identity(2)], 100), Err(AgeError::NoIdentity));
    assert_eq!(decrypt(&file, &[], 100), Err(AgeError::NoIdentity));
}

#[test]
fn rejects_every_flipped_byte() {
    let binary = binary_for(&plaintext(100), 1);
    let end = header_len(&binary);
    for at in 0..binary.len() {
        let mut changed = binary.clone();
        changed[at] ^= 0x01;
        let err = open(&changed).unwrap_err();
        match at < end {
            true => assert!(matches!(err, AgeError::Header(_) | AgeError::NoIdentity | AgeError::Mac), "byte {at}: {err:?}"),
            false => assert_eq!(err, AgeError::Payload, "byte {at}"),
        }
    }
    let armored = armor::encode(&binary);
    for at in 0..armored.len() {
        let mut changed = armored.clone();
        changed[at] ^= 0x01;
        assert!(open(&changed).is_err(), "armored byte {at}");
    }
}

#[test]
fn rejects_truncation_at_every_length() {
    let binary = binary_for(&plaintext(100), 1);
    let end = header_len(&binary);
    for len in 0..binary.len() {
        let err = open(&binary[..len]).unwrap_err();
        // A file cut inside the payload's nonce is malformed, as age reads it.
        match len < end + PAYLOAD_NONCE_LEN {
            true => assert!(matches!(err, AgeError::Header(_)), "{len} bytes: {err:?}"),
            false => assert_eq!(err, AgeError::Payload, "{len} bytes"),
        }
    }
    // The armor's last newline is optional, as for age.
    let armored = armor::encode(&binary);
    for len in 0..armored.len() - 1 {
        assert!(open(&armored[..len]).is_err(), "armored {len} bytes");
    }
    assert_eq!(open(&armored[..armored.len() - 1]), Ok(plaintext(100)));
}

#[test]
fn rejects_changed_mac() {
    let binary = binary_for(b"x", 1);
    let end = header_len(&binary);
    let line = std::str::from_utf8(&binary[..end]).unwrap().lines().last().unwrap();
    let mut mac = STANDARD_NO_PAD.decode(&line[4..]).unwrap();
    mac[0] ^= 1;
    let changed = [&binary[..end - line.len() - 1], format!("--- {}\n", STANDARD_NO_PAD.encode(&mac)).as_bytes(), &binary[end..]].concat();
    assert_eq!(open(&changed), Err(AgeError::Mac));
}

#[test]
fn rejects_changed_stanza_of_another_recipient() {
    let file = encrypt(b"x", &[identity(1).recipient(), identity(2).recipient()], &entropy(1));
    let binary = armor::decode(&file).unwrap();
    let second = share_at(&binary, 1);
    let other = STANDARD_NO_PAD.encode(identity(9).recipient().as_bytes());
    let changed = [&binary[..second], other.as_bytes(), &binary[second + 43..]].concat();
    assert_eq!(open(&changed), Err(AgeError::Mac));
}

#[test]
fn skips_other_stanza_types() {
    let binary = binary_for(b"x", 1);
    let changed = remac(&binary, 1, |h| h.push_str("-> ssh-ed25519 abc def\nAAAA\n-> piv-p256 x\n\n"));
    assert_eq!(open(&changed), Ok(b"x".to_vec()));
}

#[test]
fn rejects_scrypt_beside_other_stanzas() {
    let binary = binary_for(b"x", 1);
    let changed = remac(&binary, 1, |h| h.push_str("-> scrypt c2FsdA 18\nAAAA\n"));
    assert!(matches!(open(&changed), Err(AgeError::Header(why)) if why.contains("scrypt")));
    let mac = STANDARD_NO_PAD.encode([0u8; 32]);
    let alone = format!("{INTRO}\n-> scrypt c2FsdA 18\nAAAA\n--- {mac}\n{}", "n".repeat(32));
    assert_eq!(open(alone.as_bytes()), Err(AgeError::NoIdentity));
}

#[test]
fn rejects_too_many_stanzas() {
    let binary = binary_for(b"x", 1);
    let others = |n: usize| move |h: &mut String| h.push_str(&"-> other\n\n".repeat(n));
    assert_eq!(open(&remac(&binary, 1, others(63))), Ok(b"x".to_vec()));
    assert!(matches!(open(&remac(&binary, 1, others(64))), Err(AgeError::Header(why)) if why.contains("64 recipient stanzas")));
    let no_stanza = format!("{INTRO}\n--- {}\n", STANDARD_NO_PAD.encode([0u8; 32]));
    assert!(matches!(open(no_stanza.as_bytes()), Err(AgeError::Header(_))));
}

#[test]
fn rejects_oversized_header() {
    let binary = binary_for(b"x", 1);
    let long_body = |h: &mut String| h.push_str(&format!("-> other\n{}\n", format!("{}\n", "A".repeat(64)).repeat(1100)));
    assert!(matches!(open(&remac(&binary, 1, long_body)), Err(AgeError::Header(why)) if why.contains("header is longer")));
    let long_line = |h: &mut String| h.push_str(&format!("-> other {}\n\n", "a".repeat(5000)));
    assert!(matches!(open(&remac(&binary, 1, long_line)), Err(AgeError::Header(why)) if why.contains("line is longer")));
}

#[test]
fn rejects_non_canonical_base64() {
    let binary = binary_for(b"x", 1);
    let end = header_len(&binary);
    // Padding on the MAC, which age writes unpadded.
    let padded = [&binary[..end - 1], b"=\n", &binary[end..]].concat();
    assert!(matches!(open(&padded), Err(AgeError::Header(_))));
    // Non-zero trailing bits in the share's last character.
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let at = share_at(&binary, 0) + 42;
    let mut changed = binary.clone();
    changed[at] = ALPHABET[ALPHABET.iter().position(|&c| c == binary[at]).unwrap() | 1];
    assert!(matches!(open(&changed), Err(AgeError::Header(why)) if why.contains("share")));
    let padded_body = remac(&binary, 1, |h| h.push_str("-> other\nAA==\n"));
    assert!(matches!(open(&padded_body), Err(AgeError::Header(_))));
}

#[test]
fn rejects_body_without_short_last_line() {
    let binary = binary_for(b"x", 1);
    let full = "A".repeat(64);
    assert_eq!(open(&remac(&binary, 1, |h| h.push_str(&format!("-> other\n{full}\n\n")))), Ok(b"x".to_vec()));
    assert!(matches!(open(&remac(&binary, 1, |h| h.push_str(&format!("-> other\n{full}\n")))), Err(AgeError::Header(_))));
}

#[test]
fn rejects_malformed_x25519_stanzas() {
    let binary = binary_for(b"x", 1);
    let zero = STANDARD_NO_PAD.encode([0u8; 32]);
    let point = STANDARD_NO_PAD.encode(identity(9).recipient().as_bytes());
    let first = |stanza: String| remac(&binary, 1, move |h| h.insert_str(INTRO.len() + 1, &stanza));
    let cases = [
        (format!("-> X25519 {zero}\n{zero}\n"), "low-order"),
        (format!("-> X25519 {point}\nAAAA\n"), "body"),
        (format!("-> X25519 {point} {point}\n{zero}\n"), "one argument"),
        ("-> X25519\n\n".to_string(), "one argument"),
        (format!("-> X25519 {}\n{zero}\n", &point[..40]), "share"),
    ];
    for (stanza, why) in cases {
        assert!(matches!(open(&first(stanza.clone())), Err(AgeError::Header(m)) if m.contains(why)), "{stanza:?}");
    }
}

#[test]
fn rejects_trailing_data() {
    let file = encrypt(b"x", &[identity(1).recipient()], &entropy(1));
    let binary = armor::decode(&file).unwrap();
    assert_eq!(open(&[&binary[..], b"x"].concat()), Err(AgeError::Payload));
    assert!(matches!(open(&[&file[..], b"garbage"].concat()), Err(AgeError::Header(_))));
    assert_eq!(open(&[b"\n  \r\n".as_slice(), &file, b"\n\t \n"].concat()), Ok(b"x".to_vec()));
    assert!(matches!(open(&[&file[..], &[b' '; 1024][..]].concat()), Err(AgeError::Header(_))));
}

#[test]
fn rejects_empty_last_chunk_after_a_full_one() {
    let binary = binary_for(&plaintext(CHUNK_LEN), 1);
    let end = header_len(&binary) + PAYLOAD_NONCE_LEN;
    let key = payload_key(&encrypt::file_key(&entropy(1)), binary[end - 16..end].try_into().unwrap());
    let forge = |chunks: &[(u64, bool, Vec<u8>)]| {
        let mut file = binary[..end].to_vec();
        for (counter, last, chunk) in chunks {
            let mut sealed = chunk.clone();
            key.seal_in_place_append_tag(chunk_nonce(*counter, *last), aead::Aad::empty(), &mut sealed).unwrap();
            file.extend_from_slice(&sealed);
        }
        file
    };
    assert_eq!(open(&forge(&[(0, true, plaintext(CHUNK_LEN))])), Ok(plaintext(CHUNK_LEN)));
    assert_eq!(open(&forge(&[(0, false, plaintext(CHUNK_LEN)), (1, true, vec![])])), Err(AgeError::Payload));
    assert_eq!(open(&forge(&[(0, false, plaintext(CHUNK_LEN))])), Err(AgeError::Payload));
    assert_eq!(open(&forge(&[(0, false, plaintext(10)), (1, true, plaintext(10))])), Err(AgeError::Payload));
}

#[test]
fn rejects_too_large_plaintext() {
    let file = encrypt(&plaintext(1000), &[identity(1).recipient()], &entropy(1));
    assert_eq!(decrypt(&file, &[identity(1)], 999), Err(AgeError::TooLarge { limit: 999 }));
    assert_eq!(decrypt(&file, &[identity(1)], 1000), Ok(plaintext(1000)));
    let big = encrypt(&plaintext(200 * 1024), &[identity(1).recipient()], &entropy(1));
    assert_eq!(decrypt(&big, &[identity(1)], CHUNK_LEN as u64), Err(AgeError::TooLarge { limit: CHUNK_LEN as u64 }));
}

#[test]
fn reads_keys_as_age_keygen_writes_them() {
    let identity = Identity::parse(&format!("  {KEYGEN_IDENTITY}\n")).unwrap();
    assert_eq!(identity.recipient().to_string(), KEYGEN_RECIPIENT);
    assert_eq!(identity.to_secret_string(), KEYGEN_IDENTITY);
    let recipient: Recipient = KEYGEN_RECIPIENT.parse().unwrap();
    assert_eq!(recipient, identity.recipient());
    assert_eq!(format!("{recipient:?}"), KEYGEN_RECIPIENT);
    let generated = Identity::generate();
    assert_ne!(generated, Identity::generate());
    assert_eq!(Identity::parse(&generated.to_secret_string()), Ok(generated));
}

#[test]
fn identity_debug_shows_only_the_recipient() {
    let identity = Identity::parse(KEYGEN_IDENTITY).unwrap();
    let debug = format!("{identity:?}");
    assert_eq!(debug, format!("Identity({KEYGEN_RECIPIENT})"));
    assert!(!debug.to_ascii_uppercase().contains(&KEYGEN_IDENTITY[16..]));
}

#[test]
fn rejects_bad_recipients() {
    let flipped = format!("{}q{}", &KEYGEN_RECIPIENT[..20], &KEYGEN_RECIPIENT[21..]);
    let mixed = format!("{}{}", &KEYGEN_RECIPIENT[..10], KEYGEN_RECIPIENT[10..].to_ascii_uppercase());
    let cases = [
        (flipped.as_str(), "checksum"),
        (&mixed, "mixes"),
        (&KEYGEN_RECIPIENT.to_ascii_uppercase(), "age1 in lower case"),
        (KEYGEN_IDENTITY, "age1 in lower case"),
        (&bech32::encode("age", &[7; 31]), "31 bytes"),
        (&bech32::encode("age", &[0; 32]), "low-order"),
        ("age1", "'1'"),
        ("", "'1'"),
        ("age1qqqqqqqqqqqqqbqqqqq", "character 18"),
    ];
    for (text, why) in cases {
        let err = text.parse::<Recipient>().unwrap_err();
        assert!(matches!(&err, AgeError::Recipient(m) if m.contains(why)), "{text:?}: {err}");
        assert!(!err.to_string().contains(&KEYGEN_IDENTITY[16..]));
    }
}

#[test]
fn rejects_bad_identities() {
    for text in [KEYGEN_IDENTITY.to_ascii_lowercase(), KEYGEN_RECIPIENT.to_string(), KEYGEN_IDENTITY[..70].to_string()] {
        let err = Identity::parse(&text).unwrap_err();
        assert!(matches!(err, AgeError::Identity(_)), "{err}");
        assert!(!err.to_string().to_ascii_uppercase().contains(&KEYGEN_IDENTITY[16..60]), "{err}");
    }
}

#[test]
fn parses_identity_files() {
    let file = format!("# created: 2026-01-01T00:00:00Z\n# public key: {KEYGEN_RECIPIENT}\n{KEYGEN_IDENTITY}\n\n");
    assert_eq!(parse_identities(&file).unwrap()[0].recipient().to_string(), KEYGEN_RECIPIENT);
    let two = format!("{file}  {}\r\n", identity(1).to_secret_string());
    assert_eq!(parse_identities(&two), Ok(vec![Identity::parse(KEYGEN_IDENTITY).unwrap(), identity(1)]));
    let bad = format!("# one\n\n{}\n", &KEYGEN_IDENTITY[..73]);
    let err = parse_identities(&bad).unwrap_err();
    assert!(matches!(&err, AgeError::Identity(m) if m.starts_with("line 3: ") && !m.contains(&KEYGEN_IDENTITY[16..])), "{err}");
    assert!(matches!(parse_identities("# nothing\n\n"), Err(AgeError::Identity(_))));
}

#[test]
fn bech32_round_trips_and_catches_one_typo() {
    for len in [0, 1, 5, 31, 32, 33, 64] {
        let data = plaintext(len);
        let text = bech32::encode("hrp", &data);
        assert_eq!(bech32::decode(&text), Ok(("hrp".to_string(), data.clone())));
        assert_eq!(bech32::decode(&text.to_ascii_uppercase()), Ok(("HRP".to_string(), data)));
        for at in 4..text.len() {
            let mut typo = text.clone().into_bytes();
            typo[at] = if typo[at] == b'q' { b'p' } else { b'q' };
            assert!(bech32::decode(std::str::from_utf8(&typo).unwrap()).is_err(), "{len} bytes, typo at {at}");
        }
    }
}

#[test]
fn armors_as_age_does() {
    let armored = |len: usize| String::from_utf8(armor::encode(&vec![0xff; len])).unwrap();
    let full = "/".repeat(64);
    assert_eq!(armored(48), format!("-----BEGIN AGE ENCRYPTED FILE-----\n{full}\n-----END AGE ENCRYPTED FILE-----\n"));
    assert_eq!(armored(49), format!("-----BEGIN AGE ENCRYPTED FILE-----\n{full}\n/w==\n-----END AGE ENCRYPTED FILE-----\n"));
    for len in [1, 47, 48, 49, 96, 100] {
        let text = armored(len);
        assert_eq!(armor::decode(text.as_bytes()), Ok(vec![0xff; len]));
        assert_eq!(armor::decode(text.replace('\n', "\r\n").as_bytes()), Ok(vec![0xff; len]), "CRLF");
    }
    let rejected = [
        armored(96).replacen(&format!("{full}\n"), &format!("{}\n{}\n", &full[..32], &full[32..]), 1),
        armored(49).replacen("\n/w==", "/w==", 1),
        armored(49).replacen("/w==\n", "", 1).replacen(&format!("{full}\n"), &format!("{full}\n\n"), 1),
        armored(49).replacen("-----END AGE ENCRYPTED FILE-----\n", "", 1),
        format!("{}{}", " ".repeat(1025), armored(1)),
    ];
    for text in rejected {
        assert!(matches!(armor::decode(text.as_bytes()), Err(AgeError::Header(_))), "{text:?}");
    }
}

/// The list stands in for a scalar multiplication: each entry, with bit 255 either way,
/// is a point X25519 maps to zero under any scalar and no recipient may be; points next to
/// them, and the recipients of identities, are neither.
#[test]
fn the_low_order_list_agrees_with_the_exchange() {
    let scalars = [[0x55; 32], [1; 32], identity(9).secret];
    for entry in LOW_ORDER {
        for top in [0, 0x80] {
            let mut point = entry;
            point[31] |= top;
            assert!(is_low_order(&point));
            assert!(scalars.iter().all(|s| x25519(*s, &point).is_none()), "{point:02x?} is not low-order");
            assert!(bech32::encode("age", &point).parse::<Recipient>().is_err());
        }
        for step in [1u8, 2, 19] {
            let mut near = entry;
            near[0] = near[0].wrapping_add(step);
            if !is_low_order(&near) {
                assert!(scalars.iter().all(|s| x25519(*s, &near).is_some()), "{near:02x?} maps to zero but is not listed");
            }
        }
    }
    for seed in 0..=255u8 {
        let recipient = identity(seed).recipient();
        assert!(!is_low_order(recipient.as_bytes()));
        assert_eq!(recipient.to_string().parse::<Recipient>(), Ok(recipient));
    }
}
