//! The flags of `register cluster` as typed, checked settings: names are Kubernetes names,
//! labels are valid label pairs, the keyring parses, credentials fit the store. Every file is
//! read here, capped, so that nothing is written anywhere before all input is known good.
//! Building objects from the settings is `manifests`' and `rbac`'s job, not this module's.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use airlock_bundle::cluster::{is_dns_label, is_label_key, is_label_name};
use airlock_bundle::statement::{ClusterScopedObject, ServiceAccountRef, parse_cluster_scoped};
use airlock_bundle::{ClusterId, Limits};
use airlock_bundle::{Keyring, PublicKey, SigningKey};
use airlock_store::{GitCredentials, StoreRef};
use anyhow::{Context, bail, ensure};
use base64::Engine;
use clap::{Args, ValueEnum};
use jiff::{SignedDuration, Timestamp};

use super::age::AgeIdentities;
use super::containment::{Containment, ContainmentFlags};
use super::tenants::parse_tenants;
use super::token::{Token, TokenFlags};
use crate::render::credentials::Login;
use airlock_cli::duration::{format_duration, parse_duration};

/// A keyring holds at most 64 keys of under 200 bytes each; a docker config a few auths.
/// Anything larger than this is the wrong file.
const INPUT_FILE_CAP: u64 = 1024 * 1024;

/// Which CronJob API the managed cluster serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CronJobApi {
    /// Kubernetes 1.21 and later.
    #[value(name = "batch/v1")]
    BatchV1,
    /// Kubernetes 1.20 and earlier (removed in 1.25).
    #[value(name = "batch/v1beta1")]
    BatchV1beta1,
}

impl CronJobApi {
    pub fn api_version(self) -> &'static str {
        match self {
            CronJobApi::BatchV1 => "batch/v1",
            CronJobApi::BatchV1beta1 => "batch/v1beta1",
        }
    }
}

