//! The publish pipeline: profiles → selection → render → compare with the store → sign →
//! write, a chunk of clusters at a time, then one commit that names them all newest (the
//! layout's index, Git's commit).
//!
//! The store is the source of truth for versions (spec 9.6): each cluster's current
//! statement is read back before publishing, and only clusters whose signed content
//! would change get `version + 1`; the rest keep their version and nothing is written for
//! them. A bundle whose content is unchanged but which passed half its validity is signed
//! again (a refresh), so pullers of a quiet cluster never see it expire. One cluster's
//! failure leaves the others' bundles to be published, and one profile's failure leaves
//! the cluster's other profiles to be published, its own part kept as it was.
//!
//! The stages of a chunk (`draft`): render every cluster (or recall its outline from the
//! `memo`), read the store, render the recalled clusters that must be published after all,
//! complete those whose bundle depends on what the store holds (`complete`, `kept`), hold
//! back the parts whose `maxUpdate` window is full (`rollout`, which reads every windowed
//! cluster's stored bundle before the first chunk), and settle each (`settle`: decide the
//! version, sign). Rendering runs on every core; a chunk is signed on a thread of its own
//! while the next one renders, and `writer` writes its bundles on another while the one
//! after renders; the rows come out in cluster order whatever the threads did. `compare`
//! reads the store and decides each version.

#[cfg(test)]
mod chunk_tests;
mod compare;
mod complete;
mod draft;
mod kept;
pub mod memo;
mod rollout;
#[cfg(test)]
mod sealing_tests;
mod secrets;
mod settle;
#[cfg(test)]
mod testing;
mod withdraw;
mod writer;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use airlock_bundle::age::Recipient;
use airlock_bundle::mac::{Mac, Secret};
use airlock_bundle::sign::PartDigests;
use airlock_bundle::{ClusterId, Digest, Keyring, Limits, SignError, SignedBundle};
use airlock_store::{PublishMeta, Store};
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use rayon::prelude::*;

use crate::publish::memo::Memo;
use crate::render::helm::{LazyRenderer, RendererSettings};
use crate::render::hold::Unplanned;
use crate::render::inputs::Fingerprints;
use crate::render::kustomize;
use crate::render::{self, ClusterPlan, Entropy, Failure, RenderError, Renderer, Sealing};
use crate::source_mirrors::Mirrors;
use crate::sources::model::RemoteUrl;
use crate::sources::model::SveltosCluster;
use crate::sources::model::kustomization::{KustomizeKind, is_source_revision};
use crate::sources::remote::{self, Fetcher};
use crate::sources::{Broken, ObjectKey, Source, Touches, select};
use compare::{Held, read_held};
use draft::Draft;
use writer::Writer;

/// Store reads in flight at once: a registry answers many at a time.
const STORE_READS: usize = 16;

/// Who signs, and what every bundle declares about the keyring.
pub struct Signer {
    /// Each key in memory, in a token, or behind the render worker's signer; the first
    /// also keys the derived secrets.
    pub keys: Vec<Box<dyn airlock_bundle::Signer>>,
    pub keyring_version: u64,
    /// Keyring updates (spec 7.3) carried beside every bundle.
    pub chain: Option<Vec<u8>>,
    pub expires_in: SignedDuration,
    pub(crate) secrets: Secrets,
}

/// The two secrets derived from the first key, each held here or behind an oracle: the
/// one template random values come from (`render::Entropy`), and the one that keys every
/// random value of a seal (`airlock_bundle::seal`).
#[derive(Clone)]
pub(crate) struct Secrets {
    pub entropy: Arc<dyn Mac>,
    pub seal: Arc<dyn Mac>,
}

