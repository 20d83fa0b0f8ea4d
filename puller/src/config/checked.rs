//! Checking: the flags merged over the settings file into [`SourceSettings`] (for
//! `verify`) or [`SyncSettings`] (for `sync`, `plan` and `run`), every value checked, and
//! what the later stages derive from them (the engine's settings, the watch-namespaces in
//! effect).

use std::collections::BTreeSet;
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
use super::flags::{SourceArgs, SyncArgs};
use super::reporting::{self, Reporting};
use crate::engine::{self, NamespacePolicy};
use airlock_cli::duration::parse_std_duration;

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
/// Requests the engine keeps in flight. An apply spends most of its time waiting for
/// etcd to commit, so the API server's cores stay busy only with many in flight, and
/// etcd then commits them in fewer batches; still well within the share API Priority and
/// Fairness gives one client of a small control plane.
const CONCURRENCY: usize = 32;

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
    /// Namespace keys protected besides Pod Security's (spec 5.12).
    pub protected_namespace_keys: Vec<String>,
    pub allow_endpoints: bool,
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
                bail!("--source {} names one Git repository or branch per cluster: --cluster is required", store.shown())
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
        // Both lists count: a flag adds keys to the file's, it never takes any away.
        let protected_namespace_keys = (file.protect_namespace_keys.iter().flatten())
            .chain(&self.protect_namespace_keys)
            .map(|k| engine::namespace_keys::parse(k).context("--protect-namespace-keys"))
            .collect::<anyhow::Result<BTreeSet<String>>>()?;
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
            protected_namespace_keys: protected_namespace_keys.into_iter().collect(),
            allow_endpoints: self.allow_endpoints || file.allow_endpoints.unwrap_or(false),
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
        (None, Some(text)) => parse_std_duration(text).map_err(|e| anyhow::anyhow!("{key}: {e}")),
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
            .field("protected_namespace_keys", &self.protected_namespace_keys)
            .field("allow_endpoints", &self.allow_endpoints)
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
            watch_namespaces: effective_watch_namespaces(self.watch_namespaces.as_deref(), bundle.settings.watch_namespaces.as_deref()),
            namespace_policy: self.namespace_policy,
            own_namespace: Some(self.state_namespace.clone()),
            cluster_scoped: bundle.settings.cluster_scoped.clone(),
            dry_run: self.dry_run,
            concurrency: CONCURRENCY,
            held_back: Default::default(),
            decrypts: !self.identities.is_empty(),
            // The local override, or the bundle's signed confirmation.
            allow_mass_prune: self.allow_mass_prune || bundle.settings.allow_mass_prune,
            // Local only: what containment keeps from a bundle is not the bundle's to choose.
            protected_namespace_keys: self.protected_namespace_keys.clone(),
            allow_endpoints: self.allow_endpoints,
            tenants: engine::Tenants::default(),
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
#[path = "checked_tests.rs"]
mod tests;
