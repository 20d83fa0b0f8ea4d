//! Steps 11-13: a part's transport copy, digest and tar walk against the signed list.

use airlock_bundle::gzip::{self, GzipError};
use airlock_bundle::tar::{TarError, write_canonical};
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::{Transport, VerifyError};
use airlock_bundle::{Digest, Limits};

use crate::{L, check, good, signed_raw, verify_parts};

#[test]
fn rejects_content_larger_than_its_signed_size() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    let err = verify_parts(&fx, &signed, "ClusterProfile.web", |_| gzip::compress(&[0u8; 8192])).unwrap_err();
    assert_eq!(err, VerifyError::Transport { part: "ClusterProfile.web".into(), source: GzipError::LargerThanSigned { signed: 3072 } });
}

#[test]
fn rejects_a_gzip_bomb() {
    let fx = Fixture::new(1);
    let big = vec![b'a'; 4 << 20];
    let signed = fx.signed(1, vec![("ClusterProfile.web/big.yaml".into(), big)]);
    let env = check(&fx, &signed.envelope).unwrap();
    let (name, part) = signed.bundle.parts().next().unwrap();
    let gz = gzip::compress(&part.tar());
    let tight = Limits { max_ratio: 100, ratio_grace_bytes: 1 << 20, ..L };
    let err = env.verify_part(name, Transport::Gzip(&gz), &tight).unwrap_err();
    assert_eq!(err, VerifyError::Transport { part: name.into(), source: GzipError::Ratio { max: 100 } });
}

#[test]
fn rejects_a_flipped_byte_in_a_content_blob() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    let web = signed.bundle.part("ClusterProfile.web").unwrap();
    let env = check(&fx, &signed.envelope).unwrap();
    let mut tar = web.tar();
    tar[600] ^= 1;
    let err = env.verify_part("ClusterProfile.web", Transport::Tar(&tar), &L).unwrap_err();
    assert!(matches!(err, VerifyError::PartDigest { .. }));
}

#[test]
fn rejects_a_short_part() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    let env = check(&fx, &signed.envelope).unwrap();
    let err = env.verify_part("ClusterProfile.web", Transport::Tar(&[0u8; 1024]), &L).unwrap_err();
    assert_eq!(err, VerifyError::PartLength { part: "ClusterProfile.web".into(), size: 1024, signed: 3072 });
}

/// Signs a statement whose part digest and size match `tar`, so the tar walk is what
/// has to catch the problem.
fn walk_result(files_signed: Vec<(String, Vec<u8>)>, tar: Vec<u8>) -> VerifyError {
    let fx = Fixture::new(1);
    let signed = fx.signed(1, files_signed);
    let mut s = signed.statement.clone();
    s.predicate.profiles[0].digest = Digest::of(&tar);
    s.predicate.profiles[0].size = tar.len() as u64;
    let env = check(&fx, &signed_raw(&fx, &s.to_json())).unwrap();
    env.verify_part(&s.predicate.profiles[0].name, Transport::Tar(&tar), &L).unwrap_err()
}

fn file(path: &str, body: &[u8]) -> (String, Vec<u8>) {
    (path.to_string(), body.to_vec())
}

#[test]
fn rejects_a_tar_entry_not_in_the_signed_list() {
    let tar = write_canonical(&[("ClusterProfile.web/a.yaml", b"a"), ("ClusterProfile.web/b.yaml", b"b")]);
    let err = walk_result(vec![file("ClusterProfile.web/a.yaml", b"a"), file("ClusterProfile.web/c.yaml", b"c")], tar);
    assert_eq!(err, VerifyError::UnexpectedEntry { part: "ClusterProfile.web".into(), path: "ClusterProfile.web/b.yaml".into() });
}

#[test]
fn rejects_a_signed_file_missing_from_the_tar() {
    // Same sizes as signed, so only the walk can tell that b is missing and d is extra.
    let tar =
        write_canonical(&[("ClusterProfile.web/a.yaml", b"a"), ("ClusterProfile.web/c.yaml", b"c"), ("ClusterProfile.web/d.yaml", b"d")]);
    let err = walk_result(
        vec![file("ClusterProfile.web/a.yaml", b"a"), file("ClusterProfile.web/b.yaml", b"b"), file("ClusterProfile.web/c.yaml", b"c")],
        tar,
    );
    assert_eq!(err, VerifyError::MissingEntry { part: "ClusterProfile.web".into(), path: "ClusterProfile.web/b.yaml".into() });
}

#[test]
fn rejects_a_tar_entry_whose_content_differs_from_its_signed_hash() {
    let tar = write_canonical(&[("ClusterProfile.web/a.yaml", b"X")]);
    let err = walk_result(vec![file("ClusterProfile.web/a.yaml", b"a")], tar);
    assert_eq!(err, VerifyError::EntryMismatch { part: "ClusterProfile.web".into(), path: "ClusterProfile.web/a.yaml".into() });
}

#[test]
fn rejects_symlinks_hardlinks_and_devices_in_a_part() {
    for flag in [b'1', b'2', b'3', b'4'] {
        let mut tar = write_canonical(&[("ClusterProfile.web/a.yaml", b"")]);
        tar[156] = flag;
        tar[148..156].copy_from_slice(b"        ");
        let sum: u32 = tar[..512].iter().map(|&b| u32::from(b)).sum();
        tar[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let err = walk_result(vec![file("ClusterProfile.web/a.yaml", b"")], tar);
        assert!(matches!(err, VerifyError::Tar { source: TarError::NotRegularFile { .. }, .. }), "{err}");
    }
}

#[test]
fn rejects_a_part_the_store_did_not_provide() {
    let fx = Fixture::new(1);
    let signed = good(&fx);
    let env = check(&fx, &signed.envelope).unwrap();
    let web = signed.bundle.part("ClusterProfile.web").unwrap().tar();
    let one = env.verify_part("ClusterProfile.web", Transport::Tar(&web), &L).unwrap();
    assert_eq!(env.finish(vec![one], &L).unwrap_err(), VerifyError::MissingPart { part: "Profile.fleet.monitoring".into() });
}

/// A part whose name is another's followed by `-`: its files sort before the other's, so
/// the signed file list is not in part order.
#[test]
fn a_part_named_as_another_with_a_suffix_verifies() {
    let fx = Fixture::new(1);
    let files = vec![
        ("ClusterProfile.web/ConfigMap.fleet.a.yaml".to_string(), b"a: 1\n".to_vec()),
        ("ClusterProfile.web-gpu/ConfigMap.fleet.b.yaml".to_string(), b"b: 1\n".to_vec()),
    ];
    let signed = fx.signed(1, files);
    let listed: Vec<&str> = signed.statement.predicate.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(listed, ["ClusterProfile.web-gpu/ConfigMap.fleet.b.yaml", "ClusterProfile.web/ConfigMap.fleet.a.yaml"]);
    assert_eq!(signed.bundle.files().map(|(p, _)| p).collect::<Vec<_>>(), listed);
    let env = check(&fx, &signed.envelope).unwrap();
    for (name, part) in signed.bundle.parts() {
        env.verify_part(name, Transport::Tar(&part.tar()), &L).unwrap();
    }
}