impl Signer {
    /// Derives the secrets from the first key once, so a token is asked before anything is
    /// rendered, and a token that cannot sign fails the run before it publishes anything.
    pub fn new(
        keys: Vec<Box<dyn airlock_bundle::Signer>>,
        keyring_version: u64,
        chain: Option<Vec<u8>>,
        expires_in: SignedDuration,
    ) -> Result<Signer, SignError> {
        let first = keys.first().expect("a publisher signs with at least one key");
        let (entropy, seal) = (secrets::derive(first, secrets::ENTROPY_LABEL)?, secrets::derive(first, secrets::SEAL_LABEL)?);
        let secrets = Secrets { entropy: Arc::new(Secret::new(&entropy)), seal: Arc::new(Secret::new(&seal)) };
        Ok(Signer::with_secrets(keys, keyring_version, chain, expires_in, secrets))
    }

    /// A signer whose secrets were derived elsewhere: the render worker's, whose keys and
    /// secrets stay with its signer process.
    pub(crate) fn with_secrets(
        keys: Vec<Box<dyn airlock_bundle::Signer>>,
        keyring_version: u64,
        chain: Option<Vec<u8>>,
        expires_in: SignedDuration,
        secrets: Secrets,
    ) -> Signer {
        Signer { keys, keyring_version, chain, expires_in, secrets }
    }

    /// The publisher's own keys as a keyring, to verify what it reads back to sign again.
    pub(crate) fn own_keyring(&self, limits: &Limits) -> Option<Keyring> {
        let mut keys: Vec<_> = self.keys.iter().map(|k| k.public()).collect();
        keys.sort_by_key(|k| k.key_id());
        keys.dedup_by_key(|k| k.key_id());
        Keyring::new(self.keyring_version, 1, keys, limits).ok()
    }
}

/// Everything a publish run needs besides the source.
pub struct Publisher {
    pub signer: Signer,
    pub store: Arc<dyn Store>,
    pub meta: PublishMeta,
    pub only: Vec<ClusterId>,
    /// The clusters of this replica when several share the fleet (`shard`); `None`: all.
    pub shard: Option<crate::shard::Shard>,
    pub dry_run: bool,
    pub limits: Limits,
    pub memo: Memo,
    /// Relayed store credentials expiring sooner than this get a warning.
    pub renew_before: SignedDuration,
    /// The `remoteURL`s fetched, kept between the runs of one process.
    pub remote: Fetcher,
    /// The kubectl that builds kustomizations; `None` for the one on `PATH`.
    pub kubectl: Option<std::path::PathBuf>,
    /// The helm that renders charts; `None` for the one on `PATH`.
    pub helm: Option<std::path::PathBuf>,
    /// Where chart archives and renders are kept across runs; `None` keeps them for one
    /// run.
    pub helm_cache: Option<std::path::PathBuf>,
    /// Recipients every sealed file is encrypted to after the cluster's own: keys held
    /// offline, to read a cluster's Secrets without the cluster.
    pub age_recipients: Vec<Recipient>,
    /// Where chart repositories, `remoteURL`s and Flux sources are fetched from instead of
    /// the URLs profiles name.
    pub mirrors: Mirrors,
}

impl Publisher {
    /// The helm of one run. With `--helm` given, helm is located and asked its version in
    /// the background at once, while the run reads its source: a run with charts would wait
    /// for it later, and a run without them does not wait for it at all.
    pub fn helm_renderer(&self) -> Arc<LazyRenderer> {
        let settings = RendererSettings { cache_dir: self.helm_cache.clone(), check_determinism: true, mirrors: self.mirrors.clone() };
        let helm = Arc::new(LazyRenderer::new(self.helm.clone(), settings));
        if self.helm.is_some() {
            let probing = Arc::clone(&helm);
            std::thread::spawn(move || probing.get().map(|_| ()));
        }
        helm
    }
}

/// What happened to one cluster.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Status {
    Published,
    /// Same content, signed again before it expires.
    Refreshed,
    Unchanged,
    /// `--dry-run`: would have been published.
    WouldPublish,
    Failed(String),
}

/// One line of the summary.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub cluster: ClusterId,
    pub version: Option<u64>,
    pub digest: Option<Digest>,
    pub objects: Option<usize>,
    pub status: Status,
    pub warnings: Vec<String>,
    /// Profiles that failed for this cluster; their parts keep what they held.
    pub failures: Vec<Failure>,
}

