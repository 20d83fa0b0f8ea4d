//! The publish pipeline: profiles → selection → render → compare with the store → sign →
//! write, a chunk of clusters at a time, then one commit that names them all newest (the
//! layout's index, Git's commit).
//!
//! The store is the source of truth for versions (spec 9.6): each cluster's current
//! statement is read back before publishing, and only clusters whose signed content
//! would change get `version + 1`; the rest keep their version and nothing is written for
//! them. A bundle whose content is unchanged but which passed half its validity is signed
//! again (a refresh), so pullers of a quiet cluster never see it expire. One cluster's
//! failure leaves the others' bundles to be published.
//!
//! Rendering and signing run on every core, a cluster at a time, and the rows come out in
//! cluster order whatever the threads did. A cluster whose inputs are those of a cluster
//! the last run remembered (`memo`) is compared from that outline and rendered only when
//! it must be published. `compare` reads the store and decides each version.

mod compare;

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use airlock_bundle::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::sign::PartDigests;
use airlock_bundle::statement::Statement;
use airlock_bundle::{ClusterId, Digest, Limits};
use airlock_bundle::{Release, SignedBundle, SigningKey, sign};
use airlock_store::{PublishMeta, Store};
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use rayon::prelude::*;

use crate::memo::{Memo, Outline, Stored};
use crate::render::inputs::Fingerprints;
use crate::render::{self, ClusterPlan, RenderError, Rendered, Renderer};
use crate::sveltos::model::SveltosCluster;
use crate::sveltos::{Source, select};
use compare::{Decision, Held, decide, decide_remembered, read_held};

/// Store reads in flight at once: a registry answers many at a time.
const STORE_READS: usize = 16;

/// Who signs, and what every bundle declares about the keyring.
pub struct Signer {
    pub keys: Vec<SigningKey>,
    pub keyring_version: u64,
    /// Keyring updates (spec 7.3) carried beside every bundle.
    pub chain: Option<Vec<u8>>,
    pub expires_in: SignedDuration,
}

/// Everything a publish run needs besides the source.
pub struct Publisher {
    pub signer: Signer,
    pub store: Arc<dyn Store>,
    pub meta: PublishMeta,
    pub only: Vec<ClusterId>,
    pub dry_run: bool,
    pub limits: Limits,
    pub memo: Memo,
    /// Relayed store credentials expiring sooner than this get a warning.
    pub renew_before: SignedDuration,
}

/// What happened to one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub cluster: ClusterId,
    pub version: Option<u64>,
    pub digest: Option<Digest>,
    pub objects: Option<usize>,
    pub status: Status,
    pub warnings: Vec<String>,
}

/// A rendered cluster and the statement describing it (version not yet set).
struct Full {
    rendered: Rendered,
    statement: Statement,
}

/// A cluster ready to compare with the store.
struct Draft<'a> {
    plan: ClusterPlan<'a>,
    /// The fingerprint of its inputs.
    inputs: Digest,
    outline: Outline,
    /// `None` when the outline is the memo's.
    full: Option<Full>,
    /// The relayed credentials expire soon: judged each run, so never remembered.
    expiry: Option<String>,
}

