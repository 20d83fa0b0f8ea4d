use std::path::Path;

use super::*;
use crate::config::file::SETTINGS_FILE_BYTES;
use airlock_bundle::testkit::Fixture;

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keyring.json"), Fixture::new(1).keyring.to_json()).unwrap();
        Files { dir }
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
    fn settings_file(&self, extra: &str) -> PathBuf {
        let keyring = self.dir.path().join("keyring.json");
        self.write(
            "settings.json",
            &format!(
                r#"{{"source": "oci-layout:/srv/bundles", "cluster": "fleet/edge-1", "keyring": {keyring:?},
                    "watchNamespaces": ["b", "a"], "namespacePolicy": "filter",
                    "stateNamespace": "airlock-x"{extra}}}"#
            ),
        )
    }
}

fn args(config: PathBuf) -> SyncArgs {
    SyncArgs { source: SourceArgs { config: Some(config), ..SourceArgs::default() }, ..SyncArgs::default() }
}

#[test]
fn reads_the_settings_file() {
    let files = Files::new();
    let s = args(files.settings_file("")).check(&KubeArgs::default()).unwrap();
    assert_eq!(s.source.store, StoreRef::OciLayout("/srv/bundles".into()));
    assert_eq!(s.cluster.to_string(), "fleet/edge-1");
    assert_eq!(s.watch_namespaces, Some(vec!["a".to_string(), "b".to_string()]));
    assert_eq!(s.namespace_policy, NamespacePolicy::Filter);
    assert_eq!(s.state_namespace, "airlock-x");
    assert_eq!(s.keyring, Fixture::new(1).keyring);
    assert!(s.report_to.is_none() && s.report_key.is_none() && !s.dry_run);
    assert_eq!(s.lease_duration, DEFAULT_LEASE);
    let short = args(files.settings_file(r#", "leaseDuration": "30s""#)).check(&KubeArgs::default()).unwrap();
    assert_eq!(short.lease_duration, Duration::from_secs(30));
    let predicate = Fixture::new(1).signed(1, Fixture::files()).statement.predicate;
    assert!(!s.allow_mass_prune && !s.engine(&predicate).allow_mass_prune, "the guard holds by default");
    let confirmed = args(files.settings_file(r#", "allowMassPrune": true"#)).check(&KubeArgs::default()).unwrap();
    assert!(confirmed.engine(&predicate).allow_mass_prune, "the settings file's local override");
    let flag = SyncArgs { allow_mass_prune: true, ..args(files.settings_file("")) };
    assert!(flag.check(&KubeArgs::default()).unwrap().engine(&predicate).allow_mass_prune, "the flag's");
    let signed =
        Predicate { settings: airlock_bundle::ClusterSettings { allow_mass_prune: true, ..predicate.settings.clone() }, ..predicate };
    assert!(s.engine(&signed).allow_mass_prune, "the bundle's signed confirmation");
}

#[test]
fn flags_override_the_settings_file() {
    let files = Files::new();
    let mut a = args(files.settings_file(""));
    a.source.cluster = Some("fleet/edge-2".into());
    a.source.source = Some("oci+http://127.0.0.1:5000/b".into());
    a.watch_namespaces = Some(vec!["c".into()]);
    a.namespace_policy = Some(NamespacePolicy::Reject);
    a.state_namespace = Some("other".into());
    a.report_to = Some(files.dir.path().to_path_buf());
    let s = a.check(&KubeArgs::default()).unwrap();
    assert_eq!(s.cluster.to_string(), "fleet/edge-2");
    assert!(matches!(s.source.store, StoreRef::OciRegistry { plain_http: true, .. }));
    assert_eq!(s.watch_namespaces, Some(vec!["c".to_string()]));
    assert_eq!(s.namespace_policy, NamespacePolicy::Reject);
    assert_eq!(s.state_namespace, "other");
    assert_eq!(s.report_to.as_deref(), Some(files.dir.path()));
}

#[test]
fn defaults_without_a_settings_file() {
    let files = Files::new();
    let a = SyncArgs {
        source: SourceArgs {
            source: Some("oci-layout:/x".into()),
            cluster: Some("fleet/edge-1".into()),
            keyring: Some(files.dir.path().join("keyring.json")),
            git_credentials: None,
            age_identity: None,
            max_validity: None,
            config: None,
        },
        ..SyncArgs::default()
    };
    let s = a.check(&KubeArgs::default()).unwrap();
    assert_eq!(
        (s.state_namespace.as_str(), s.namespace_policy, s.watch_namespaces),
        (DEFAULT_STATE_NAMESPACE, NamespacePolicy::Reject, None)
    );
    assert_eq!(s.max_validity, Duration::from_secs(90 * 86_400));
}

#[test]
fn bounds_the_maximum_validity() {
    let files = Files::new();
    let days = |text: &str| args(files.settings_file(&format!(r#", "maxValidity": "{text}""#))).check(&KubeArgs::default());
    assert_eq!(days("7d").unwrap().max_validity, Duration::from_secs(7 * 86_400));
    assert_eq!(days("366d").unwrap().max_validity, Duration::from_secs(366 * 86_400));
    for bad in ["59m", "367d"] {
        let err = format!("{:#}", days(bad).err().unwrap());
        assert!(err.contains("--max-validity") && err.contains("between 1h and 366d"), "{err}");
    }
    let flag = SyncArgs {
        source: SourceArgs { max_validity: Some(Duration::from_secs(3600)), ..args(files.settings_file("")).source },
        ..SyncArgs::default()
    };
    assert_eq!(flag.check(&KubeArgs::default()).unwrap().max_validity, Duration::from_secs(3600), "the flag wins");
}

#[test]
fn rejects_unknown_fields_naming_the_file() {
    let files = Files::new();
    let path = files.settings_file(r#", "watchNamespace": ["typo"]"#);
    let err = format!("{:#}", args(path.clone()).check(&KubeArgs::default()).unwrap_err());
    assert!(err.contains(&path.display().to_string()) && err.contains("unknown field `watchNamespace`"), "{err}");
}

#[test]
fn rejects_bad_values_naming_the_flag() {
    let files = Files::new();
    type Change = fn(&mut SyncArgs);
    let cases: [(&str, Change); 6] = [
        ("--cluster", |a| a.source.cluster = Some("no-slash".into())),
        ("--git-credentials", |a| a.source.git_credentials = Some("/etc/git-credentials".into())),
        ("--source", |a| a.source.source = Some("s3://bucket".into())),
        ("--watch-namespaces", |a| a.watch_namespaces = Some(vec!["Bad_NS".into()])),
        ("--state-namespace", |a| a.state_namespace = Some("a.b".into())),
        ("--report-to", |a| a.report_to = Some("/nonexistent/reports".into())),
    ];
    for (flag, change) in cases {
        let mut a = args(files.settings_file(""));
        change(&mut a);
        let err = format!("{:#}", a.check(&KubeArgs::default()).unwrap_err());
        assert!(err.contains(flag), "{flag}: {err}");
    }
    let mut a = args(files.settings_file(""));
    a.source.keyring = Some(files.write("bad-keyring.json", "{}"));
    let err = format!("{:#}", a.check(&KubeArgs::default()).unwrap_err());
    assert!(err.contains("bad-keyring.json"), "{err}");
}

#[test]
fn keeps_git_credentials_apart_from_a_git_http_source() {
    let files = Files::new();
    let mut a = args(files.settings_file(""));
    a.source.source = Some("git+http://127.0.0.1:8418/fleet.git#prod".into());
    a.source.git_credentials = Some("/var/lib/airlock/git/git-credentials".into());
    let s = a.check(&KubeArgs::default()).unwrap();
    assert_eq!(s.source.store, StoreRef::Git { url: "http://127.0.0.1:8418/fleet.git".into(), branch: "prod".into() });
    assert_eq!(s.source.git_credentials.as_deref(), Some(Path::new("/var/lib/airlock/git/git-credentials")));
    a.source.git_credentials = Some(PathBuf::new());
    assert_eq!(a.check(&KubeArgs::default()).unwrap().source.git_credentials, None, "an empty variable sets nothing");
}

#[test]
fn a_per_cluster_source_names_this_clusters_own_repository() {
    let files = Files::new();
    let mut a = args(files.settings_file(""));
    a.source.source = Some("git+http://127.0.0.1:8418/fleet/{namespace}/{name}.git#main".into());
    let s = a.check(&KubeArgs::default()).unwrap();
    assert_eq!(s.source.store, StoreRef::Git { url: "http://127.0.0.1:8418/fleet/fleet/edge-1.git".into(), branch: "main".into() });
    a.source.cluster = None;
    let err = format!("{:#}", a.source.check_with(&SettingsFile::default()).unwrap_err());
    assert!(err.contains("one Git repository or branch per cluster: --cluster is required"), "{err}");
}

#[test]
fn rejects_oversized_files() {
    let files = Files::new();
    let path = files.write("big.json", &" ".repeat(SETTINGS_FILE_BYTES as usize + 1));
    let err = format!("{:#}", args(path).check(&KubeArgs::default()).unwrap_err());
    assert!(err.contains("larger than"), "{err}");
}

#[test]
fn loads_the_age_identities_naming_a_bad_file() {
    let files = Files::new();
    let identity = airlock_bundle::age::Identity::from_secret([4; 32]);
    let text = format!("# created: 2026-01-01T00:00:00Z\n# public key: {}\n{}\n", identity.recipient(), identity.to_secret_string());
    let mut a = args(files.settings_file(""));
    a.source.age_identity = Some(files.write("identity.txt", &text));
    let s = a.check(&KubeArgs::default()).unwrap();
    assert_eq!(s.identities, std::slice::from_ref(&identity));
    assert!(!format!("{s:?}").contains(&identity.to_secret_string()), "the identity stays out of logs");
    a.source.age_identity = Some(files.write("bad.txt", "AGE-SECRET-KEY-1NOPE\n"));
    let err = format!("{:#}", a.check(&KubeArgs::default()).unwrap_err());
    assert!(err.contains("--age-identity") && err.contains("bad.txt"), "{err}");
}

#[test]
fn loads_the_report_key() {
    let files = Files::new();
    let key = SigningKey::from_seed([7; 32]);
    let mut a = args(files.settings_file(""));
    a.report_key = Some(files.write("cluster.key", &key.to_pkcs8_pem()));
    let s = a.check(&KubeArgs::default()).unwrap();
    assert_eq!(s.report_key.unwrap().public().key_id(), key.public().key_id());
}

#[test]
fn reads_the_report_key_from_the_settings_file_registration_writes() {
    // Exactly the fields `airlock-publisher register cluster` writes into config.json
    // (publisher/src/cmd/register/manifests.rs), with the mounted paths made local.
    let files = Files::new();
    let key = SigningKey::from_seed([5; 32]);
    let key_path = files.write("report.key", &key.to_pkcs8_pem());
    let config = serde_json::json!({
        "source": "oci+http://127.0.0.1:5000/airlock", "cluster": "fleet/edge-1",
        "keyring": files.dir.path().join("keyring.json"), "watchNamespaces": null,
        "namespacePolicy": "reject", "stateNamespace": "airlock-system",
        "reportTo": files.dir.path(), "reportKey": key_path,
    });
    let s = args(files.write("config.json", &config.to_string())).check(&KubeArgs::default()).unwrap();
    assert_eq!(s.report_key.unwrap().public().key_id(), key.public().key_id());
    assert_eq!((s.report_to.as_deref(), s.watch_namespaces), (Some(files.dir.path()), None));

    let missing = config
        .as_object()
        .unwrap()
        .clone()
        .into_iter()
        .map(|(k, v)| (k.clone(), if k == "reportKey" { files.dir.path().join("gone.key").display().to_string().into() } else { v }));
    let path = files.write("config.json", &serde_json::Value::Object(missing.collect()).to_string());
    let err = format!("{:#}", args(path).check(&KubeArgs::default()).unwrap_err());
    assert!(err.contains("--report-key") && err.contains("gone.key"), "{err}");
}

#[test]
fn bundle_narrows_but_never_widens_watch_namespaces() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let (ab, bc) = (v(&["a", "b"]), v(&["b", "c"]));
    assert_eq!(effective_watch_namespaces(None, None), None);
    assert_eq!(effective_watch_namespaces(Some(&ab), None), Some(ab.clone()));
    assert_eq!(effective_watch_namespaces(None, Some(&bc)), Some(bc.clone()));
    assert_eq!(effective_watch_namespaces(Some(&ab), Some(&bc)), Some(v(&["b"])));
    assert_eq!(effective_watch_namespaces(Some(&ab), Some(&v(&["a", "b", "z"]))), Some(ab.clone()));
    assert_eq!(effective_watch_namespaces(Some(&ab), Some(&v(&["z"]))), Some(vec![]));
}

#[test]
fn protected_keys_add_up_and_endpoints_stay_refused_by_default() {
    let files = Files::new();
    let predicate = Fixture::new(1).signed(1, Fixture::files()).statement.predicate;
    let plain = args(files.settings_file("")).check(&KubeArgs::default()).unwrap().engine(&predicate);
    assert!(plain.protected_namespace_keys.is_empty() && !plain.allow_endpoints);
    let file = files.settings_file(r#", "protectNamespaceKeys": ["example.com/*"], "allowEndpoints": true"#);
    let flags = SyncArgs { protect_namespace_keys: vec!["team".into(), "example.com/*".into()], ..args(file) };
    let s = flags.check(&KubeArgs::default()).unwrap().engine(&predicate);
    assert_eq!(s.protected_namespace_keys, ["example.com/*", "team"], "the flag adds to the file's list, never replaces it");
    assert!(s.allow_endpoints);
    let bad = SyncArgs { protect_namespace_keys: vec!["*".into()], ..args(files.settings_file("")) };
    let error = format!("{:#}", bad.check(&KubeArgs::default()).expect_err("refused"));
    assert!(error.contains("--protect-namespace-keys") && error.contains("\"*\""), "{error}");
}