/// What a run did: a row per cluster, and what of the source it could not read.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Published {
    pub rows: Vec<Row>,
    pub broken: Vec<Broken>,
    /// The shortest `spec.interval` of the Flux sources the run built from: when a
    /// long-running publisher should look at their branches and tags again.
    pub source_interval: Option<std::time::Duration>,
    /// How long until the first `remoteURL` is due to be fetched again.
    pub remote_due: Option<std::time::Duration>,
}

impl Published {
    /// Whether anything failed: a cluster, a profile of one, an object of the source.
    pub fn any_failed(&self) -> bool {
        !self.broken.is_empty() || self.rows.iter().any(|r| matches!(r.status, Status::Failed(_)) || !r.failures.is_empty())
    }
}

/// The times every bundle of a run is signed with.
#[derive(Clone, Copy)]
pub(crate) struct Times {
    now: Timestamp,
    expires: Timestamp,
}

/// Clusters rendered, signed and handed to the store at a time: enough to keep every core
/// busy, few enough that a fleet is never held in memory whole: a large fleet's bundles
/// would take gigabytes, and memory the kernel must zero on first touch costs CPU.
const CHUNK: usize = 500;

/// Where a run spent its time, by phase, summed over the chunks.
#[derive(Default)]
struct Phases(Vec<(&'static str, std::time::Duration)>);

impl Phases {
    fn add(&mut self, name: &'static str, since: &mut std::time::Instant) {
        let now = std::time::Instant::now();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, total)) => *total += now - *since,
            None => self.0.push((name, now - *since)),
        }
        *since = now;
    }

    fn log(&self) {
        for (name, took) in &self.0 {
            tracing::debug!(ms = took.as_millis() as u64, "publish: {name} took");
        }
    }
}

/// What every cluster of a run shares.
pub(crate) struct Run<'a> {
    pub publisher: &'a Publisher,
    pub renderer: Renderer<'a>,
    pub fingerprints: Fingerprints,
    pub unplanned: Unplanned,
    pub parts: PartDigests,
    pub times: Times,
    pub keyring: Option<Keyring>,
}

