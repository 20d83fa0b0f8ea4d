//! Checking `register cluster` flags into settings, and the helpers the other register
//! tests build their flags with.

use super::*;
use clap::Parser;

/// A keyring file with one fixed key, in a temporary directory that lives as long as it.
pub fn keyring_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = SigningKey::from_seed([7; 32]).public();
    let keyring = Keyring::new(1, 1, vec![key], &Limits::SPEC).expect("valid keyring");
    let path = dir.path().join("keyring.json");
    std::fs::write(&path, keyring.to_json()).expect("write keyring");
    (dir, path)
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    flags: ClusterFlags,
}

/// Parses `args` after the fixed required ones.
pub fn flags(keyring: &Path, args: &[&str]) -> ClusterFlags {
    let keyring = keyring.to_str().expect("UTF-8 temp path");
    let base = ["register", "--namespace", "fleet", "--cluster", "edge-1", "--pullmode", "--keyring", keyring];
    // The default store, unless `args` name one.
    let source: &[&str] = if args.contains(&"--source") { &[] } else { &["--source", "oci+http://127.0.0.1:5000/airlock"] };
    let argv = base.iter().chain(source).chain(args);
    Cli::try_parse_from(argv).expect("flags parse").flags
}

#[test]
fn checks_a_full_registration() {
    let (_dir, keyring) = keyring_file();
    let reg = flags(&keyring, &["--labels", "region=eu,tier=prod", "--watch-namespaces", "web,monitoring"]).check().expect("valid");
    assert_eq!(reg.cluster.to_string(), "fleet/edge-1");
    assert_eq!(reg.labels, BTreeMap::from([("region".into(), "eu".into()), ("tier".into(), "prod".into())]));
    assert_eq!(reg.watch_namespaces, Some(vec!["web".to_string(), "monitoring".to_string()]));
    assert_eq!(reg.keyring.as_bytes(), std::fs::read(&keyring).unwrap());
    assert_eq!(reg.cronjob_api, CronJobApi::BatchV1);
    assert!(reg.image.starts_with("localhost:5000/airlock/puller:"), "{}", reg.image);
    assert_eq!(reg.login, None);
}

#[test]
fn gives_the_puller_its_own_place_of_a_per_cluster_layout() {
    let (_dir, keyring) = keyring_file();
    let reg = flags(&keyring, &["--source", "git+file:///srv/fleet/{namespace}/{name}.git", "--mount-host-path"]).check().expect("valid");
    assert_eq!(reg.source, StoreRef::Git { url: "file:///srv/fleet/fleet/edge-1.git".into(), branch: "main".into() });
    assert_eq!(reg.host_path.as_deref(), Some(Path::new("/srv/fleet/fleet/edge-1.git")), "the cluster's repository is mounted");
    let err = flags(&keyring, &["--source", "git+http://h/fleet.git#x/{name}.lock"]).check().unwrap_err();
    assert!(format!("{err:#}").contains("--source") && format!("{err:#}").contains("x/{name}.lock"), "{err:#}");
}

#[test]
fn builds_docker_config_from_user_and_password_file() {
    let (dir, keyring) = keyring_file();
    let password = dir.path().join("password");
    std::fs::write(&password, "s3cret\n").unwrap();
    let reg =
        flags(&keyring, &["--registry-username", "puller", "--registry-password-file", password.to_str().unwrap()]).check().expect("valid");
    let Some(Login::Docker(config)) = reg.login else { panic!("a Docker config") };
    let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
    // base64("puller:s3cret"): the trailing newline of the file is not part of the password.
    assert_eq!(config, serde_json::json!({"auths": {"127.0.0.1:5000": {"auth": "cHVsbGVyOnMzY3JldA=="}}}));
}