/// The flags as typed; [`ClusterFlags::check`] turns them into a [`Registration`].
#[derive(Debug, Clone, Args)]
pub struct ClusterFlags {
    /// Namespace of the SveltosCluster in the management cluster.
    #[arg(long, short = 'n')]
    pub namespace: String,
    /// Name of the SveltosCluster; with the namespace, the cluster id signed into its bundles.
    #[arg(long)]
    pub cluster: String,
    /// The cluster pulls its configuration (required: Airlock only serves pull-mode clusters).
    #[arg(long)]
    pub pullmode: bool,
    /// Labels of the SveltosCluster, matched by profiles' clusterSelectors: `k=v,k2=v2`.
    #[arg(long, value_delimiter = ',', value_name = "K=V,...")]
    pub labels: Vec<String>,
    /// Restrict the puller to these namespaces (annotation
    /// `agent.projectsveltos.io/watch-namespaces`; its RBAC is narrowed to match).
    #[arg(long, value_delimiter = ',', value_name = "NS,...")]
    pub watch_namespaces: Vec<String>,
    /// With --watch-namespaces, the cluster-scoped objects the cluster may receive besides
    /// the Namespaces of the list, `Kind[.group]/name` (annotation `airlock.dev/cluster-scoped`,
    /// signed in its bundles; the RBAC grants exactly these names).
    #[arg(long, value_delimiter = ',', value_name = "KIND[.GROUP]/NAME,...")]
    pub allow_cluster_scoped: Vec<String>,
    /// Store the puller reads its bundles from (oci://, oci+http://, oci-layout:, oci-archive:, git+…);
    /// {namespace} and {name} in a Git reference are replaced by this cluster's.
    #[arg(long, value_name = "STORE")]
    pub source: String,
    /// Keyring file (from `airlock-publisher keygen`) the puller trusts.
    #[arg(long, value_name = "FILE")]
    pub keyring: PathBuf,
    #[allow(rustdoc::invalid_html_tags, reason = "clap shows this comment as the flag's help, where <placeholders> read as such")]
    /// Write the SveltosCluster to DIR/<ns>.<name>.sveltoscluster.yaml instead of applying it,
    /// for management sets kept in Git and published with `publish --from-dir`.
    #[arg(long, value_name = "DIR")]
    pub to_dir: Option<PathBuf>,
    /// Puller image.
    #[arg(long, value_name = "REF", default_value = concat!("localhost:5000/airlock/puller:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// When the puller CronJob runs (cron syntax).
    #[arg(long, default_value = "*/5 * * * *")]
    pub schedule: String,
    /// CronJob API of the managed cluster: Kubernetes 1.20 and earlier need batch/v1beta1.
    #[arg(long, value_enum, default_value = "batch/v1")]
    pub cronjob_api: CronJobApi,
    /// Namespace the puller runs in on the managed cluster.
    #[arg(long, default_value = "airlock-system", value_name = "NS")]
    pub puller_namespace: String,
    /// Registry user the puller logs in as (OCI registry stores).
    #[arg(long, requires = "registry_password_file", value_name = "USER")]
    pub registry_username: Option<String>,
    /// File holding that user's password or token.
    #[arg(long, requires = "registry_username", value_name = "FILE")]
    pub registry_password_file: Option<PathBuf>,
    /// A Docker config.json with the registry credentials, given to the puller as is.
    #[arg(long, conflicts_with = "registry_username", value_name = "FILE")]
    pub docker_config: Option<PathBuf>,
    /// Git user the puller logs in as (git+http:// and git+https:// stores), kept apart
    /// from the --source URL so that it can be renewed (--token).
    #[arg(long, requires = "git_password_file", conflicts_with_all = ["registry_username", "docker_config"], value_name = "USER")]
    pub git_username: Option<String>,
    /// File holding that Git user's password or token.
    #[arg(long, requires = "git_username", value_name = "FILE")]
    pub git_password_file: Option<PathBuf>,
    /// The cluster's report signing key (PKCS#8 PEM, mode 0600) to keep instead of
    /// generating a new one: re-registering without it changes the key.
    #[arg(long, value_name = "FILE")]
    pub report_key_file: Option<PathBuf>,
    /// The cluster's age identity file (AGE-SECRET-KEY-1... lines, # comments, as
    /// age-keygen writes) to keep instead of generating a new identity: its first identity
    /// is the current one, any further ones are kept as previous identities.
    #[arg(long, value_name = "FILE", conflicts_with = "no_encryption")]
    pub age_identity_file: Option<PathBuf>,
    /// An identity file whose identities are kept after the current one, so that bundles
    /// sealed to them still decrypt during a rotation.
    #[arg(long, value_name = "FILE", conflicts_with = "no_encryption")]
    pub previous_age_identity_file: Option<PathBuf>,
    /// Register without an age identity: the cluster gets its Secrets in clear.
    #[arg(long)]
    pub no_encryption: bool,
    /// How often the puller sends a report to the store at least, even when nothing
    /// changed; recorded on the SveltosCluster (airlock.dev/report-interval): a cluster
    /// silent for spec.consecutiveFailureThreshold (default 3) intervals is not ready.
    #[arg(long, default_value = "30m", value_name = "DURATION", value_parser = parse_duration)]
    pub report_every: SignedDuration,
    /// How long the puller's sync Lease holds without renewal (the puller's default: 2m):
    /// a puller killed mid-apply keeps the next runs off for this long, so keep it below
    /// the schedule's period for the next scheduled run to take over.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub lease_duration: Option<SignedDuration>,
    /// Run the puller's pod on the node's network (hostNetwork, dnsPolicy None with the
    /// resolver 127.0.0.1, no container port): for single-node clusters without a pod
    /// network, such as hack/node.sh's.
    #[arg(long)]
    pub host_network: bool,
    /// Mount a local --source (oci-layout:, oci-archive:, git+file://) from the node's own
    /// disk into the puller's pod at the same path (hostPath; a layout read-write, for the
    /// reports). The path must be there on every node the pod may run on.
    #[arg(long)]
    pub mount_host_path: bool,
    /// A tenant ServiceAccount, `NAMESPACE/NAME`, whose profiles (labelled
    /// projectsveltos.io/serviceaccount-name and -namespace) the puller applies as it: the
    /// puller may impersonate exactly these; with --watch-namespaces, each in one of them.
    #[arg(long, value_delimiter = ',', value_name = "NAMESPACE/NAME,...")]
    pub tenant: Vec<String>,
    #[command(flatten)]
    pub token: TokenFlags,
    #[command(flatten)]
    pub containment: ContainmentFlags,
}

