//! `airlock-publisher publish`: one run of the pipeline, a summary table, an exit code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use airlock_bundle::age::Recipient;
use airlock_bundle::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::keyring::chain;
use airlock_bundle::{ClusterId, Limits};
use airlock_cli::exit;
use airlock_store::{PublishMeta, Store};
use anyhow::{Context, bail, ensure};
use clap::Args;
use jiff::SignedDuration;

use super::{SourceArgs, StoreArgs, parse_duration};
use crate::cmd::table;
use crate::keys;
use crate::publish::memo;
use crate::publish::{Published, Signer, Status};
use crate::sandbox::Launcher;
use crate::source_mirrors::{self, Mirrors};
use crate::sources::live::{ClusterReader, KubeReader};
use crate::worker::{Guard, Job, Reach, RenderWorker, Served, Started};

const EXAMPLES: &str = "Examples:
  # Publish from a Git checkout of the management manifests to a registry:
  airlock-publisher publish --from-dir ./management --to oci://registry.example/airlock \\
      --key keys/ops.key

  # The online key kept in an HSM (any PKCS#11 module; SoftHSM2 here):
  airlock-publisher publish --from-dir ./management --to oci://registry.example/airlock \\
      --keyring keyring.json \\
      --key 'pkcs11:token=airlock;object=ops?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/airlock/pin'

  # From the management cluster, two keys (threshold 2), one cluster, without writing:
  airlock-publisher publish --kubeconfig ~/.kube/mgmt --to git+https://git.example/bundles.git \\
      --key a.key --key b.key --keyring keyring.json --cluster fleet/edge-1 --dry-run