/// Runs one publish over every selected cluster and returns the summary rows, in cluster
/// order, and what could not be read. An error is returned only when nothing could be
/// attempted (source unreadable, bad `--cluster`) or the store write failed.
/// `helm` is the run's [`Publisher::helm_renderer`].
pub async fn run(source: &Source, publisher: &Publisher, helm: Arc<LazyRenderer>) -> anyhow::Result<Published> {
    let (mut phases, mut since) = (Phases::default(), std::time::Instant::now());
    let inventory = source.load().await?;
    phases.add("load", &mut since);
    let broken_clusters: Vec<(ClusterId, String)> = inventory
        .broken
        .iter()
        .filter_map(|b| match &b.what {
            Touches::Cluster(id) if publisher.only.is_empty() || publisher.only.contains(id) => Some((id.clone(), b.to_string())),
            _ => None,
        })
        .collect();
    let only: Vec<ClusterId> = publisher.only.iter().filter(|id| !broken_clusters.iter().any(|(b, _)| b == *id)).cloned().collect();
    let mut clusters =
        if only.is_empty() && !publisher.only.is_empty() { Vec::new() } else { select::candidates(&inventory.clusters, &only)? };
    if let Some(shard) = &publisher.shard {
        clusters.retain(|c| shard.selects(c));
    }
    clusters.retain(|c| !select::decommissioning(c));
    let plans: Vec<_> = clusters.par_iter().map(|c| (*c, render::plan(c, select::profiles_for(c, &inventory), &inventory))).collect();
    // Every cluster names its profiles' references again: told apart by hash rather than
    // by sorting them all, which weighs on an unchanged re-publish of a large fleet.
    let wanted: HashSet<_> = plans.iter().filter_map(|(_, p)| p.as_ref().ok()).flat_map(ClusterPlan::references).collect();
    // One fetch per key; profiles naming it alike with other intervals get the shortest.
    let mut remotes: BTreeMap<ObjectKey, RemoteUrl> = BTreeMap::new();
    for (key, url) in plans.iter().filter_map(|(_, p)| p.as_ref().ok()).flat_map(ClusterPlan::remotes) {
        let kept = remotes.entry(key.clone()).or_insert_with(|| url.clone());
        kept.interval = kept.interval.min(url.interval);
    }
    let flux_sources = |kind| -> BTreeSet<ObjectKey> {
        plans.iter().filter_map(|(_, p)| p.as_ref().ok()).flat_map(|p| p.flux_sources(kind)).cloned().collect()
    };
    let (repositories, artifacts) = (flux_sources(KustomizeKind::GitRepository), flux_sources(KustomizeKind::OCIRepository));
    let wanted: BTreeSet<_> =
        wanted.into_iter().filter(|r| !remotes.contains_key(&r.key) && !is_source_revision(&r.key)).cloned().collect();
    let charts = crate::render::helm::charts::wanted(plans.iter().filter_map(|(_, p)| p.as_ref().ok()));
    let mut resources = source.fetch(&wanted).await?;
    publisher.remote.fetch_into(&remotes, &publisher.mirrors, &mut resources).await;
    let oci_interval = remote::fetch_oci_repositories(&artifacts, &publisher.mirrors, &mut resources).await;
    let chart_renderer = Arc::clone(&helm);
    let mirrors = publisher.mirrors.clone();
    let (resources, git_interval) = tokio::task::spawn_blocking(move || {
        let interval = kustomize::resolve_revisions(&repositories, &mirrors, &mut resources);
        crate::render::helm::charts::resolve_into(&charts, &mut resources, &chart_renderer);
        (resources, interval)
    })
    .await
    .expect("looking up Git revisions and charts panicked");
    let source_interval = [oci_interval, git_interval].into_iter().flatten().min();
    phases.add("plan and fetch", &mut since);
    let now = Timestamp::from_second(Timestamp::now().as_second()).expect("now is a valid time");
    let mut rows: Vec<Row> = broken_clusters.into_iter().map(|(id, why)| settle::failed(id, why, Vec::new())).collect();
    let times = match now.checked_add(publisher.signer.expires_in) {
        Ok(expires) => Times { now, expires },
        Err(e) => {
            rows.extend(clusters.iter().map(|c| settle::failed(c.id.clone(), format!("--expires-in: {e}"), Vec::new())));
            return Ok(Published { rows: sorted(rows), broken: inventory.broken, source_interval, remote_due: remote_due(publisher) });
        }
    };
    let unplanned = Unplanned::of(&inventory);
    let sealing = Sealing::new(Arc::clone(&publisher.signer.secrets.seal), publisher.age_recipients.clone());
    let run = Run {
        publisher,
        renderer: Renderer::new(&resources, &publisher.limits, Some(Entropy(Arc::clone(&publisher.signer.secrets.entropy))), now)
            .with_kubectl(publisher.kubectl.clone(), publisher.mirrors.clone())
            .with_helm(helm)
            .with_sealing(sealing),
        fingerprints: Fingerprints::new(&resources, &inventory.profiles, &unplanned, &publisher.limits)
            .with_recipients(&publisher.age_recipients),
        unplanned,
        parts: PartDigests::default(),
        times,
        keyring: publisher.signer.own_keyring(&publisher.limits),
    };
    let mut rollout = rollout::Rollout::read(&run, &plans).await;
    phases.add("read the rollouts", &mut since);
    let mut writer = (!publisher.dry_run).then(|| Writer::start(Arc::clone(&publisher.store), publisher.meta.clone()));
    let mut plans = plans.into_iter();
    // The chunk settled last, signed while the next one renders.
    let mut unsigned: Option<Vec<settle::Settled>> = None;
    loop {
        let chunk: Vec<_> = plans.by_ref().take(CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        let (drafts, signed) = std::thread::scope(|s| {
            let signing = unsigned.take().map(|settled| s.spawn(|| settle::sign_all(&run, settled)));
            let drafts = draft_spread(&run, chunk);
            (drafts, signing.map(|signing| signing.join().expect("signing a chunk panicked")))
        });
        phases.add("render, and sign the chunk before", &mut since);
        if let Some(signed) = signed {
            hand_over(signed, &mut rows, writer.as_mut()).await?;
            phases.add("wait for the writing", &mut since);
        }
        let reads = read_stored(publisher, &drafts).await;
        phases.add("read the store", &mut since);
        let drafts: Vec<Draft> = drafts.into_par_iter().zip(reads).map(|(d, read)| draft::after_read(&run, d, read)).collect();
        phases.add("render what must be published", &mut since);
        let drafts = draft::complete_all(&run, drafts).await;
        let drafts = rollout::hold_back(&run, drafts, &mut rollout).await;
        phases.add("complete from the store", &mut since);
        unsigned = Some(drafts.into_par_iter().map(|d| settle::settle(&run, d)).collect());
        phases.add("compare", &mut since);
    }
    if let Some(settled) = unsigned {
        hand_over(settle::sign_all(&run, settled), &mut rows, writer.as_mut()).await?;
        phases.add("sign the last chunk", &mut since);
    }
    if let Some(writer) = writer {
        for (inputs, manifest) in writer.finish().await? {
            publisher.memo.named(&inputs, manifest);
        }
        phases.add("wait for the writing", &mut since);
        publisher.memo.save();
        phases.add("save the memo", &mut since);
    }
    phases.log();
    Ok(Published { rows: sorted(rows), broken: inventory.broken, source_interval, remote_due: remote_due(publisher) })
}

/// Takes a signed chunk's rows, and hands its bundles to the writer, if any.
async fn hand_over(
    signed: Vec<(Row, Option<(SignedBundle, Digest)>)>,
    rows: &mut Vec<Row>,
    writer: Option<&mut Writer>,
) -> Result<(), airlock_store::StoreError> {
    let (chunk_rows, changed): (Vec<Row>, Vec<_>) = signed.into_iter().unzip();
    rows.extend(chunk_rows);
    match writer {
        Some(writer) => writer.write(changed.into_iter().flatten().collect()).await,
        None => Ok(()),
    }
}

fn remote_due(publisher: &Publisher) -> Option<std::time::Duration> {
    publisher.remote.next_due().map(|at| at.saturating_duration_since(std::time::Instant::now()))
}

/// The rows in cluster order.
/// Drafts a chunk on every core, in an order hashed from the cluster names, and returns the
/// drafts in the chunk's order. Rayon gives each thread a contiguous slice: clusters listed
/// in fleet order often share their renders with the clusters a slice further on (groups
/// labelled in turn), so two threads would ask for the same Helm render at the same moment
/// and one would idle until the other's helm finished, all the way through.
fn draft_spread<'a>(run: &Run<'_>, chunk: Vec<(&'a SveltosCluster, Result<ClusterPlan<'a>, RenderError>)>) -> Vec<Draft<'a>> {
    let mut chunk: Vec<_> = chunk.into_iter().enumerate().collect();
    chunk.sort_by_cached_key(|(_, (cluster, _))| Digest::of(cluster.id.to_string().as_bytes()));
    let mut drafts: Vec<(usize, Draft)> = chunk.into_par_iter().map(|(i, (cluster, plan))| (i, draft::draft(run, cluster, plan))).collect();
    drafts.sort_by_key(|(i, _)| *i);
    drafts.into_iter().map(|(_, d)| d).collect()
}

fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    rows
}

/// What the store holds for each drafted cluster (`None` for a cluster that failed to
/// render). Tasks of their own, so reading and hashing envelopes runs on every core too.
async fn read_stored(publisher: &Publisher, drafts: &[Draft<'_>]) -> Vec<Option<Result<Held, String>>> {
    futures::stream::iter(drafts.iter().map(|draft| {
        let (store, id, limits) = (publisher.store.clone(), draft.cluster().clone(), publisher.limits);
        let remembered = draft.remembered();
        tokio::spawn(async move {
            match remembered {
                Some(remembered) => Some(read_held(&*store, &id, &limits, remembered.as_ref()).await),
                None => None,
            }
        })
    }))
    .buffered(STORE_READS)
    .map(|task| task.expect("a store read panicked"))
    .collect()
    .await
}
