//! Checking: the flags merged over the settings file into [`SourceSettings`] (for
//! `verify`) or [`SyncSettings`] (for `sync`, `plan` and `run`), every value checked, and
//! what the later stages derive from them (the engine's settings, the watch-namespaces in
//! effect).

use std::path::PathBuf;
use std::time::Duration;

use airlock_bundle::SigningKey;
use airlock_bundle::age::Identity;
use airlock_bundle::cluster::is_dns_label;
use airlock_bundle::statement::Predicate;
use airlock_bundle::{ClusterId, Keyring, Limits};
use airlock_cli::KubeArgs;
use airlock_store::StoreRef;
use anyhow::{Context, bail};

use super::file::{SettingsFile, read_capped, read_identities, read_keyring, read_settings_file};
use super::flags::{SourceArgs, SyncArgs, parse_interval};
use super::reporting::{self, Reporting};
use crate::engine::{self, NamespacePolicy};

/// A PKCS#8 PEM Ed25519 key is 119 bytes.
const KEY_FILE_BYTES: u64 = 16 * 1024;
/// Where registration puts the puller's state, lease and report.
pub const DEFAULT_STATE_NAMESPACE: &str = "airlock-system";
/// The shortest Lease duration accepted.
const MIN_LEASE: Duration = Duration::from_secs(3);
/// The Lease duration when neither flag nor settings file gives one.
const DEFAULT_LEASE: Duration = Duration::from_secs(120);
/// How long validateHealths may take to pass, by default.
const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(120);
/// The spec's longest validity; a site may shorten it, or lengthen it up to a year for a
/// cluster offline longer than that between visits.
const DEFAULT_MAX_VALIDITY: Duration = Duration::from_secs(Limits::SPEC.max_validity_secs.unsigned_abs());
const MIN_MAX_VALIDITY: Duration = Duration::from_secs(3600);
const MAX_MAX_VALIDITY: Duration = Duration::from_secs(366 * 86_400);
/// Requests the engine keeps in flight: enough to hide round trips, few enough not to
/// crowd a small control plane.
const CONCURRENCY: usize = 8;

/// The store to read and where its Git credentials are, if apart from its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub store: StoreRef,
    /// A git-credential-store file, for a `git+http(s)` store only.
    pub git_credentials: Option<PathBuf>,
}

/// Where to fetch from and what to trust, checked.
#[derive(Debug, Clone)]
pub struct SourceSettings {
    pub source: Source,
    /// None only for `verify`, which then checks every cluster the store holds.
    pub cluster: Option<ClusterId>,
    pub keyring: Keyring,
    /// The identities of `--age-identity`; empty without one.
    pub identities: Vec<Identity>,
    /// The longest validity a bundle may claim (spec 8.10).
    pub max_validity: Duration,
}

/// Everything a sync needs, checked.
pub struct SyncSettings {
    pub source: Source,
    pub cluster: ClusterId,
    /// The keyring of the file; the state may hold a newer one adopted by rotation.
    pub keyring: Keyring,
    /// The identities of the file; the state may keep one the file no longer has.
    pub identities: Vec<Identity>,
    /// The longest validity a bundle may claim (spec 8.10).
    pub max_validity: Duration,
    pub watch_namespaces: Option<Vec<String>>,
    pub namespace_policy: NamespacePolicy,
    pub dry_run: bool,
    /// The local override of the mass-prune guard (spec 2.5.4).
    pub allow_mass_prune: bool,
    pub state_namespace: String,
    pub report_to: Option<PathBuf>,
    pub report_key: Option<SigningKey>,
    pub reporting: Reporting,
    pub lease_duration: Duration,
    pub check_timeout: Duration,
    pub kube: KubeArgs,
}

impl SourceArgs {
    /// Merges the flags over the settings file and checks the result.
    pub fn check(&self) -> anyhow::Result<SourceSettings> {
        self.check_with(&read_settings_file(self.config.as_deref())?)
    }

