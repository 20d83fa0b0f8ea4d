//! The raw flags of `sync`, `plan`, `run` and `verify`, as clap parses them: nothing here
//! is checked yet beyond its type (`checked` does that, merging in the settings file).

use std::path::PathBuf;
use std::time::Duration;

use airlock_cli::duration::parse_std_duration;
use clap::Args;

use crate::engine::NamespacePolicy;

/// Where the bundle comes from and whose it is: the flags `verify` shares with `sync`.
#[derive(Debug, Clone, Default, Args)]
pub struct SourceArgs {
    /// Store to fetch from: oci://HOST/PREFIX, oci+http://HOST:PORT/PREFIX, oci-layout:DIR,
    /// oci-archive:FILE, git+file:///PATH, git+http(s)://URL[#BRANCH].
    #[arg(long)]
    pub source: Option<String>,
    /// This cluster's id, NAMESPACE/NAME of its SveltosCluster.
    #[arg(long)]
    pub cluster: Option<String>,
    /// The trusted keyring file (JSON, spec section 7).
    #[arg(long)]
    pub keyring: Option<PathBuf>,
    /// Credentials for a git+http(s) --source kept apart from its URL: a file in
    /// git-credential-store format (`http://user:password@host` lines), read afresh each
    /// run, so renewed credentials (spec 2.6) apply from the next run. Registration mounts
    /// it from the Secret airlock-store-credentials.
    #[arg(long, env = "AIRLOCK_GIT_CREDENTIALS", value_name = "FILE")]
    pub git_credentials: Option<PathBuf>,
    /// This cluster's age identity file (`AGE-SECRET-KEY-1...` lines, `#` comments), to
    /// decrypt the bundle's encrypted files (bundles-format.md 2.7). Registration mounts it
    /// from the Secret airlock-age-identity. With it, a Secret in clear is refused.
    #[arg(long, env = "AIRLOCK_AGE_IDENTITY", value_name = "FILE")]
    pub age_identity: Option<PathBuf>,
    /// The longest validity (`expires` minus `issuedAt`) a bundle may claim, and how far
    /// past the newest `issuedAt` accepted one may be while the clock is behind it
    /// (bundles-format.md 8.9, 8.10): 1h to 366d, default 90d (2160h).
    #[arg(long, value_parser = parse_std_duration, value_name = "DURATION")]
    pub max_validity: Option<Duration>,
    /// Settings file written by registration: JSON with source, cluster, keyring,
    /// maxValidity, watchNamespaces, namespacePolicy, stateNamespace, reportTo, reportKey,
    /// ageIdentity, pushReports, reportEvery, leaseDuration, allowMassPrune,
    /// protectNamespaceKeys, allowEndpoints. Flags override its fields; the protected keys
    /// of both count.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// The flags of `sync`, `plan` and `run`.
#[derive(Debug, Clone, Default, Args)]
pub struct SyncArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Namespaces the bundle may write to (comma-separated); cluster-scoped objects are
    /// not restricted. The bundle can narrow this list, never widen it.
    #[arg(long, value_delimiter = ',')]
    pub watch_namespaces: Option<Vec<String>>,
    /// What to do with namespaced objects outside --watch-namespaces.
    #[arg(long, value_enum)]
    pub namespace_policy: Option<NamespacePolicy>,
    /// Server-side dry-run: verify and compute everything, apply nothing, record no state
    /// (the Lease and the report are still written).
    #[arg(long)]
    pub dry_run: bool,
    /// Apply a version that would prune more than half of a sizeable inventory, which the
    /// mass-prune guard otherwise holds (bundles-format.md 2.5.4). For one run, to confirm a
    /// withdrawal that was meant; not to leave set.
    #[arg(long)]
    pub allow_mass_prune: bool,
    /// With watch-namespaces, more label and annotation keys of Namespaces that a bundle
    /// may not set (`KEY`, or `PREFIX/*` for all of a prefix), besides Pod Security's
    /// `pod-security.kubernetes.io/*`, which are always protected (bundles-format.md 5.12).
    #[arg(long, value_delimiter = ',', value_name = "KEY|PREFIX/*,...")]
    pub protect_namespace_keys: Vec<String>,
    /// With watch-namespaces, let bundles write Endpoints and EndpointSlices, which can send
    /// a Service's traffic to any address; refused by default.
    #[arg(long)]
    pub allow_endpoints: bool,
    /// Namespace of the puller's state Secret, Lease and report ConfigMap
    /// (default airlock-system).
    #[arg(long)]
    pub state_namespace: Option<String>,
    /// Directory to write a report of every run to.
    #[arg(long)]
    pub report_to: Option<PathBuf>,
    /// The cluster's own Ed25519 key (PKCS#8 PEM) to sign reports with.
    #[arg(long)]
    pub report_key: Option<PathBuf>,
    /// Also send the signed reports to the store, beside the bundles (registries, layouts
    /// and Git; bundles-format.md 14.7): when the outcome is news, after a push that
    /// failed, and every --report-every.
    #[arg(long)]
    pub push_reports: bool,
    /// Send a report to the store at least this often, even when nothing changed: the
    /// management side counts a cluster silent for three of these as not ready (default 30m).
    #[arg(long, value_parser = parse_std_duration, value_name = "DURATION")]
    pub report_every: Option<Duration>,
    /// How long the sync Lease holds without renewal, which is how long a killed puller
    /// keeps the next one waiting: shorter than the schedule's period lets the next
    /// scheduled run take over (default 2m).
    #[arg(long, value_parser = parse_std_duration, value_name = "DURATION")]
    pub lease_duration: Option<Duration>,
    /// How long a run waits for a part's validateHealths to pass after applying it, and
    /// for a Job check without a timeout of its own (default 2m).
    #[arg(long, value_parser = parse_std_duration, value_name = "DURATION")]
    pub check_timeout: Option<Duration>,
}
