//! The root rotation vectors (spec 13, `rotation/`): a keyring with an offline root, the
//! chain by which its root revokes the online key and then replaces one of its own keys,
//! a bundle the new online key signed, and the attempts that must fail.

use airlock_bundle::envelope::{self, KEYRING_PAYLOAD_TYPE};
use airlock_bundle::keyring::{self, Role};
use airlock_bundle::limits::Limits;
use airlock_bundle::sign::{self, Release};
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::{Expectation, Floor, verify_envelope};
use airlock_bundle::{Keyring, PartSettings, SigningKey};

/// The reject cases: each holds a `keyrings.json`, an `envelope.json` or both, which take
/// the place of the good ones, and `expected-error.txt`.
pub const ROTATION_REJECTS: [&str; 3] = ["online-key-rotates", "new-root-unsigned", "revoked-key-signs"];

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed([seed; 32])
}

fn role(name: &'static str, threshold: usize, seeds: &[u8]) -> Role {
    Role::new(name, threshold, seeds.iter().map(|&s| key(s).public()).collect(), &Limits::SPEC).expect("a valid role")
}

/// Version 1: online key `[1; 32]`, root 2 of `[2; 32]`, `[3; 32]`, `[4; 32]`.
fn v1() -> Keyring {
    Keyring::with_root(1, role("online", 1, &[1]), Some(role("root", 2, &[2, 3, 4]))).expect("valid")
}

/// Version 2: the root revokes the online key for `[5; 32]`.
fn v2() -> Keyring {
    Keyring::with_root(2, role("online", 1, &[5]), Some(role("root", 2, &[2, 3, 4]))).expect("valid")
}

/// Version 3: the root replaces its key `[2; 32]` by `[6; 32]`.
fn v3() -> Keyring {
    Keyring::with_root(3, role("online", 1, &[5]), Some(role("root", 2, &[3, 4, 6]))).expect("valid")
}

/// A bundle of the fixture's files, version 1, under keyring `keyring_version`, by `signer`.
fn bundle(keyring_version: u64, signer: u8) -> Vec<u8> {
    let fx = Fixture::new(1);
    let release = Release { keyring_version, ..fx.release(1) };
    sign::sign(Fixture::bundle(Fixture::files()), &release, &|_: &str| PartSettings::default(), &[key(signer)], None).envelope
}

/// The rotation vector files: (path under `testdata/vectors/`, bytes).
pub fn all() -> Vec<(String, Vec<u8>)> {
    let to_v2 = v2().sign_update(&[key(2), key(3)]);
    // The old root's threshold (keys 2 and 3) and the new one's (3 and 6), 6 signing apart.
    let to_v3 = envelope::cosign(&v3().sign_update(&[key(2), key(3)]), KEYRING_PAYLOAD_TYPE, &[key(6)], &Limits::SPEC).expect("cosigns");
    let good_chain = keyring::chain(&[to_v2.clone(), to_v3]);
    let good = bundle(3, 5);
    let mut out = vec![
        ("rotation/keyring.json".to_string(), v1().to_json()),
        ("rotation/keyrings.json".to_string(), good_chain.clone()),
        ("rotation/keyring-v3.json".to_string(), v3().to_json()),
        ("rotation/envelope.json".to_string(), good.clone()),
    ];
    let online_rotates = keyring::chain(&[v2().sign_update(&[key(1)])]);
    let unsigned_root = keyring::chain(&[to_v2, v3().sign_update(&[key(2), key(3)])]);
    let cases: [(&str, &[u8], &[u8]); 3] = [
        (ROTATION_REJECTS[0], &online_rotates, &good),
        (ROTATION_REJECTS[1], &unsigned_root, &good),
        (ROTATION_REJECTS[2], &good_chain, &bundle(3, 1)),
    ];
    let (fx, floor, trusted) = (Fixture::new(1), Floor::default(), v1());
    let expect = Expectation { keyring: &trusted, ..fx.expect(&floor) };
    for (case, chain, envelope) in cases {
        let error = verify_envelope(envelope, Some(chain), &expect, &Limits::SPEC).expect_err("every rotation reject is rejected");
        if chain != good_chain.as_slice() {
            out.push((format!("rotation/rejects/{case}/keyrings.json"), chain.to_vec()));
        }
        if envelope != good.as_slice() {
            out.push((format!("rotation/rejects/{case}/envelope.json"), envelope.to_vec()));
        }
        out.push((format!("rotation/rejects/{case}/expected-error.txt"), format!("{error}\n").into_bytes()));
    }
    out
}