    fn check_with(&self, file: &SettingsFile) -> anyhow::Result<SourceSettings> {
        let source = self.source.clone().or_else(|| file.source.clone()).context("--source is required")?;
        let store: StoreRef = source.parse().map_err(|e| anyhow::anyhow!("--source: {e}"))?;
        let git_credentials = self.git_credentials.clone().filter(|p| !p.as_os_str().is_empty());
        if git_credentials.is_some() && !matches!(&store, StoreRef::Git { url, .. } if !url.starts_with("file://")) {
            bail!("--git-credentials (or AIRLOCK_GIT_CREDENTIALS) needs a git+http:// or git+https:// --source");
        }
        let cluster = match self.cluster.as_ref().or(file.cluster.as_ref()) {
            Some(c) => Some(c.parse::<ClusterId>().map_err(|e| anyhow::anyhow!("--cluster: {e}"))?),
            None => None,
        };
        // A per-cluster layout (spec 9.5.1): this cluster reads its own repository or branch only.
        let store = match &cluster {
            Some(cluster) => store.for_cluster(cluster).map_err(|e| anyhow::anyhow!("--source: {e}"))?,
            None if store.is_per_cluster() => {
                bail!("--source {store} names one Git repository or branch per cluster: --cluster is required")
            }
            None => store,
        };
        let source = Source { store, git_credentials };
        let keyring_path = self.keyring.as_ref().or(file.keyring.as_ref()).context("--keyring is required")?;
        let keyring = read_keyring(keyring_path).context("--keyring")?;
        let identities = match self.age_identity.as_ref().or(file.age_identity.as_ref()) {
            Some(path) => read_identities(path).context("--age-identity")?,
            None => Vec::new(),
        };
        let max_validity = duration(self.max_validity, file.max_validity.as_deref(), "maxValidity", DEFAULT_MAX_VALIDITY)?;
        if !(MIN_MAX_VALIDITY..=MAX_MAX_VALIDITY).contains(&max_validity) {
            bail!("--max-validity {}s is not between 1h and 366d", max_validity.as_secs());
        }
        Ok(SourceSettings { source, cluster, keyring, identities, max_validity })
    }
}

impl SyncArgs {
    /// Merges the flags over the settings file and checks the result.
    pub fn check(&self, kube: &KubeArgs) -> anyhow::Result<SyncSettings> {
        self.check_with(&read_settings_file(self.source.config.as_deref())?, kube)
    }

    fn check_with(&self, file: &SettingsFile, kube: &KubeArgs) -> anyhow::Result<SyncSettings> {
        let SourceSettings { source, cluster, keyring, identities, max_validity } = self.source.check_with(file)?;
        let cluster = cluster.context("--cluster is required")?;
        let watch_namespaces = self.watch_namespaces.clone().or_else(|| file.watch_namespaces.clone());
        let watch_namespaces = watch_namespaces.map(check_namespaces).transpose()?;
        let state_namespace =
            self.state_namespace.clone().or_else(|| file.state_namespace.clone()).unwrap_or(DEFAULT_STATE_NAMESPACE.into());
        if !is_dns_label(&state_namespace) {
            bail!("--state-namespace {state_namespace:?} is not a namespace name");
        }
        let report_to = self.report_to.clone().or_else(|| file.report_to.clone());
        if let Some(dir) = &report_to
            && !dir.is_dir()
        {
            bail!("--report-to {}: not a directory", dir.display());
        }
        let report_key = match self.report_key.as_ref().or(file.report_key.as_ref()) {
            Some(path) => {
                let pem = String::from_utf8(read_capped(path, KEY_FILE_BYTES).context("--report-key")?)
                    .with_context(|| format!("report key {}: not UTF-8 PEM", path.display()))?;
                Some(SigningKey::from_pkcs8_pem(&pem).with_context(|| format!("report key {}", path.display()))?)
            }
            None => None,
        };
        let reporting = reporting::check(self, file, &source.store, report_key.is_some())?;
        let lease_duration = duration(self.lease_duration, file.lease_duration.as_deref(), "leaseDuration", DEFAULT_LEASE)?;
        let check_timeout = duration(self.check_timeout, file.check_timeout.as_deref(), "checkTimeout", DEFAULT_CHECK_TIMEOUT)?;
        Ok(SyncSettings {
            reporting,
            check_timeout,
            source,
            cluster,
            keyring,
            identities,
            max_validity,
            watch_namespaces,
            namespace_policy: self.namespace_policy.or(file.namespace_policy).unwrap_or_default(),
            dry_run: self.dry_run,
            allow_mass_prune: self.allow_mass_prune || file.allow_mass_prune.unwrap_or(false),
            state_namespace,
            report_to,
            report_key,
            // Renewal runs every third of it, so it needs a few seconds to work with.
            lease_duration: lease_duration.max(MIN_LEASE),
            kube: kube.clone(),
        })
    }
}