/// The key the cluster's puller signs its reports with: the private half goes to the
/// managed cluster, the public half onto the SveltosCluster, where `ingest` checks reports.
#[derive(Clone, PartialEq, Eq)]
pub struct ReportKey {
    /// PKCS#8 PEM.
    pub private_pem: String,
    pub public: PublicKey,
}

impl ReportKey {
    fn new(key: &SigningKey) -> ReportKey {
        ReportKey { private_pem: key.to_pkcs8_pem(), public: key.public() }
    }
}

impl std::fmt::Debug for ReportKey {
    // By hand, so the private key never reaches a log or a test failure message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportKey").field("key_id", &self.public.key_id()).finish_non_exhaustive()
    }
}

/// Everything registration needs, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub cluster: ClusterId,
    pub labels: BTreeMap<String, String>,
    /// In the order given; `None` when the puller may write everywhere.
    pub watch_namespaces: Option<Vec<String>>,
    /// `--allow-cluster-scoped`, sorted; empty without watch-namespaces.
    pub cluster_scoped: Vec<ClusterScopedObject>,
    /// What the contained puller keeps from its bundles; empty without watch-namespaces.
    pub containment: Containment,
    /// `--tenant`, sorted: the ServiceAccounts the puller may impersonate.
    pub tenants: Vec<ServiceAccountRef>,
    pub source: StoreRef,
    /// The keyring file's text, as given.
    pub keyring: String,
    pub image: String,
    pub schedule: String,
    pub cronjob_api: CronJobApi,
    pub puller_namespace: String,
    /// The puller's store logins: a Docker config.json, or Git credentials.
    pub login: Option<Login>,
    /// `--token`: the credentials are renewed through a management Secret.
    pub token: Option<Token>,
    pub report_key: ReportKey,
    /// The cluster's age identities; `None` with `--no-encryption`.
    pub age: Option<AgeIdentities>,
    /// The report interval, as `parse_duration` writes it (`30m`).
    pub report_every: String,
    /// The sync Lease's duration, likewise, when given.
    pub lease_duration: Option<String>,
    pub host_network: bool,
    /// The local path of the source, to mount from the node (`--mount-host-path`).
    pub host_path: Option<PathBuf>,
}