Exit codes: 0 all published (or unchanged), 1 error (or every cluster failed), 2 some
clusters or profiles failed, or some objects could not be read (the rest was published; a
failed profile's part keeps what it held). The lines below the table name each failure.";

/// Flags of `publish`, also used by `watch`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct PublishArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Store to publish to: oci://HOST/PREFIX, oci+http://HOST:PORT/PREFIX, oci-layout:DIR,
    /// oci-archive:FILE or git+URL[#BRANCH]; {namespace} and {name} in a Git URL's path or
    /// branch write one repository or branch per cluster.
    #[arg(long, value_name = "STORE")]
    pub to: String,
    /// Private signing key: a PKCS#8 PEM file (mode 0600), or a key kept in a PKCS#11
    /// token as an RFC 7512 URI, 'pkcs11:token=T;object=O?module-path=/path/module.so&pin-source=file:/run/pin'.
    /// Repeat for a threshold above 1.
    #[arg(long = "key", value_name = "FILE|URI", required = true)]
    pub keys: Vec<PathBuf>,
    /// The keyring the bundles declare (its version is signed into every bundle).
    /// Default: keyring.json beside the first --key when it is a file, else version 1.
    #[arg(long, value_name = "FILE")]
    pub keyring: Option<PathBuf>,
    /// Keyring updates (FILE.update from `keyring rotate`), oldest first, carried to every
    /// puller beside its bundle.
    #[arg(long = "keyring-chain", value_name = "FILE")]
    pub keyring_chain: Vec<PathBuf>,
    /// How long bundles stay valid: 30d, 12h, 90m, 3600s.
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = parse_duration)]
    pub expires_in: SignedDuration,
    /// Publish only this cluster (NAMESPACE/NAME); repeatable.
    #[arg(long = "cluster", value_name = "NS/NAME")]
    pub clusters: Vec<ClusterId>,
    /// Render and compare, but sign and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Where the profiles came from, recorded in the store (e.g. a Git URL).
    #[arg(long = "source", value_name = "URI")]
    pub source_uri: Option<String>,
    /// The revision of --source (e.g. a commit id).
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    /// Where to remember what each cluster rendered to, so the next run renders only the
    /// clusters whose inputs changed. Default: $XDG_CACHE_HOME/airlock-publisher, else
    /// ~/.cache/airlock-publisher.
    #[arg(long, value_name = "DIR", env = "AIRLOCK_PUBLISHER_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Render every cluster, remembering nothing.
    #[arg(long, conflicts_with = "cache_dir")]
    pub no_cache: bool,
    /// Warn about relayed store credentials (clusters registered with --token) that expire
    /// within this time; expired ones fail their cluster.
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_duration)]
    pub renew_before: SignedDuration,
    /// The kubectl whose built-in kustomize builds kustomizationRefs. Default: kubectl
    /// on PATH.
    #[arg(long, value_name = "PATH")]
    pub kubectl: Option<PathBuf>,
    /// The helm (v3 or v4) that renders helmCharts. Default: helm on PATH.
    #[arg(long, value_name = "PATH")]
    pub helm: Option<PathBuf>,
    /// Run helm and kubectl unconfined where the kernel has no Landlock: the charts and
    /// kustomizations they read can then reach every file the publisher can, keys included.
    #[arg(long)]
    pub allow_unconfined_tools: bool,
    /// An age recipient (age1...) every encrypted file is encrypted to as well, after the
    /// cluster's own: a break-glass key kept offline. Repeatable. Only clusters with a
    /// recipient of their own (annotation airlock.dev/age-recipient) get encrypted files.
    #[arg(long = "age-recipient", value_name = "RECIPIENT")]
    pub age_recipients: Vec<String>,
    /// Fetch every chart repository, remoteURL and Flux source whose URL starts with FROM
    /// from TO instead (the same kind of URL: http(s), oci or git; oci+http for a
    /// registry over plain HTTP); the longest FROM wins. Bundles keep recording the URL the
    /// profile names. Repeatable.
    #[arg(long = "mirror", value_name = "FROM=TO")]
    pub mirrors: Vec<String>,
    /// A file of mirrors: one FROM=TO per line, blank lines and lines starting with # skipped.
    #[arg(long, value_name = "FILE")]
    pub mirror_file: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl PublishArgs {
    /// Loads keys and keyrings, starts the render worker, then opens the store and, unless
    /// the source is a directory, connects to the management cluster (with `client` when
    /// the caller has one) while the worker starts: the signer's half. The worker gets the
    /// rest as its job. Nothing is created before the keys are known good.
    pub async fn render_worker(&self, client: Option<kube::Client>) -> anyhow::Result<RenderWorker> {
        let mirrors = self.mirrors()?;
        let unconfined = matches!(crate::sandbox::install(self.allow_unconfined_tools)?, Launcher::Unconfined);
        if unconfined {
            tracing::warn!(
                "the render worker runs without Landlock: it holds no key, secret or credential, but can read every file the publisher can"
            );
        }
        let signer = self.signer()?;
        let age_recipients = self.age_recipients()?.iter().map(ToString::to_string).collect();
        // The worker runs in a directory of its own.
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let reach = Reach {
            from_dir: self.source.from_dir.as_ref().map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| absolute(d))),
            layout: match self.to.parse() {
                Ok(airlock_store::StoreRef::OciLayout(dir)) => {
                    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
                    Some(std::fs::canonicalize(&dir).unwrap_or_else(|_| absolute(&dir)))
                }
                _ => None,
            },
            helm: self.helm.as_ref().map(absolute),
            kubectl: self.kubectl.as_ref().map(absolute),
            caches: self.cache_root().as_ref().map(absolute),
        };
        let waiting = Started::spawn(&reach, unconfined)?;
        let store: Arc<dyn Store> = self.store.open(&self.to).await?.into();
        let reader: Option<Arc<dyn ClusterReader>> = match (&self.source.from_dir, client) {
            (Some(_), _) => None,
            (None, Some(client)) => Some(Arc::new(KubeReader::new(client))),
            (None, None) => {
                Some(Arc::new(KubeReader::new(self.source.kube.client().await.context("connecting to the management cluster")?)))
            }
        };
        let job = Job {
            from_dir: reach.from_dir.clone(),
            store: store.describe(),
            layout: reach.layout.clone(),
            meta: PublishMeta { source: self.source_uri.clone(), revision: self.revision.clone() },
            only: self.clusters.clone(),
            shard: None,
            dry_run: self.dry_run,
            renew_before: self.renew_before,
            kubectl: reach.kubectl.clone(),
            helm: reach.helm.clone(),
            helm_cache: reach.caches.as_ref().map(|d| d.join("helm")),
            memo: self.memo_file().as_ref().map(absolute),
            age_recipients,
            keys: signer.keys.iter().map(|k| k.public().to_pem()).collect(),
            keyring_version: signer.keyring_version,
            chain: signer.chain.clone(),
            expires_in: self.expires_in,
            mirrors,
        };
        let guard = Guard { only: self.clusters.clone(), expires_in: self.expires_in };
        Ok(RenderWorker::new(Served::new(signer, store, reader, guard, Limits::SPEC), job, reach, unconfined, waiting))
    }

    /// The `--age-recipient`s, checked. A value is named by its position, never shown: an
    /// identity (`AGE-SECRET-KEY-1...`) pasted by mistake must not reach a terminal or log.
    fn age_recipients(&self) -> anyhow::Result<Vec<Recipient>> {
        let mut recipients: Vec<Recipient> = Vec::new();
        for (i, text) in self.age_recipients.iter().enumerate() {
            let recipient: Recipient = text.trim().parse().with_context(|| format!("--age-recipient number {}", i + 1))?;
            ensure!(!recipients.contains(&recipient), "--age-recipient {recipient} given twice");
            recipients.push(recipient);
        }
        // Each cluster's own recipient comes first.
        let most = Limits::SPEC.recipients - 1;
        ensure!(
            recipients.len() <= most,
            "{} --age-recipient given: pullers accept at most {most} besides the cluster's own",
            recipients.len()
        );
        Ok(recipients)
    }

    /// `--mirror` and `--mirror-file`, checked before anything is fetched.
    pub fn mirrors(&self) -> anyhow::Result<Mirrors> {
        let text = match &self.mirror_file {
            Some(path) => std::fs::read_to_string(path).with_context(|| format!("--mirror-file {}", path.display()))?,
            None => String::new(),
        };
        let shown = self.mirror_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let flags = self.mirrors.iter().enumerate().map(|(i, pair)| (format!("--mirror number {}", i + 1), pair.as_str()));
        Ok(Mirrors::parse(flags.chain(source_mirrors::file_lines(&shown, &text)))?)
    }

    /// The render memo's file for this source: one per source directory or management
    /// cluster, so publishing two fleets from one machine keeps both.
    fn memo_file(&self) -> Option<PathBuf> {
        let dir = self.cache_root()?;
        let source = match &self.source.from_dir {
            Some(d) => format!("dir {}", std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()).display()),
            None => format!("cluster {:?} {:?}", self.source.kube.kubeconfig, self.source.kube.context),
        };
        Some(dir.join(memo::file_name(&source)))
    }

    /// Where what is remembered across runs is kept; `None` with `--no-cache`.
    fn cache_root(&self) -> Option<PathBuf> {
        self.cache_dir.clone().or_else(default_cache_root).filter(|_| !self.no_cache)
    }

    fn signer(&self) -> anyhow::Result<Signer> {
        open_signer(&self.keys, self.keyring.as_deref(), &self.keyring_chain, self.expires_in)
    }
}

