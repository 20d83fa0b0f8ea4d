//! Step 14 (spec 2.7): encrypted files decrypt with the cluster's identity only, and every
//! way a statement can describe them inconsistently, or a ciphertext can differ from what
//! was signed, is refused with its own error.

use airlock_bundle::age::Identity;
use airlock_bundle::statement::Plaintext;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::{Transport, VerifiedBundle, VerifyError};
use airlock_bundle::{SignedBundle, gzip};

use super::{L, check, resigned};

const SECRET: &[u8] = b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: web\nstringData:\n  password: s3cr3t-marker\n";
const SEALED_PATH: &str = "ClusterProfile.web/Secret.web.db.yaml.age";

fn files() -> Vec<(String, Vec<u8>)> {
    let mut files = Fixture::files();
    files.push(("ClusterProfile.web/Secret.web.db.yaml".into(), SECRET.to_vec()));
    files.sort();
    files
}

fn identity(seed: u8) -> Identity {
    Identity::from_secret([seed; 32])
}

fn sealed(fx: &Fixture) -> SignedBundle {
    fx.sealed(3, files(), &[identity(1).recipient(), identity(2).recipient()])
}

/// Verifies every part of `signed` as stored, then decrypts with `identities`.
fn open(fx: &Fixture, signed: &SignedBundle, identities: &[Identity]) -> Result<VerifiedBundle, VerifyError> {
    let env = check(fx, &signed.envelope)?;
    let parts = signed
        .bundle
        .parts()
        .map(|(name, part)| env.verify_part(name, Transport::Gzip(&gzip::compress(&part.tar())), &L))
        .collect::<Result<Vec<_>, _>>()?;
    env.finish(parts, &L)?.decrypt(identities, &L)
}

fn file<'b>(bundle: &'b VerifiedBundle, path: &str) -> &'b [u8] {
    bundle.bundle().files().find(|(p, _)| *p == path).map(|(_, b)| b).unwrap_or_else(|| panic!("{path} in the bundle"))
}

#[test]
fn decrypts_with_either_recipient_and_keeps_the_rest_as_signed() {
    let fx = Fixture::new(1);
    let signed = sealed(&fx);
    assert!(!signed.bundle.files().any(|(_, bytes)| bytes.windows(13).any(|w| w == b"s3cr3t-marker")), "stored in clear");
    for seed in [1, 2] {
        let bundle = open(&fx, &signed, &[identity(9), identity(seed)]).unwrap();
        let plaintext = file(&bundle, SEALED_PATH);
        assert!(plaintext.starts_with(b"# airlock.dev/salt: ") && plaintext.ends_with(SECRET), "identity {seed}");
        let clear = "ClusterProfile.web/ConfigMap.web.nginx-conf.yaml";
        assert_eq!(file(&bundle, clear), Fixture::files()[0].1, "a file in clear stays as it is");
        assert_eq!(bundle.bundle().digest(), signed.digest(), "the bundle digest is the stored bytes'");
    }
    let plain = fx.signed(3, Fixture::files());
    assert!(open(&fx, &plain, &[]).is_ok(), "a bundle without encrypted files needs no identity");
}

#[test]
fn refuses_a_puller_that_is_not_a_recipient_or_has_no_identity() {
    let fx = Fixture::new(1);
    let err = open(&fx, &sealed(&fx), &[identity(3)]).unwrap_err();
    assert!(matches!(&err, VerifyError::NotARecipient { listed, own } if listed.len() == 2 && own.len() == 1), "{err}");
    assert!(err.to_string().contains("none of them this puller's"), "{err}");
    let err = open(&fx, &sealed(&fx), &[]).unwrap_err();
    assert!(matches!(err, VerifyError::NoIdentity { .. }), "{err}");
}