impl ClusterFlags {
    pub fn check(&self) -> anyhow::Result<Registration> {
        ensure!(self.pullmode, "--pullmode is required: Airlock registers pull-mode clusters only");
        let cluster = ClusterId::new(&self.namespace, &self.cluster)?;
        ensure!(is_dns_label(&self.puller_namespace), "--puller-namespace {:?} is not a Kubernetes namespace name", self.puller_namespace);
        // The puller is given its own repository or branch of a per-cluster layout (spec 9.5.1).
        let source: StoreRef = self.source.parse::<StoreRef>().and_then(|s| s.for_cluster(&cluster)).context("--source")?;
        let keyring = read_keyring(&self.keyring)?;
        ensure!(!self.image.is_empty() && !self.image.contains(char::is_whitespace), "--image {:?} is not an image reference", self.image);
        check_schedule(&self.schedule)?;
        let login = self.login(&source)?;
        let host_path = match (&source, self.mount_host_path) {
            (_, false) => None,
            (StoreRef::OciLayout(path) | StoreRef::OciArchive(path), true) => Some(path.clone()),
            (StoreRef::Git { url, .. }, true) if url.starts_with("file://") => Some(PathBuf::from(&url["file://".len()..])),
            (_, true) => bail!("--mount-host-path needs a local --source (oci-layout:, oci-archive:, git+file://)"),
        };
        ensure!(host_path.as_ref().is_none_or(|p| p.is_absolute()), "--mount-host-path: the --source path must be absolute");
        let watch_namespaces = parse_watch_namespaces(&self.watch_namespaces)?;
        let cluster_scoped =
            parse_cluster_scoped(&self.allow_cluster_scoped.join(",")).map_err(|e| anyhow::anyhow!("--allow-cluster-scoped: {e}"))?;
        ensure!(
            cluster_scoped.is_empty() || watch_namespaces.is_some(),
            "--allow-cluster-scoped needs --watch-namespaces: without it the puller may write every object anyway"
        );
        if let Some(own) = watch_namespaces.iter().flatten().find(|n| **n == self.puller_namespace) {
            bail!("--watch-namespaces: {own:?} is the puller's own namespace (its state and keys): a bundle may not write there");
        }
        let containment = self.containment.check(watch_namespaces.is_some())?;
        let tenants = parse_tenants(&self.tenant, watch_namespaces.as_deref(), &self.puller_namespace)?;
        Ok(Registration {
            tenants,
            containment,
            labels: parse_labels(&self.labels)?,
            watch_namespaces,
            cluster_scoped,
            token: self.token.check(&cluster, login.is_some(), Timestamp::now())?,
            cluster,
            login,
            source,
            keyring,
            image: self.image.clone(),
            schedule: self.schedule.clone(),
            cronjob_api: self.cronjob_api,
            puller_namespace: self.puller_namespace.clone(),
            report_key: self.report_key()?,
            age: self.age()?,
            report_every: format_duration(self.report_every),
            lease_duration: self.lease_duration.map(format_duration),
            host_network: self.host_network,
            host_path,
        })
    }

    fn report_key(&self) -> anyhow::Result<ReportKey> {
        let key = match &self.report_key_file {
            Some(path) => crate::keys::load_private_key(path).context("--report-key-file")?,
            None => SigningKey::generate(),
        };
        Ok(ReportKey::new(&key))
    }

    /// The age identities: the kept file's, or a new one; then the previous ones.
    fn age(&self) -> anyhow::Result<Option<AgeIdentities>> {
        if self.no_encryption {
            return Ok(None);
        }
        let mut identities = match &self.age_identity_file {
            Some(path) => AgeIdentities::kept(&read_text(path).context("--age-identity-file")?, path).context("--age-identity-file")?,
            None => AgeIdentities::generate(Timestamp::now()),
        };
        if let Some(path) = &self.previous_age_identity_file {
            let text = read_text(path).context("--previous-age-identity-file")?;
            identities.keep_previous(&text, path).context("--previous-age-identity-file")?;
        }
        Ok(Some(identities))
    }

    /// The store logins given, in the form the store takes.
    fn login(&self, source: &StoreRef) -> anyhow::Result<Option<Login>> {
        if let Some(path) = &self.docker_config {
            let login = Login::Docker(read_capped(path)?);
            login.check().map_err(|m| anyhow::anyhow!("{}: {m}", path.display()))?;
            return Ok(Some(login));
        }
        if let (Some(user), Some(password_file)) = (&self.git_username, &self.git_password_file) {
            let url = match source {
                StoreRef::Git { url, .. } if !url.starts_with("file://") => url,
                _ => bail!("--git-username needs a git+http:// or git+https:// --source"),
            };
            ensure!(!url.contains('@'), "--git-username: the --source URL carries credentials already; drop them from it");
            let password = read_password(password_file)?;
            let credentials = GitCredentials::new(user, &password).context("--git-username must be non-empty")?;
            return Ok(Some(Login::Git(credentials.store_line(url)?.into_bytes())));
        }
        let (Some(user), Some(password_file)) = (&self.registry_username, &self.registry_password_file) else {
            return Ok(None);
        };
        let StoreRef::OciRegistry { host, .. } = source else {
            bail!("--registry-username needs an oci:// or oci+http:// --source; for a Git store use --git-username");
        };
        ensure!(!user.is_empty() && !user.contains(':'), "--registry-username must be non-empty and without ':'");
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", read_password(password_file)?));
        let config = serde_json::json!({"auths": {host.as_str(): {"auth": auth}}});
        Ok(Some(Login::Docker(serde_json::to_vec(&config)?)))
    }
}

