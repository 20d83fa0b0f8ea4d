//! `airlock_bundle::age` against the real `age` and `age-keygen` (the test scripts install
//! them at /usr/bin): each side decrypts what the other encrypts, and both read the same
//! keys.

use std::path::Path;
use std::process::{Command, Stdio};

use airlock_bundle::age::{FileKey, Identity, Recipient, decrypt, encrypt, parse_identities};

const AGE: &str = "/usr/bin/age";
const AGE_KEYGEN: &str = "/usr/bin/age-keygen";

/// Sizes around the 64 KiB chunk boundary, an empty file, and one whose armor fills its last
/// line exactly when encrypted to two recipients, as both armored cases below are.
const SIZES: [usize; 6] = [0, 38, 1000, 65536, 65537, 150_000];

fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + i / 97) as u8).collect()
}

/// Runs `program` with `args` and `stdin`, and returns its standard output; fails the test
/// with its standard error if it fails.
fn run(program: &str, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&stdin));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(output.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    output.stdout
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn age_decrypts_what_we_encrypt() {
    let dir = tempfile::tempdir().unwrap();
    let ours = Identity::generate();
    let theirs = dir.path().join("identity.txt");
    std::fs::write(&theirs, format!("# an identity of ours\n{}\n", ours.to_secret_string())).unwrap();
    let other = Identity::generate().recipient();
    for len in SIZES {
        let data = plaintext(len);
        let file = dir.path().join(format!("{len}.age"));
        std::fs::write(&file, encrypt(&data, &[other, ours.recipient()], &[len as u8; 32])).unwrap();
        assert_eq!(run(AGE, &["-d", "-i", path(&theirs), path(&file)], b""), data, "{len} bytes");
    }
}

/// Files that share one file key and header, as a publisher seals a cluster's files, are
/// each an age file of their own to age.
#[test]
fn age_decrypts_each_file_under_a_shared_file_key() {
    let dir = tempfile::tempdir().unwrap();
    let ours = Identity::generate();
    let theirs = dir.path().join("identity.txt");
    std::fs::write(&theirs, ours.to_secret_string()).unwrap();
    let key = FileKey::new(&[ours.recipient()], &[3; 32]);
    for len in SIZES {
        let data = plaintext(len);
        let file = dir.path().join(format!("{len}.age"));
        std::fs::write(&file, key.encrypt(&data, &[len as u8; 32])).unwrap();
        assert_eq!(run(AGE, &["-d", "-i", path(&theirs), path(&file)], b""), data, "{len} bytes");
    }
}

#[test]
fn we_decrypt_what_age_encrypts() {
    let ours = Identity::generate();
    let recipient = ours.recipient().to_string();
    let other = Identity::generate().recipient().to_string();
    for len in SIZES {
        let data = plaintext(len);
        for args in [&["-e", "-r", &recipient][..], &["-e", "-a", "-r", &other, "-r", &recipient]] {
            let file = run(AGE, args, &data);
            assert_eq!(decrypt(&file, std::slice::from_ref(&ours), len as u64), Ok(data.clone()), "{len} bytes, {args:?}");
        }
    }
}

#[test]
fn we_read_age_keygen_identity_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key.txt");
    run(AGE_KEYGEN, &["-o", path(&file)], b"");
    let text = std::fs::read_to_string(&file).unwrap();
    let public = text.lines().find_map(|l| l.strip_prefix("# public key: ")).expect("age-keygen writes the public key");
    let identities = parse_identities(&text).unwrap();
    assert_eq!(identities.len(), 1);
    assert_eq!(identities[0].recipient().to_string(), public);
    assert_eq!(public.parse::<Recipient>().unwrap(), identities[0].recipient());
    // And age-keygen reads ours.
    let ours = Identity::generate();
    let converted = run(AGE_KEYGEN, &["-y"], format!("{}\n", ours.to_secret_string()).as_bytes());
    assert_eq!(String::from_utf8(converted).unwrap().trim(), ours.recipient().to_string());
}
