//! Unit tests of the cluster's age identity: made or kept, its recipient on the
//! SveltosCluster, every identity in the Secret the puller decrypts with, and bad identity
//! files refused before anything is written.

use std::path::Path;

use airlock_bundle::age::{Identity, Recipient, parse_identities};
use base64::Engine;
use clap::Parser;
use serde_json::Value;

use super::manifests::registration_yaml;
use super::settings::Registration;
use super::settings::tests::{flags, keyring_file};
use super::tests::get;
use super::{RegisterCommand, sveltos_cluster};

/// An identity file as age-keygen writes it, of the identities with these secret bytes;
/// its path.
pub(super) fn identity_file(dir: &Path, name: &str, seeds: &[u8]) -> String {
    let mut text = String::from("# created: 2026-01-02T03:04:05Z\n");
    for seed in seeds {
        let identity = Identity::from_secret([*seed; 32]);
        text.push_str(&format!("# public key: {}\n{}\n", identity.recipient(), identity.to_secret_string()));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn recipient(seed: u8) -> Recipient {
    Identity::from_secret([seed; 32]).recipient()
}

/// The registration of `args`, its recipient annotation, and the identity file text its
/// YAML hands the cluster.
fn registered(args: &[&str]) -> (Registration, Option<String>, Option<String>) {
    let (_dir, keyring) = keyring_file();
    let reg = flags(&keyring, args).check().expect("valid flags");
    let annotation = sveltos_cluster(&reg)["metadata"]["annotations"]["airlock.dev/age-recipient"].as_str().map(String::from);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&registration_yaml(&reg).unwrap()).unwrap();
    let secret = docs.iter().find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == "airlock-age-identity");
    let text = secret.map(|s| {
        assert_eq!(s["metadata"]["namespace"], "airlock-system");
        let bytes = base64::engine::general_purpose::STANDARD.decode(s["data"]["identity.txt"].as_str().unwrap()).unwrap();
        String::from_utf8(bytes).unwrap()
    });
    (reg, annotation, text)
}

#[test]
fn each_registration_makes_an_age_identity_whose_recipient_goes_on_the_cluster() {
    let (reg, annotation, text) = registered(&[]);
    let (annotation, text) = (annotation.expect("a recipient annotation"), text.expect("an identity Secret"));
    let identities = parse_identities(&text).unwrap();
    assert_eq!(identities.len(), 1);
    assert_eq!(identities[0].recipient().to_string(), annotation, "the annotation is the identity's recipient");
    let lines: Vec<&str> = text.lines().collect();
    let created = lines[0].strip_prefix("# created: ").expect("age-keygen's first line");
    created.parse::<jiff::Timestamp>().expect("RFC 3339");
    assert_eq!(lines[1], format!("# public key: {annotation}"));
    assert!(lines[2].starts_with("AGE-SECRET-KEY-1") && lines.len() == 3, "{lines:?}");
    assert!(!format!("{reg:?}").contains("AGE-SECRET-KEY"), "Debug never shows the identity");

    let (_, again, _) = registered(&[]);
    assert_ne!(again.unwrap(), annotation, "a fresh identity per registration");
}

#[test]
fn the_cron_job_hands_the_puller_its_identity_file_read_only() {
    let (_, docs) = super::tests::render(&[]);
    let pod = &get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let args = pod["containers"][0]["args"].as_array().unwrap();
    assert_eq!(args[args.len() - 2..], [Value::from("--age-identity"), Value::from("/etc/airlock/age/identity.txt")]);
    let config = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "config").unwrap();
    let age = config["projected"]["sources"].as_array().unwrap().iter().find(|s| s["secret"]["name"] == "airlock-age-identity");
    assert_eq!(age.unwrap()["secret"]["items"][0]["path"], "age/identity.txt", "below the read-only /etc/airlock");
}

#[test]
fn keeps_the_age_identity_file_given_with_its_previous_identities() {
    let dir = tempfile::tempdir().unwrap();
    let file = identity_file(dir.path(), "kept.txt", &[1, 2]);
    let (reg, annotation, text) = registered(&["--age-identity-file", &file]);
    assert_eq!(annotation.unwrap(), recipient(1).to_string(), "the first identity is the current one");
    let text = text.unwrap();
    let kept: Vec<Recipient> = parse_identities(&text).unwrap().iter().map(Identity::recipient).collect();
    assert_eq!(kept, [recipient(1), recipient(2)]);
    assert_eq!(reg.age.unwrap().previous(), [recipient(2)]);
    assert!(text.starts_with("# created: 2026-01-02T03:04:05Z\n# public key: "), "the kept identity keeps its time: {text}");
    assert!(text.contains(&format!("# public key: {}\n", recipient(2))), "each identity under its public key: {text}");

    let (_, again, same) = registered(&["--age-identity-file", &file]);
    assert_eq!((again.unwrap(), same.unwrap()), (recipient(1).to_string(), text), "registering again changes nothing");
}

