use super::*;
use crate::envelope::IN_TOTO_PAYLOAD_TYPE;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed([seed; 32])
}

fn role(name: &'static str, threshold: usize, seeds: &[u8]) -> Role {
    Role::new(name, threshold, seeds.iter().map(|&s| key(s).public()).collect(), &Limits::SPEC).unwrap()
}

/// Online key 1, root 2-of-{2, 3}.
fn rooted(version: u64, online: &[u8], root: &[u8]) -> Keyring {
    Keyring::with_root(version, role("online", 1, online), Some(role("root", 2.min(root.len()), root))).unwrap()
}

fn signs(keyring: &Keyring, seed: u8) -> bool {
    let env = envelope::sign(IN_TOTO_PAYLOAD_TYPE, b"{}", &[key(seed)]);
    keyring.check(&envelope::decode(&env, IN_TOTO_PAYLOAD_TYPE, &Limits::SPEC).unwrap()).is_ok()
}

fn follow(from: &Keyring, updates: &[Vec<u8>]) -> Result<Keyring, TrustError> {
    from.follow_chain(&chain(updates), &Limits::SPEC)
}

#[test]
fn a_root_is_written_only_when_there_is_one_and_never_holds_an_online_key() {
    let legacy = Keyring::new(1, 1, vec![key(1).public()], &Limits::SPEC).unwrap();
    assert!(!String::from_utf8(legacy.to_json()).unwrap().contains("root"));
    assert_eq!(legacy.signs_updates(), legacy.online());
    let v1 = rooted(1, &[1], &[2, 3]);
    assert_eq!(Keyring::parse(&v1.to_json(), &Limits::SPEC).unwrap(), v1);
    assert!(String::from_utf8(v1.to_json()).unwrap().contains("\"root\": {"));
    let err = Keyring::with_root(1, role("online", 1, &[1]), Some(role("root", 1, &[1, 2]))).unwrap_err();
    assert_eq!(err, KeyringError::RootAndOnline { key_id: key(1).public().key_id() });
    let bad = br#"{"apiVersion":"airlock.dev/v1","kind":"Keyring","version":1,"threshold":1,"keys":[],"root":{"threshold":1,"keys":[]}}"#;
    assert_eq!(Keyring::parse(bad, &Limits::SPEC).unwrap_err(), KeyringError::BadThreshold { role: "online", threshold: 1, keys: 0 });
    let json = String::from_utf8(v1.to_json()).unwrap().replace("\"threshold\": 2", "\"threshold\": 3");
    assert_eq!(
        Keyring::parse(json.as_bytes(), &Limits::SPEC).unwrap_err(),
        KeyringError::BadThreshold { role: "root", threshold: 3, keys: 2 }
    );
}

#[test]
fn an_online_key_signs_bundles_but_cannot_rotate() {
    let v1 = rooted(1, &[1], &[2, 3]);
    assert!(signs(&v1, 1) && !signs(&v1, 2), "root keys do not sign bundles");
    // The thief of online key 1 replaces it by a key of their own.
    let stolen = rooted(2, &[9], &[2, 3]).sign_update(&[key(1)]);
    let err = follow(&v1, &[stolen]).unwrap_err();
    assert!(
        matches!(&err, TrustError::UpdateUntrusted { current: 1, source, .. } if **source == TrustError::Threshold { valid: 0, threshold: 2 }),
        "{err}"
    );
    // One root key is below the threshold.
    let one = rooted(2, &[4], &[2, 3]).sign_update(&[key(2), key(1)]);
    assert!(matches!(follow(&v1, &[one]), Err(TrustError::UpdateUntrusted { .. })));
}

#[test]
fn the_root_revokes_an_online_key() {
    let v1 = rooted(1, &[1], &[2, 3]);
    let v2 = rooted(2, &[4], &[2, 3]);
    let adopted = follow(&v1, &[v2.sign_update(&[key(2), key(3)])]).unwrap();
    assert_eq!(adopted, v2);
    assert!(!signs(&adopted, 1) && signs(&adopted, 4));
}

#[test]
fn a_new_root_must_sign_the_update_that_names_it() {
    let v1 = rooted(1, &[1], &[2, 3]);
    let v2 = rooted(2, &[1], &[5, 6]);
    let err = follow(&v1, &[v2.sign_update(&[key(2), key(3)])]).unwrap_err();
    assert_eq!(err, TrustError::NewRootUnsigned { update: 2, source: Box::new(TrustError::Threshold { valid: 0, threshold: 2 }) });
    assert_eq!(follow(&v1, &[v2.sign_update(&[key(2), key(3), key(5), key(6)])]).unwrap(), v2);
    // The old root no longer counts once replaced.
    let v3 = rooted(3, &[4], &[5, 6]);
    assert!(follow(&v2, &[v3.sign_update(&[key(2), key(3)])]).is_err());
    assert_eq!(follow(&v2, &[v3.sign_update(&[key(5), key(6)])]).unwrap(), v3);
}

#[test]
fn a_keyring_without_a_root_is_its_own_and_migrates_to_one() {
    let legacy = Keyring::new(1, 1, vec![key(1).public()], &Limits::SPEC).unwrap();
    // Rotating without a root works as it always did: the current keys alone.
    let next = Keyring::new(2, 1, vec![key(4).public()], &Limits::SPEC).unwrap();
    assert_eq!(follow(&legacy, &[next.sign_update(&[key(1)])]).unwrap(), next);
    // Taking a root: the old keys and the new root both sign.
    let with_root = rooted(2, &[1], &[2, 3]);
    assert!(matches!(follow(&legacy, &[with_root.sign_update(&[key(1)])]), Err(TrustError::NewRootUnsigned { update: 2, .. })));
    assert_eq!(follow(&legacy, &[with_root.sign_update(&[key(1), key(2), key(3)])]).unwrap(), with_root);
    // Dropping the root again needs the root, and the online keys that become the root.
    let dropped = Keyring::new(3, 1, vec![key(1).public()], &Limits::SPEC).unwrap();
    assert!(matches!(follow(&with_root, &[dropped.sign_update(&[key(1)])]), Err(TrustError::UpdateUntrusted { .. })));
    assert!(matches!(follow(&with_root, &[dropped.sign_update(&[key(2), key(3)])]), Err(TrustError::NewRootUnsigned { .. })));
    assert_eq!(follow(&with_root, &[dropped.sign_update(&[key(1), key(2), key(3)])]).unwrap(), dropped);
}