/// A password or token file's content, without the line end editors and `echo` add.
fn read_password(path: &Path) -> anyhow::Result<String> {
    let password = String::from_utf8(read_capped(path)?).with_context(|| format!("{}: password is not UTF-8", path.display()))?;
    let password = password.trim_end_matches(['\n', '\r']);
    ensure!(!password.is_empty(), "{}: empty password", path.display());
    Ok(password.to_string())
}

/// A text file's content, capped.
fn read_text(path: &Path) -> anyhow::Result<String> {
    String::from_utf8(read_capped(path)?).with_context(|| format!("{}: not UTF-8 text", path.display()))
}

fn read_capped(path: &Path) -> anyhow::Result<Vec<u8>> {
    let file = std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut bytes = Vec::new();
    file.take(INPUT_FILE_CAP + 1).read_to_end(&mut bytes).with_context(|| format!("{}: cannot read", path.display()))?;
    ensure!(bytes.len() as u64 <= INPUT_FILE_CAP, "{}: larger than {INPUT_FILE_CAP} bytes", path.display());
    Ok(bytes)
}

fn read_keyring(path: &Path) -> anyhow::Result<String> {
    let bytes = read_capped(path)?;
    Keyring::parse(&bytes, &Limits::SPEC).with_context(|| format!("keyring {}", path.display()))?;
    // A keyring that parsed is JSON, hence UTF-8.
    Ok(String::from_utf8(bytes)?)
}

fn parse_labels(items: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut labels = BTreeMap::new();
    for item in items.iter().filter(|i| !i.is_empty()) {
        let Some((key, value)) = item.split_once('=') else {
            bail!("--labels {item:?}: expected KEY=VALUE");
        };
        ensure!(is_label_key(key), "--labels {item:?}: {key:?} is not a label key");
        ensure!(value.is_empty() || is_label_name(value), "--labels {item:?}: {value:?} is not a label value");
        ensure!(labels.insert(key.to_string(), value.to_string()).is_none(), "--labels: {key:?} given twice");
    }
    Ok(labels)
}

fn parse_watch_namespaces(items: &[String]) -> anyhow::Result<Option<Vec<String>>> {
    let mut namespaces: Vec<String> = Vec::new();
    for ns in items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        ensure!(is_dns_label(ns), "--watch-namespaces: {ns:?} is not a namespace name");
        ensure!(!namespaces.iter().any(|n| n == ns), "--watch-namespaces: {ns:?} given twice");
        namespaces.push(ns.to_string());
    }
    Ok((!namespaces.is_empty()).then_some(namespaces))
}

/// Five fields or a macro such as `@hourly`; the apiserver checks the rest, but a wrong field
/// count is the usual mistake (a seconds field copied from another tool).
fn check_schedule(schedule: &str) -> anyhow::Result<()> {
    let fields = schedule.split_whitespace().count();
    ensure!(
        (schedule.starts_with('@') && fields == 1) || fields == 5,
        "--schedule {schedule:?}: expected five cron fields (minute hour day month weekday) or a macro like @hourly"
    );
    Ok(())
}

#[cfg(test)]
#[path = "settings_tests.rs"]
pub(crate) mod tests;