/// The times every bundle of a run is signed with.
#[derive(Clone, Copy)]
struct Times {
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

/// Runs one publish over every selected cluster and returns the summary rows, in cluster
/// order. An error is returned only when nothing could be attempted (source unreadable,
/// bad `--cluster`) or the store write failed.
pub async fn run(source: &Source, publisher: &Publisher) -> anyhow::Result<Vec<Row>> {
    let (mut phases, mut since) = (Phases::default(), std::time::Instant::now());
    let inventory = source.load().await?;
    phases.add("load", &mut since);
    let clusters = select::candidates(&inventory.clusters, &publisher.only)?;
    let plans: Vec<_> = clusters.par_iter().map(|c| (*c, render::plan(c, select::profiles_for(c, &inventory.profiles)))).collect();
    // Every cluster names its profiles' references again: told apart by hash rather than
    // by sorting them all, which weighs on an unchanged re-publish of a large fleet.
    let wanted: HashSet<_> = plans.iter().filter_map(|(_, p)| p.as_ref().ok()).flat_map(ClusterPlan::references).collect();
    let wanted: BTreeSet<_> = wanted.into_iter().cloned().collect();
    let resources = source.fetch(&wanted).await?;
    phases.add("plan and fetch", &mut since);
    let now = Timestamp::from_second(Timestamp::now().as_second()).expect("now is a valid time");
    let times = match now.checked_add(publisher.signer.expires_in) {
        Ok(expires) => Times { now, expires },
        Err(e) => return Ok(clusters.iter().map(|c| failed(c.id.clone(), format!("--expires-in: {e}"), Vec::new())).collect()),
    };
    let renderer = Renderer::new(&resources, &publisher.limits);
    let fingerprints = Fingerprints::new(&resources, &inventory.profiles, &publisher.limits);
    let parts = PartDigests::default();
    let mut batch = (!publisher.dry_run).then(|| publisher.store.batch(&publisher.meta));
    let mut rows = Vec::with_capacity(plans.len());
    let mut plans = plans.into_iter();
    loop {
        let chunk: Vec<_> = plans.by_ref().take(CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        let drafts: Vec<(&SveltosCluster, Result<Draft, RenderError>)> = chunk
            .into_par_iter()
            .map(|(cluster, plan)| (cluster, plan.and_then(|plan| draft(publisher, &renderer, &fingerprints, plan, times, &parts))))
            .collect();
        phases.add("render", &mut since);
        let reads = read_stored(publisher, &drafts).await;
        phases.add("read the store", &mut since);
        let settled: Vec<(Row, Option<(SignedBundle, Digest)>)> = drafts
            .into_par_iter()
            .zip(reads)
            .map(|((cluster, draft), read)| match (draft, read) {
                (Ok(mut draft), Some(read)) => {
                    let expiry = draft.expiry.take();
                    let (mut row, signed) = settle(publisher, &renderer, draft, read, times, &parts);
                    row.warnings.extend(expiry);
                    (row, signed)
                }
                (Err(e), _) => (failed(cluster.id.clone(), e.to_string(), Vec::new()), None),
                (Ok(_), None) => unreachable!("every drafted cluster was read"),
            })
            .collect();
        let (chunk_rows, changed): (Vec<Row>, Vec<_>) = settled.into_iter().unzip();
        rows.extend(chunk_rows);
        phases.add("compare and sign", &mut since);
        let (changed, inputs): (Vec<SignedBundle>, Vec<Digest>) = changed.into_iter().flatten().unzip();
        if let (Some(batch), false) = (&mut batch, changed.is_empty()) {
            for (inputs, manifest) in inputs.iter().zip(batch.add(changed).await?) {
                if let Some(manifest) = manifest {
                    publisher.memo.named(inputs, manifest);
                }
            }
            phases.add("write", &mut since);
        }
    }
    if let Some(batch) = batch {
        batch.commit().await?;
        phases.add("write", &mut since);
        publisher.memo.save();
        phases.add("save the memo", &mut since);
    }
    phases.log();
    Ok(rows)
}

/// What the store holds for each drafted cluster (`None` for a cluster that failed to
/// render). Tasks of their own, so reading and hashing envelopes runs on every core too.
async fn read_stored(
    publisher: &Publisher,
    drafts: &[(&SveltosCluster, Result<Draft<'_>, RenderError>)],
) -> Vec<Option<Result<Held, String>>> {
    futures::stream::iter(drafts.iter().map(|(cluster, draft)| {
        let (store, id, limits) = (publisher.store.clone(), cluster.id.clone(), publisher.limits);
        let remembered = draft.as_ref().ok().map(|d| d.outline.stored.clone());
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

fn failed(cluster: ClusterId, message: String, warnings: Vec<String>) -> Row {
    Row { cluster, version: None, digest: None, objects: None, status: Status::Failed(message), warnings }
}

/// Renders a planned cluster unless the memo knows what it renders to.
fn draft<'a>(
    p: &Publisher,
    renderer: &Renderer<'_>,
    fingerprints: &Fingerprints,
    plan: ClusterPlan<'a>,
    times: Times,
    parts: &PartDigests,
) -> Result<Draft<'a>, RenderError> {
    let expiry = renderer.credentials_expiry(&plan, times.now, p.renew_before)?;
    let inputs = fingerprints.of(&plan);
    if let Some(outline) = p.memo.recall(&inputs) {
        return Ok(Draft { plan, inputs, outline, full: None, expiry });
    }
    let full = full(p, renderer, &plan, times, parts)?;
    let outline = Outline::of(&full.statement, full.rendered.objects, full.rendered.warnings.clone());
    Ok(Draft { plan, inputs, outline, full: Some(full), expiry })
}

fn full(p: &Publisher, renderer: &Renderer<'_>, plan: &ClusterPlan<'_>, times: Times, parts: &PartDigests) -> Result<Full, RenderError> {
    let rendered = renderer.render(plan)?;
    let release = Release {
        cluster: rendered.cluster.clone(),
        version: 0,
        issued_at: times.now,
        expires: times.expires,
        keyring_version: p.signer.keyring_version,
        watch_namespaces: rendered.watch_namespaces.clone(),
        active_window: None,
    };
    let statement = sign::statement(&rendered.bundle, &release, &|part| rendered.settings.get(part).cloned().unwrap_or_default(), parts);
    Ok(Full { rendered, statement })
}

/// Compares one drafted cluster with what the store holds, and signs it when it changed.
fn settle(
    p: &Publisher,
    renderer: &Renderer<'_>,
    mut draft: Draft<'_>,
    held: Result<Held, String>,
    times: Times,
    parts: &PartDigests,
) -> (Row, Option<(SignedBundle, Digest)>) {
    let id = draft.plan.cluster.id.clone();
    let held = match held {
        Ok(held) => held,
        Err(message) => return (failed(id, message, draft.outline.warnings), None),
    };
    let signer = &p.signer;
    let chain = signer.chain.as_deref();
    let remembered = draft.outline.stored.take();
    let decide = |outline: &Outline| match (&held, &remembered) {
        (Held::Nothing, _) => decide(None, outline, signer.keyring_version, chain, times.now, signer.expires_in),
        (Held::Bundle { statement, chain: held_chain, .. }, _) => {
            decide(Some((&**statement, held_chain.as_deref())), outline, signer.keyring_version, chain, times.now, signer.expires_in)
        }
        (Held::Remembered { .. }, Some(stored)) => {
            decide_remembered(stored, signer.keyring_version, chain.map(Digest::of), times.now, signer.expires_in)
        }
        (Held::Remembered { .. }, None) => unreachable!("only a remembered bundle is recognised"),
    };
    let mut decision = decide(&draft.outline);
    if let (Decision::Publish { .. }, None, false) = (decision, &draft.full, p.dry_run) {
        // The memo told what the cluster renders to; signing needs the bundle itself.
        match full(p, renderer, &draft.plan, times, parts) {
            Ok(full) => {
                draft.outline = Outline::of(&full.statement, full.rendered.objects, full.rendered.warnings.clone());
                draft.full = Some(full);
                decision = decide(&draft.outline);
            }
            Err(e) => return (failed(id, e.to_string(), draft.outline.warnings), None),
        }
    }
    let o = &draft.outline;
    let row = |version, status| Row {
        cluster: id.clone(),
        version: Some(version),
        digest: Some(o.bundle),
        objects: Some(o.objects),
        status,
        warnings: o.warnings.clone(),
    };
    let (out, stored) = match decision {
        Decision::Unchanged { version } => {
            let stored = match held {
                Held::Bundle { statement, chain, envelope } => Some(stored_of(&statement, chain.as_deref(), envelope)),
                Held::Remembered { manifest } => remembered.map(|stored| Stored { manifest: manifest.or(stored.manifest), ..stored }),
                Held::Nothing => unreachable!("nothing stored is never unchanged"),
            };
            ((row(version, Status::Unchanged), None), stored)
        }
        Decision::Publish { version, .. } if p.dry_run => ((row(version, Status::WouldPublish), None), None),
        Decision::Publish { version, refresh } => {
            let status = if refresh { Status::Refreshed } else { Status::Published };
            let Full { rendered, mut statement } = draft.full.take().expect("rendered above");
            statement.predicate.version = version;
            let envelope = envelope::sign(IN_TOTO_PAYLOAD_TYPE, &statement.to_json(), &signer.keys);
            let stored = stored_of(&statement, chain, Digest::of(&envelope));
            let signed = SignedBundle { bundle: rendered.bundle, statement, envelope, keyring_chain: signer.chain.clone() };
            ((row(version, status), Some((signed, draft.inputs))), Some(stored))
        }
    };
    draft.outline.stored = stored;
    p.memo.keep(draft.inputs, draft.outline);
    out
}

/// What the memo remembers of a bundle in the store whose content is the outline's.
fn stored_of(statement: &Statement, chain: Option<&[u8]>, envelope: Digest) -> Stored {
    let p = &statement.predicate;
    Stored {
        envelope,
        chain: chain.map(Digest::of),
        version: p.version,
        expires: p.expires,
        keyring_version: p.keyring_version,
        manifest: None,
    }
}