/// A duration setting: the flag, else the settings file's `key`, else `default`.
fn duration(flag: Option<Duration>, file: Option<&str>, key: &str, default: Duration) -> anyhow::Result<Duration> {
    match (flag, file) {
        (Some(d), _) => Ok(d),
        (None, Some(text)) => parse_interval(text).map_err(|e| anyhow::anyhow!("{key}: {e}")),
        (None, None) => Ok(default),
    }
}

impl std::fmt::Debug for SyncSettings {
    // By hand, so the report key never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncSettings")
            .field("source", &self.source)
            .field("cluster", &self.cluster)
            .field("keyring_version", &self.keyring.version())
            .field("identities", &self.identities)
            .field("max_validity", &self.max_validity)
            .field("watch_namespaces", &self.watch_namespaces)
            .field("namespace_policy", &self.namespace_policy)
            .field("dry_run", &self.dry_run)
            .field("allow_mass_prune", &self.allow_mass_prune)
            .field("state_namespace", &self.state_namespace)
            .field("report_to", &self.report_to)
            .field("report_key", &self.report_key.as_ref().map(|k| k.public().key_id()))
            .field("reporting", &self.reporting)
            .finish()
    }
}

impl SyncSettings {
    /// The engine's settings for a bundle of statement predicate `bundle`: its
    /// watch-namespaces narrow the local ones, its `clusterScoped` is the allow-list, its
    /// `allowMassPrune` confirms a mass prune as the local override does.
    pub fn engine(&self, bundle: &Predicate) -> engine::Settings {
        engine::Settings {
            cluster: self.cluster.to_string(),
            watch_namespaces: effective_watch_namespaces(self.watch_namespaces.as_deref(), bundle.watch_namespaces.as_deref()),
            namespace_policy: self.namespace_policy,
            own_namespace: Some(self.state_namespace.clone()),
            cluster_scoped: bundle.cluster_scoped.clone(),
            dry_run: self.dry_run,
            concurrency: CONCURRENCY,
            held_back: Default::default(),
            decrypts: !self.identities.is_empty(),
            // The local override, or the bundle's signed confirmation.
            allow_mass_prune: self.allow_mass_prune || bundle.allow_mass_prune,
        }
    }
}

/// The watch-namespaces in effect: the local list narrowed by the bundle's. A bundle can
/// restrict a cluster further but never lift a restriction set locally.
pub fn effective_watch_namespaces(local: Option<&[String]>, bundle: Option<&[String]>) -> Option<Vec<String>> {
    match (local, bundle) {
        (None, None) => None,
        (Some(only), None) | (None, Some(only)) => Some(only.to_vec()),
        (Some(local), Some(bundle)) => Some(local.iter().filter(|n| bundle.contains(n)).cloned().collect()),
    }
}

fn check_namespaces(mut names: Vec<String>) -> anyhow::Result<Vec<String>> {
    names.retain(|n| !n.is_empty());
    if let Some(bad) = names.iter().find(|n| !is_dns_label(n)) {
        bail!("--watch-namespaces: {bad:?} is not a namespace name");
    }
    if names.is_empty() {
        bail!("--watch-namespaces is empty; leave it out to allow every namespace");
    }
    names.sort();
    names.dedup();
    Ok(names)
}

#[cfg(test)]
mod tests {
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
        let signed = Predicate { allow_mass_prune: true, ..predicate };
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
        // (publisher/src/register/manifests.rs), with the mounted paths made local.
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

        let missing =
            config.as_object().unwrap().clone().into_iter().map(|(k, v)| {
                (k.clone(), if k == "reportKey" { files.dir.path().join("gone.key").display().to_string().into() } else { v })
            });
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
}