#[test]
fn a_rotation_keeps_the_previous_identities_after_the_current_one() {
    let dir = tempfile::tempdir().unwrap();
    let old = identity_file(dir.path(), "old.txt", &[1]);
    let (_, annotation, text) = registered(&["--previous-age-identity-file", &old]);
    let annotation = annotation.unwrap();
    assert_ne!(annotation, recipient(1).to_string(), "a new current identity");
    let kept: Vec<String> = parse_identities(&text.unwrap()).unwrap().iter().map(|i| i.recipient().to_string()).collect();
    assert_eq!(kept, [annotation, recipient(1).to_string()]);

    // Both files: the current one first, and no identity twice.
    let new = identity_file(dir.path(), "new.txt", &[3]);
    let old_both = identity_file(dir.path(), "old-both.txt", &[1, 3, 1]);
    let (_, annotation, text) = registered(&["--age-identity-file", &new, "--previous-age-identity-file", &old_both]);
    assert_eq!(annotation.unwrap(), recipient(3).to_string());
    let kept: Vec<Recipient> = parse_identities(&text.unwrap()).unwrap().iter().map(Identity::recipient).collect();
    assert_eq!(kept, [recipient(3), recipient(1)]);
}

#[test]
fn no_encryption_gives_no_identity_annotation_or_flag_but_allows_secrets_in_clear() {
    let (reg, annotation, text) = registered(&["--no-encryption"]);
    let plaintext = |reg: &Registration| sveltos_cluster(reg)["metadata"]["annotations"]["airlock.dev/plaintext-secrets"].clone();
    assert_eq!(plaintext(&reg), "allow", "without it, publish would refuse the cluster's Secrets");
    assert_eq!((reg.age, annotation, text), (None, None, None));
    assert_eq!(plaintext(&registered(&[]).0), Value::Null, "a cluster with a recipient never allows Secrets in clear");
    let (_, docs) = super::tests::render(&["--no-encryption"]);
    let pod = &get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert!(!pod["containers"][0]["args"].as_array().unwrap().iter().any(|a| a == "--age-identity"));
    assert!(!serde_json::to_string(pod).unwrap().contains("airlock-age-identity"));
    let (_dir, keyring) = keyring_file();
    let keyring = keyring.to_str().unwrap();
    let both = ["register", "-n", "fleet", "--cluster", "a", "--pullmode", "--source", "oci://r.example/x", "--keyring", keyring];
    let conflicting = both.iter().chain(&["--no-encryption", "--age-identity-file", "x.txt"]);
    assert!(Cli::try_parse_from(conflicting).is_err(), "--no-encryption with an identity file is a mistake");
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    flags: super::settings::ClusterFlags,
}

#[derive(Parser)]
struct Command {
    #[command(flatten)]
    register: RegisterCommand,
}

#[tokio::test]
async fn rejects_a_bad_age_identity_file_naming_it_and_writes_nothing() {
    let (dir, keyring) = keyring_file();
    let recipient_only = dir.path().join("recipient.txt");
    std::fs::write(&recipient_only, format!("# oops, the public half\n{}\n", recipient(1))).unwrap();
    let secret = Identity::from_secret([1; 32]).to_secret_string();
    let cut = dir.path().join("cut.txt");
    std::fs::write(&cut, &secret[..secret.len() - 3]).unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "# created: 2026-01-02T03:04:05Z\n").unwrap();
    let missing = dir.path().join("missing.txt");
    let out = dir.path().join("out");
    for (flag, file) in [
        ("--age-identity-file", &recipient_only),
        ("--age-identity-file", &cut),
        ("--age-identity-file", &empty),
        ("--age-identity-file", &missing),
        ("--previous-age-identity-file", &cut),
    ] {
        let file = file.to_str().unwrap();
        let argv = [
            "register",
            "cluster",
            "-n",
            "fleet",
            "--cluster",
            "a",
            "--pullmode",
            "--source",
            "oci://r.example/x",
            "--keyring",
            keyring.to_str().unwrap(),
            "--to-dir",
            out.to_str().unwrap(),
            flag,
            file,
        ];
        let command = Command::try_parse_from(argv).expect("flags parse").register;
        let err = format!("{:#}", super::run(command).await.unwrap_err());
        assert!(err.contains(flag) && err.contains(file), "names the flag and the file: {err}");
        assert!(!err.contains(&secret[16..32]), "never shows the key: {err}");
        assert!(!out.exists(), "{flag} {file}: nothing written");
    }
}