#[test]
fn rejects_bad_input_naming_the_flag_or_file() {
    let (dir, keyring) = keyring_file();
    let not_json = dir.path().join("config.json");
    std::fs::write(&not_json, "{}").unwrap();
    let cases: [(&[&str], &str); 12] = [
        (&["--labels", "region"], "expected KEY=VALUE"),
        (&["--labels", "region=eu,region=us"], "given twice"),
        (&["--labels", "bad-=x"], "not a label key"),
        (&["--labels", "a=b c"], "not a label value"),
        (&["--watch-namespaces", "web,Web"], "not a namespace name"),
        (&["--watch-namespaces", "web,web"], "given twice"),
        (&["--watch-namespaces", "web,airlock-system"], "\"airlock-system\" is the puller's own namespace"),
        (&["--allow-cluster-scoped", "Namespace/extra"], "--allow-cluster-scoped needs --watch-namespaces"),
        (&["--watch-namespaces", "web", "--allow-cluster-scoped", "clusterrole/x"], "--allow-cluster-scoped: \"clusterrole/x\" is not"),
        (&["--schedule", "0 */5 * * * *"], "five cron fields"),
        (&["--puller-namespace", "a.b"], "--puller-namespace"),
        (&["--docker-config", not_json.to_str().unwrap()], "no \"auths\" object"),
    ];
    for (args, want) in cases {
        let err = format!("{:#}", flags(&keyring, args).check().expect_err(want));
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let mut no_pullmode = flags(&keyring, &[]);
    no_pullmode.pullmode = false;
    assert!(format!("{:#}", no_pullmode.check().unwrap_err()).contains("--pullmode is required"));
}

#[test]
fn rejects_a_bad_keyring_naming_the_file() {
    let (dir, _) = keyring_file();
    let bad = dir.path().join("bad-keyring.json");
    std::fs::write(&bad, r#"{"apiVersion":"airlock.dev/v1","kind":"Keyring","version":1,"threshold":2,"keys":[]}"#).unwrap();
    let err = format!("{:#}", flags(&bad, &[]).check().unwrap_err());
    assert!(err.contains("keyring") && err.contains("bad-keyring.json"), "{err}");
}

/// Flags logging in as `user` with `password` (written to a file) through `[user flag,
/// password file flag]`, for the Git store `source`.
fn git_source_login(dir: &Path, keyring: &Path, [user_flag, file_flag]: [&str; 2], user: &str, password: &str) -> ClusterFlags {
    let file = dir.join("password");
    std::fs::write(&file, password).unwrap();
    let mut f = flags(keyring, &[user_flag, user, file_flag, file.to_str().unwrap()]);
    f.source = "git+http://127.0.0.1:8418/fleet.git#prod".into();
    f
}

#[test]
fn rejects_registry_credentials_for_a_git_source() {
    let (dir, keyring) = keyring_file();
    let f = git_source_login(dir.path(), &keyring, ["--registry-username", "--registry-password-file"], "u", "pw");
    assert!(format!("{:#}", f.check().unwrap_err()).contains("for a Git store use --git-username"));
}

#[test]
fn builds_git_credentials_for_the_source_host_from_user_and_password_file() {
    let (dir, keyring) = keyring_file();
    let mut f = git_source_login(dir.path(), &keyring, ["--git-username", "--git-password-file"], "edge-1", "s3cret/+\n");
    let reg = f.check().expect("valid");
    assert_eq!(reg.login, Some(Login::Git(b"http://edge-1:s3cret%2F%2B@127.0.0.1:8418\n".to_vec())));
    for (source, want) in [
        ("oci+http://127.0.0.1:5000/airlock", "needs a git+http:// or git+https:// --source"),
        ("git+file:///srv/fleet.git", "needs a git+http:// or git+https:// --source"),
        ("git+http://u:p@127.0.0.1:8418/fleet.git", "carries credentials already"),
    ] {
        f.source = source.into();
        let err = format!("{:#}", f.check().unwrap_err());
        assert!(err.contains(want) && !err.contains("s3cret"), "{source}: {err}");
    }
}