/// The cache directory without `--cache-dir`: `$XDG_CACHE_HOME/airlock-publisher`, else
/// `~/.cache/airlock-publisher`.
pub fn default_cache_root() -> Option<PathBuf> {
    let home = || std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache"));
    std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).or_else(home).map(|d| d.join("airlock-publisher"))
}

/// The signer of `--key` (repeatable), declaring the keyring of `keyring` (default:
/// keyring.json beside the first key file, else version 1), carrying the `keyring_chain`
/// updates, for bundles valid `expires_in`; also `deregister cluster --final-bundle`'s.
pub fn open_signer(
    keys_args: &[PathBuf],
    keyring: Option<&Path>,
    keyring_chain: &[PathBuf],
    expires_in: SignedDuration,
) -> anyhow::Result<Signer> {
    let opened = keys::open_signers(keys_args)?;
    // A key in a token has no directory to look beside.
    let beside = opened[0].source.file().map(|f| f.parent().unwrap_or(Path::new(".")).join("keyring.json"));
    let keyring_path = keyring.map(Path::to_path_buf).or_else(|| beside.filter(|b| b.is_file()));
    let keyring = keyring_path.as_deref().map(keys::load_keyring).transpose()?;
    if let (Some(keyring), Some(path)) = (&keyring, &keyring_path) {
        // A root key used online would no longer be offline, whatever pullers accept.
        if let Some(key) = opened.iter().find(|k| keyring.root().is_some_and(|r| r.holds(&k.signer.public()))) {
            bail!("--key {}: a root key of keyring {}; root keys sign keyring updates only, never bundles", key.source, path.display());
        }
        // Pullers would reject every bundle; better to say so before signing any.
        let probe = envelope::sign_by(IN_TOTO_PAYLOAD_TYPE, b"{}", &opened.iter().map(|k| &k.signer).collect::<Vec<_>>())?;
        let decoded = envelope::decode(&probe, IN_TOTO_PAYLOAD_TYPE, &Limits::SPEC)?;
        if let Err(e) = keyring.check(&decoded) {
            bail!("the keys given with --key do not satisfy keyring {} (version {}): {e}", path.display(), keyring.version());
        }
    }
    let keyring_version = keyring.as_ref().map_or(1, |k| k.version());
    let (updates, last) = keys::load_chain(keyring_chain)?;
    if let Some(last) = last
        && last != keyring_version
    {
        bail!(
            "the keyring chain ends at version {last} but the bundles would declare keyring version {keyring_version}; pass --keyring with the newest keyring"
        );
    }
    let max_days = Limits::SPEC.max_validity_secs / 86_400;
    if expires_in > SignedDuration::from_secs(Limits::SPEC.max_validity_secs) {
        let days = expires_in.as_secs_f64() / 86_400.0;
        bail!("--expires-in of {days:.1} days: pullers refuse a bundle valid for more than {max_days} days");
    }
    let keys = opened.into_iter().map(|k| k.signer).collect();
    Ok(Signer::new(keys, keyring_version, (!updates.is_empty()).then(|| chain(&updates)), expires_in)?)
}

