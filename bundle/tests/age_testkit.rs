//! The C2SP age test vectors (the "testkit" of <https://c2sp.org/CCTV/age>) against
//! `airlock_bundle::age::decrypt`. They are read from the `age` crate's package, a
//! dev-dependency that ships them, so the vectors are the reference implementation's own.
//!
//! Every vector runs. Those for X25519 identities must give exactly the expected outcome
//! (the plaintext's SHA-256, or the kind of failure); those for passphrases (scrypt), which
//! Airlock does not implement, must be refused, never decrypted.

use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_bundle::age::{AgeError, Identity, decrypt};
use flate2::read::ZlibDecoder;
use ring::digest;

/// The testkit's plaintexts are small; this cap is far above all of them.
const MAX_PLAINTEXT: u64 = 64 << 20;

/// One vector: its header fields and the age file after them.
struct Vector {
    name: String,
    expect: String,
    payload_sha256: Option<String>,
    identities: Vec<String>,
    passphrase: bool,
    file: Vec<u8>,
}

fn testkit_dir() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Offline, cargo lists only packages it has downloaded: those of this platform.
    let host = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "host-tuple"])
        .output()
        .expect("rustc runs");
    assert!(host.status.success(), "rustc --print host-tuple: {}", String::from_utf8_lossy(&host.stderr));
    let host = String::from_utf8(host.stdout).expect("a target triple is ASCII");
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline", "--filter-platform", host.trim()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let age =
        metadata["packages"].as_array().expect("packages").iter().find(|p| p["name"] == "age").expect("the age crate is a dev-dependency");
    let manifest = Path::new(age["manifest_path"].as_str().expect("manifest_path"));
    manifest.parent().expect("a package directory").join("tests/testdata/testkit")
}

fn parse(name: String, raw: &[u8]) -> Vector {
    let split = raw.windows(2).position(|w| w == b"\n\n").unwrap_or_else(|| panic!("{name}: no blank line after the header"));
    let header = std::str::from_utf8(&raw[..split]).unwrap_or_else(|_| panic!("{name}: header is not UTF-8"));
    let mut file = raw[split + 2..].to_vec();
    let mut vector =
        Vector { name, expect: String::new(), payload_sha256: None, identities: Vec::new(), passphrase: false, file: Vec::new() };
    for line in header.lines() {
        let (key, value) = line.split_once(": ").unwrap_or_else(|| panic!("{}: header line {line:?}", vector.name));
        match key {
            "expect" => vector.expect = value.to_string(),
            "payload" => vector.payload_sha256 = Some(value.to_string()),
            "identity" => vector.identities.push(value.to_string()),
            "passphrase" => vector.passphrase = true,
            "compressed" => {
                assert_eq!(value, "zlib", "{}: compression", vector.name);
                let mut plain = Vec::new();
                std::io::Read::read_to_end(&mut ZlibDecoder::new(&file[..]), &mut plain).expect("zlib body");
                file = plain;
            }
            "file key" | "armored" | "comment" => {}
            other => panic!("{}: unknown header field {other:?}", vector.name),
        }
    }
    vector.file = file;
    vector
}

fn vectors() -> Vec<Vector> {
    let dir = testkit_dir();
    let mut vectors: Vec<Vector> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
            parse(name, &std::fs::read(&path).expect("a readable vector"))
        })
        .collect();
    vectors.sort_by(|a, b| a.name.cmp(&b.name));
    vectors
}

/// Whether `result` is the outcome the vector expects, and if not, what it was.
fn check(vector: &Vector, result: Result<Vec<u8>, AgeError>) -> Result<(), String> {
    match (vector.expect.as_str(), result) {
        ("success", Ok(plain)) => {
            let got = hex(digest::digest(&digest::SHA256, &plain).as_ref());
            match &vector.payload_sha256 {
                Some(want) if *want == got => Ok(()),
                want => Err(format!("plaintext SHA-256 {got}, want {want:?}")),
            }
        }
        ("no match", Err(AgeError::NoIdentity))
        | ("HMAC failure", Err(AgeError::Mac))
        | ("header failure" | "armor failure", Err(AgeError::Header(_)))
        | ("payload failure", Err(AgeError::Payload)) => Ok(()),
        (want, got) => Err(format!("want {want}, got {:?}", got.map(|p| p.len()))),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn c2sp_testkit() {
    let vectors = vectors();
    let mut x25519 = 0;
    let mut failures = Vec::new();
    for vector in &vectors {
        let identities: Vec<Identity> =
            vector.identities.iter().map(|i| Identity::parse(i).unwrap_or_else(|e| panic!("{}: identity: {e}", vector.name))).collect();
        let result = decrypt(&vector.file, &identities, MAX_PLAINTEXT);
        if vector.passphrase {
            if let Ok(plain) = result {
                failures.push(format!("{}: a passphrase file was decrypted ({} bytes)", vector.name, plain.len()));
            }
            continue;
        }
        x25519 += 1;
        if let Err(why) = check(vector, result) {
            failures.push(format!("{}: {why}", vector.name));
        }
    }
    assert!(failures.is_empty(), "{} of {} vectors disagree:\n{}", failures.len(), vectors.len(), failures.join("\n"));
    // The testkit as age 0.12 ships it: 123 vectors, 95 of them without a passphrase.
    assert!(vectors.len() >= 120 && x25519 >= 90, "{} vectors, {x25519} for X25519: the testkit was not found whole", vectors.len());
}
