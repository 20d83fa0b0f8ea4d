use super::*;
use crate::keys::load_chain;
use airlock_bundle::SigningKey;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed([seed; 32])
}

fn change() -> Change {
    Change::default()
}

#[test]
fn rotation_needs_the_current_threshold_and_chains() {
    let (a, b, c) = (key(1), key(2), key(3));
    let current = Keyring::new(1, 2, vec![a.public(), b.public()], &Limits::SPEC).unwrap();
    let next = next_keyring(&current, &Change { add: vec![c.public()], remove: vec![a.public()], ..change() }).unwrap();
    assert_eq!((next.version(), next.threshold(), next.keys().len()), (2, 2, 2));
    let err = sign_rotation(&current, &next, &[key(1)], false).unwrap_err();
    assert!(err.to_string().contains("must include 2 distinct key(s) of keyring version 1"), "{err}");
    assert!(sign_rotation(&current, &next, &[key(3)], false).is_err(), "a new key cannot sign its own admission");
    let (update, missing) = sign_rotation(&current, &next, &[a, b], false).unwrap();
    assert_eq!(missing, None);
    assert_eq!(current.follow_chain(&airlock_bundle::keyring::chain(&[update]), &Limits::SPEC).unwrap(), next);
    let remove = |k: &SigningKey| Change { remove: vec![k.public()], ..change() };
    assert!(matches!(next_keyring(&current, &remove(&c)), Err(KeyFileError::Rotation(_))));
    assert!(matches!(next_keyring(&current, &Change { add: vec![key(2).public()], ..change() }), Err(KeyFileError::Rotation(_))));
    assert!(matches!(next_keyring(&current, &remove(&key(2))), Err(KeyFileError::Rotation(_))), "threshold 2 of 1 key");
}

#[test]
fn a_root_taken_then_signed_apart_revokes_an_online_key() {
    let legacy = Keyring::new(1, 1, vec![key(1).public()], &Limits::SPEC).unwrap();
    let root = vec![key(5).public(), key(6).public(), key(7).public()];
    let err = next_keyring(&legacy, &Change { add_root: root.clone(), ..change() }).unwrap_err();
    assert!(err.to_string().contains("--root-threshold is required"), "{err}");
    let v2 = next_keyring(&legacy, &Change { add_root: root, root_threshold: Some(2), ..change() }).unwrap();
    assert_eq!(v2.root().map(|r| (r.threshold(), r.keys().len())), Some((2, 3)));
    // The old key alone starts it; two of the new root keys, each on their own machine, finish it.
    let (update, missing) = sign_rotation(&legacy, &v2, &[key(1)], true).unwrap();
    let missing = missing.expect("the new root has not signed");
    assert!(missing.contains("1 distinct key(s) of keyring version 1 and 2 of the root it names"), "{missing}");
    let (update, _, missing) = cosign_rotation(&legacy, &update, &[key(5)]).unwrap();
    assert!(missing.is_some());
    let err = cosign_rotation(&legacy, &update, &[key(9)]).unwrap_err();
    assert!(err.to_string().contains("signs neither"), "{err}");
    let (update, next, missing) = cosign_rotation(&legacy, &update, &[key(6)]).unwrap();
    assert_eq!((next, missing), (v2.clone(), None));
    assert_eq!(legacy.follow_chain(&airlock_bundle::keyring::chain(&[update]), &Limits::SPEC).unwrap(), v2);

    // Revoking the online key is the root's, and the online key cannot do it.
    let v3 = next_keyring(&v2, &Change { add: vec![key(4).public()], remove: vec![key(1).public()], ..change() }).unwrap();
    let err = sign_rotation(&v2, &v3, &[key(1)], false).unwrap_err();
    assert!(err.to_string().contains("must include 2 distinct root key(s) of keyring version 2"), "{err}");
    assert!(sign_rotation(&v2, &v3, &[key(5), key(7)], false).unwrap().1.is_none());
    let err = next_keyring(&v2, &Change { add_root: vec![key(1).public()], ..change() }).unwrap_err();
    assert!(err.to_string().contains("both a root and an online key"), "{err}");
}

#[test]
fn chains_must_raise_the_version() {
    let tmp = tempfile::tempdir().unwrap();
    let v1 = Keyring::new(1, 1, vec![key(1).public()], &Limits::SPEC).unwrap();
    let v2 = next_keyring(&v1, &Change { add: vec![key(2).public()], ..change() }).unwrap();
    let (signed, _) = sign_rotation(&v1, &v2, &[key(1)], false).unwrap();
    let update = write_rotation(&tmp.path().join("v2.json"), &v2, &signed).unwrap();
    assert_eq!(load_chain(std::slice::from_ref(&update)).unwrap().1, Some(2));
    assert!(matches!(load_chain(&[update.clone(), update.clone()]), Err(KeyFileError::Invalid { .. })));
    assert!(matches!(write_rotation(&tmp.path().join("v2.json"), &v2, b"x"), Err(KeyFileError::Exists { .. })));
}
