//! The checked-in test vectors (spec section 13) equal what the code produces, the good
//! envelope verifies, and every reject vector fails with the error written beside it.

use std::path::PathBuf;

use airlock_bundle::Limits;
use airlock_bundle::verify::{Floor, verify_envelope};
use airlock_store::vectors;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/vectors")
}

#[test]
fn checked_in_vectors_equal_what_the_code_produces() {
    for (path, bytes) in vectors::all() {
        let on_disk = std::fs::read(dir().join(&path))
            .unwrap_or_else(|e| panic!("{path}: {e}; run `cargo run -p airlock-store --features testing --example make-vectors`"));
        assert!(on_disk == bytes, "{path} differs from the code's output: the format changed, or the vector was edited");
    }
}

#[test]
fn the_good_envelope_verifies_with_the_checked_in_keyring() {
    let fx = vectors::fixture();
    let keyring = airlock_bundle::Keyring::parse(&std::fs::read(dir().join("keyring.json")).unwrap(), &Limits::SPEC).unwrap();
    let envelope = std::fs::read(dir().join("envelope.json")).unwrap();
    let floor = Floor::default();
    let mut expect = fx.expect(&floor);
    expect.keyring = &keyring;
    let verified = verify_envelope(&envelope, None, &expect, &Limits::SPEC).unwrap();
    let expected = std::fs::read_to_string(dir().join("expected.txt")).unwrap();
    assert!(expected.starts_with(&format!("bundle {}\n", verified.digest())));
}

#[test]
fn every_reject_vector_fails_with_its_expected_error() {
    let fx = vectors::fixture();
    let floor = Floor::default();
    let mut cases = 0;
    for case in std::fs::read_dir(dir().join("rejects")).unwrap() {
        let case = case.unwrap().path();
        let envelope = std::fs::read(case.join("envelope.json")).unwrap();
        let expected = std::fs::read_to_string(case.join("expected-error.txt")).unwrap();
        let err = verify_envelope(&envelope, None, &fx.expect(&floor), &Limits::SPEC).unwrap_err();
        assert_eq!(format!("{err}\n"), expected, "{}", case.display());
        cases += 1;
    }
    assert_eq!(cases, 9);
}

#[test]
fn the_sealed_vector_verifies_and_opens_to_its_signed_plaintext() {
    let fx = vectors::fixture();
    let sealed = dir().join("sealed");
    let envelope = std::fs::read(sealed.join("envelope.json")).unwrap();
    let floor = Floor::default();
    let verified = verify_envelope(&envelope, None, &fx.expect(&floor), &Limits::SPEC).unwrap();
    let identities = airlock_bundle::age::parse_identities(&std::fs::read_to_string(sealed.join("identity.txt")).unwrap()).unwrap();
    let stored = format!("{}.age", vectors::SEALED_SECRET);
    let entry = verified.statement().predicate.files.iter().find(|f| f.path == stored).expect("the statement lists the sealed file");
    let plaintext_entry = entry.plaintext.as_ref().expect("a sealed file's entry carries its plaintext");
    let ciphertext = std::fs::read(sealed.join(&stored)).unwrap();
    assert_eq!(airlock_bundle::Digest::of(&ciphertext).hex(), entry.sha256);
    let plaintext = airlock_bundle::age::decrypt(&ciphertext, &identities, Limits::SPEC.file_bytes).unwrap();
    assert_eq!(plaintext.len() as u64, plaintext_entry.size);
    assert_eq!(airlock_bundle::Digest::of(&plaintext).hex(), plaintext_entry.sha256);
    let text = String::from_utf8(plaintext).unwrap();
    assert!(text.starts_with(airlock_bundle::seal::SALT_PREFIX), "{text}");
    assert!(text.ends_with("password: vector-password\n"), "{text}");
    let stranger = airlock_bundle::age::Identity::from_secret([8; 32]);
    assert!(airlock_bundle::age::decrypt(&ciphertext, &[stranger], Limits::SPEC.file_bytes).is_err());
}

#[test]
fn the_rotation_vector_leads_to_its_keyring_and_every_attempt_fails_as_written() {
    let fx = vectors::fixture();
    let rotation = dir().join("rotation");
    let read = |path: PathBuf| std::fs::read(path).unwrap();
    let keyring = airlock_bundle::Keyring::parse(&read(rotation.join("keyring.json")), &Limits::SPEC).unwrap();
    let floor = Floor::default();
    let expect = airlock_bundle::Expectation { keyring: &keyring, ..fx.expect(&floor) };
    let (chain, envelope) = (read(rotation.join("keyrings.json")), read(rotation.join("envelope.json")));
    let verified = verify_envelope(&envelope, Some(&chain), &expect, &Limits::SPEC).unwrap();
    assert_eq!(verified.keyring().to_json(), read(rotation.join("keyring-v3.json")));
    assert_eq!(verified.adopted_updates().len(), 2);
    for case in vectors::ROTATION_REJECTS {
        let dir = rotation.join("rejects").join(case);
        let or_good = |name: &str, good: &Vec<u8>| std::fs::read(dir.join(name)).unwrap_or_else(|_| good.clone());
        let err = verify_envelope(&or_good("envelope.json", &envelope), Some(&or_good("keyrings.json", &chain)), &expect, &Limits::SPEC)
            .unwrap_err();
        assert_eq!(format!("{err}\n"), std::fs::read_to_string(dir.join("expected-error.txt")).unwrap(), "{case}");
    }
}