/// `signed` with its encrypted file's stored bytes or signed plaintext changed by `edit`,
/// signed again (what a publisher bug, or a stolen key, could produce).
fn resealed(fx: &Fixture, edit: impl Fn(&mut Vec<u8>, &mut Plaintext)) -> SignedBundle {
    let signed = sealed(fx);
    let parts = signed.bundle.parts().map(|(name, part)| {
        let files = part.files().map(|(path, bytes)| {
            let (mut bytes, mut plaintext) = (bytes.to_vec(), part.plaintext(path).cloned());
            if let Some(plaintext) = plaintext.as_mut() {
                edit(&mut bytes, plaintext);
            }
            (path.to_string(), bytes.into(), plaintext)
        });
        (name.to_string(), airlock_bundle::Part::sealed(name, files, &L).unwrap())
    });
    let bundle = airlock_bundle::Bundle::from_parts(parts, &L).unwrap();
    let mut release = fx.release(3);
    release.settings.recipients = signed.statement.predicate.settings.recipients.clone();
    airlock_bundle::sign::sign(bundle, &release, &|_: &str| Default::default(), &fx.keys, None)
}

#[test]
fn refuses_a_signed_ciphertext_that_does_not_decrypt_or_decrypts_to_other_bytes() {
    let fx = Fixture::new(1);
    let flipped = resealed(&fx, |bytes, _| {
        let at = bytes.len() / 2;
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    });
    let err = open(&fx, &flipped, &[identity(1)]).unwrap_err();
    assert!(matches!(&err, VerifyError::Decrypt { path, .. } if path == SEALED_PATH), "{err}");
    let other = resealed(&fx, |_, plaintext| plaintext.sha256 = airlock_bundle::Digest::of(b"other").hex());
    let err = open(&fx, &other, &[identity(1)]).unwrap_err();
    assert_eq!(err, VerifyError::PlaintextMismatch { path: SEALED_PATH.into() });
}

#[test]
fn refuses_encrypted_files_and_recipients_the_statement_describes_inconsistently() {
    let fx = Fixture::new(1);
    let good = sealed(&fx).statement;
    let sealed_at = good.predicate.files.iter().position(|f| f.plaintext.is_some()).unwrap();
    type Edit<'a> = Box<dyn Fn(&mut airlock_bundle::Statement) + 'a>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "plaintext on a .yaml file",
            Box::new(move |s| s.predicate.files[0].plaintext = s.predicate.files[sealed_at].plaintext.clone()),
            "encrypted file needs",
        ),
        (
            "recipients without encrypted files",
            Box::new(|s| s.predicate.settings.recipients = Some(vec![identity(1).recipient().to_string()])),
            "present, but no file",
        ),
        ("an empty recipient list", Box::new(|s| s.predicate.settings.recipients = Some(vec![])), "0 entries"),
        (
            "a recipient twice",
            Box::new(|s| s.predicate.settings.recipients = Some(vec![identity(1).recipient().to_string(); 2])),
            "listed twice",
        ),
        ("a bad recipient", Box::new(|s| s.predicate.settings.recipients = Some(vec!["age1nope".into()])), "\"age1nope\""),
        (
            "seventeen recipients",
            Box::new(|s| s.predicate.settings.recipients = Some((10..27).map(|i| identity(i).recipient().to_string()).collect())),
            "17 entries",
        ),
    ];
    for (what, edit, want) in cases {
        let statement = {
            let mut s = good.clone();
            // Cases about recipients without encrypted files drop the encrypted file's plaintext.
            if want == "present, but no file" {
                s.predicate.files[sealed_at].plaintext = None;
                s.predicate.files[sealed_at].path = "ClusterProfile.web/Secret.web.db.yaml".into();
            }
            edit(&mut s);
            s
        };
        let envelope = resigned(&fx, |s| *s = statement.clone());
        let err = check(&fx, &envelope).err().unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(err.to_string().contains(want), "{what}: {err}");
    }
    let envelope = resigned(&fx, |s| {
        *s = good.clone();
        s.predicate.settings.recipients = None;
    });
    assert!(check(&fx, &envelope).unwrap_err().to_string().contains("absent, but files are encrypted"));
}