pub async fn run(args: PublishArgs) -> anyhow::Result<u8> {
    let mut worker = args.render_worker(None).await?;
    let published = worker.run().await?;
    report(&published);
    table::write_summary(&mut std::io::stdout().lock(), &published)?;
    Ok(exit_code(&published))
}

/// Logs every warning and failure, and one line per cluster that got a new version.
pub fn report(published: &Published) {
    for b in &published.broken {
        tracing::error!("cannot read {b}");
    }
    for r in &published.rows {
        for w in &r.warnings {
            tracing::warn!(cluster = %r.cluster, "{w}");
        }
        for f in &r.failures {
            tracing::error!(cluster = %r.cluster, part = f.part, "profile failed, its part keeps what it held: {}", f.message);
        }
        match &r.status {
            Status::Published | Status::Refreshed => {
                let digest = r.digest.as_ref().map(table::short).unwrap_or_default();
                tracing::info!(cluster = %r.cluster, version = r.version, digest, objects = r.objects, "published");
            }
            Status::Failed(why) => tracing::error!(cluster = %r.cluster, "{why}"),
            Status::Unchanged | Status::WouldPublish => {}
        }
    }
}

/// 0 when nothing failed, 1 when every cluster did, 2 when something else did: a cluster,
/// a profile of one, or an object of the source.
pub fn exit_code(published: &Published) -> u8 {
    let rows = &published.rows;
    let failed = rows.iter().filter(|r| matches!(r.status, Status::Failed(_))).count();
    match failed {
        n if n > 0 && n == rows.len() => exit::ERROR,
        _ if published.any_failed() => exit::PARTIAL,
        _ => exit::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::publish::Row;
    use crate::render::Failure;
    use crate::sources::{Broken, Touches};

    fn row(status: Status) -> Row {
        Row { cluster: "fleet/a".parse().unwrap(), version: None, digest: None, objects: None, status, warnings: vec![], failures: vec![] }
    }

    fn code(rows: Vec<Row>, broken: Vec<Broken>) -> u8 {
        exit_code(&Published { rows, broken, ..Default::default() })
    }

    #[test]
    fn exit_codes_tell_partial_from_total_failure() {
        let failed = || row(Status::Failed("x".into()));
        assert_eq!(code(vec![row(Status::Published), row(Status::Unchanged)], vec![]), exit::OK);
        assert_eq!(code(vec![row(Status::Published), failed()], vec![]), exit::PARTIAL);
        assert_eq!(code(vec![failed(), failed()], vec![]), exit::ERROR);
        assert_eq!(code(vec![], vec![]), exit::OK);
        let mut partial = row(Status::Published);
        partial.failures.push(Failure { part: "ClusterProfile.web".into(), message: "x".into() });
        assert_eq!(code(vec![partial], vec![]), exit::PARTIAL, "a failed profile is a partial failure");
        let broken = Broken { origin: "a.yaml document 1".into(), what: Touches::Unknown, message: "bad".into() };
        assert_eq!(code(vec![row(Status::Published)], vec![broken.clone()]), exit::PARTIAL);
        assert_eq!(code(vec![], vec![broken]), exit::PARTIAL, "an unreadable object with no cluster left is still reported");
    }
}
