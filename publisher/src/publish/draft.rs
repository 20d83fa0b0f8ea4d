//! A cluster on its way through a chunk of the pipeline: rendered (or recalled from the
//! memo), read against the store, rendered after all when the memo's outline must be
//! published, completed from the store when its bundle depends on it. Entry points, in
//! order: [`draft`], [`after_read`], [`complete_all`], then `rollout::hold_back`; `settle`
//! takes it from there.

use std::collections::{BTreeMap, HashSet};

use airlock_bundle::ClusterSettings;
use airlock_bundle::sign;
use airlock_bundle::statement::{ProfileEntry, Statement};
use airlock_bundle::{Digest, Release};
use futures::StreamExt;

use super::compare::{Decision, Held, decide_held};
use super::{Run, STORE_READS, complete, withdraw};
use crate::publish::memo::{Outline, Stored};
use crate::render::{Assembly, ClusterPlan, PreparedCluster, RenderError, Rendered, hold};
use crate::sources::model::SveltosCluster;

/// A rendered cluster and the statement describing it (version not yet set), with what it
/// was rendered from, should it need completing after all.
pub struct Full {
    pub rendered: Rendered,
    pub statement: Statement,
    pub prepared: PreparedCluster,
}

pub enum Stage {
    /// The cluster failed as a whole.
    Failed(String),
    /// The memo's outline of a cluster with these inputs.
    Recalled(Outline),
    Full(Box<Full>),
    /// Rendered; its bundle needs what the store holds.
    Pending(PreparedCluster),
}

pub struct Draft<'a> {
    pub cluster: &'a SveltosCluster,
    pub plan: Option<ClusterPlan<'a>>,
    /// The fingerprint of its inputs.
    pub inputs: Digest,
    pub stage: Stage,
    /// The bundle the memo saw in the store with these inputs.
    pub remembered: Option<Stored>,
    /// What the store holds, once read.
    pub held: Option<Result<Held, String>>,
    /// The relayed credentials expire soon: judged each run, so never remembered.
    pub expiry: Option<String>,
}

impl Draft<'_> {
    pub fn cluster(&self) -> &airlock_bundle::ClusterId {
        &self.cluster.id
    }

    /// What `read_held` needs: `None` for a failed cluster, which is not read.
    pub fn remembered(&self) -> Option<Option<Stored>> {
        (!matches!(self.stage, Stage::Failed(_))).then(|| self.remembered.clone())
    }
}

/// Renders a planned cluster unless the memo knows what it renders to.
pub fn draft<'a>(run: &Run<'_>, cluster: &'a SveltosCluster, plan: Result<ClusterPlan<'a>, RenderError>) -> Draft<'a> {
    let mut d = Draft {
        cluster,
        plan: None,
        inputs: Digest::of(b""),
        stage: Stage::Failed(String::new()),
        remembered: None,
        held: None,
        expiry: None,
    };
    let plan = match plan {
        Ok(plan) => plan,
        Err(e) => {
            d.stage = Stage::Failed(e.to_string());
            return d;
        }
    };
    match run.renderer.credentials_expiry(&plan, run.times.now, run.publisher.renew_before) {
        Ok(expiry) => d.expiry = expiry,
        Err(e) => {
            d.stage = Stage::Failed(e.to_string());
            return d;
        }
    }
    d.inputs = run.fingerprints.of(&plan);
    d.stage = match run.publisher.memo.recall(&d.inputs) {
        Some(mut outline) => {
            d.remembered = outline.stored.take();
            Stage::Recalled(outline)
        }
        None => render(run, &plan),
    };
    d.plan = Some(plan);
    d
}

/// Renders and, when nothing of it depends on the store, assembles.
fn render(run: &Run<'_>, plan: &ClusterPlan<'_>) -> Stage {
    let prepared = match run.renderer.prepare(plan) {
        Ok(prepared) => prepared,
        Err(e) => return Stage::Failed(e.to_string()),
    };
    if prepared.needs_store() {
        return Stage::Pending(prepared);
    }
    match run.renderer.assemble(&prepared, &Default::default(), &Default::default(), false) {
        Ok(Assembly::Done(rendered)) => Stage::Full(Box::new(full(run, *rendered, prepared))),
        Ok(Assembly::Ties) => Stage::Pending(prepared),
        Err(e) => Stage::Failed(e.to_string()),
    }
}

/// The statement of a rendered cluster.
pub fn full(run: &Run<'_>, rendered: Rendered, prepared: PreparedCluster) -> Full {
    let p = run.publisher;
    let release = Release {
        cluster: rendered.cluster.clone(),
        version: 0,
        issued_at: run.times.now,
        expires: run.times.expires,
        keyring_version: p.signer.keyring_version,
        settings: ClusterSettings {
            watch_namespaces: rendered.watch_namespaces.clone(),
            active_window: rendered.active_window.clone(),
            recipients: rendered.recipients.clone(),
            allow_plaintext_secrets: rendered.allow_plaintext_secrets,
            allow_mass_prune: rendered.allow_mass_prune,
            cluster_scoped: rendered.cluster_scoped.clone(),
            evaluations: rendered.evaluations.clone(),
        },
        decommission: false,
    };
    let statement =
        sign::statement(&rendered.bundle, &release, &|part| rendered.settings.get(part).cloned().unwrap_or_default(), &run.parts);
    Full { rendered, statement, prepared }
}

/// Takes in what the store holds: a recalled cluster that must be published is rendered
/// now, and a rendered one whose bundle depends on the stored one (parts of profiles not
/// planned that cannot be read, are paused, or withdraw; releases that leave) is completed
/// from the store.
pub fn after_read<'a>(run: &Run<'_>, mut d: Draft<'a>, held: Option<Result<Held, String>>) -> Draft<'a> {
    d.held = held;
    let Some(Ok(held)) = &d.held else { return d };
    match &d.stage {
        Stage::Recalled(outline) if !run.publisher.dry_run => {
            let signer = &run.publisher.signer;
            let (keyring, chain) = (signer.keyring_version, signer.chain.as_deref());
            if let Decision::Publish { .. } =
                decide_held(held, outline, d.remembered.as_ref(), keyring, chain, run.times.now, signer.expires_in)
            {
                // The outline is the stored bundle's, unless the store holds another.
                let outlined = outline.profiles.clone();
                let plan = d.plan.as_ref().expect("a recalled cluster was planned");
                d.stage = render(run, plan);
                if let Stage::Full(full) = &d.stage {
                    let completes = match held {
                        Held::Bundle { statement, .. } => depends_on_store(run, full, statement),
                        // Same inputs as the stored bundle, yet a part differs: it holds
                        // what the store gave it.
                        _ => beyond_plan(run, full, &outlined) || differs(full, &outlined),
                    };
                    complete_if(completes, &mut d.stage);
                }
            }
        }
        Stage::Full(full) => {
            if let Held::Bundle { statement, .. } = held {
                let completes = depends_on_store(run, full, statement);
                complete_if(completes, &mut d.stage);
            }
        }
        _ => {}
    }
    d
}

/// Whether a rendered cluster's bundle depends on the stored one, `statement`: it has a
/// part of a profile not planned that is to be kept or withdrawn ([`beyond_plan`]), or a
/// part that changed lost files there (a release it dropped may leave delete hooks to
/// carry). Only the files of parts whose digest changed are compared.
fn depends_on_store(run: &Run<'_>, full: &Full, statement: &Statement) -> bool {
    let stored = &statement.predicate.profiles;
    let lost = |fresh: &ProfileEntry| {
        let changed = stored.iter().any(|e| e.name == fresh.name && e.digest != fresh.digest);
        changed
            && full.rendered.bundle.part(&fresh.name).is_some_and(|part| {
                let files: HashSet<&str> = part.files().map(|(path, _)| path).collect();
                withdraw::lost_files(statement, &fresh.name, |path| files.contains(path))
            })
    };
    beyond_plan(run, full, stored) || full.statement.predicate.profiles.iter().any(lost)
}

/// Whether the stored bundle (its entries `stored`) has a part of a profile not planned
/// that is to be kept (it cannot be read, or is paused) or withdrawn (its delete hooks may
/// have to be carried).
fn beyond_plan(run: &Run<'_>, full: &Full, stored: &[ProfileEntry]) -> bool {
    let planned = |name: &str| full.prepared.parts.iter().any(|p| &*p.name == name);
    stored.iter().any(|e| !planned(&e.name) && (run.unplanned.holds(&e.name) || hold::withdraws(e)))
}

/// Whether a part of the stored bundle (its entries `stored`) differs from this render's.
fn differs(full: &Full, stored: &[ProfileEntry]) -> bool {
    let fresh = &full.statement.predicate.profiles;
    stored.iter().any(|e| fresh.iter().any(|f| f.name == e.name && f.digest != e.digest))
}

/// Makes a rendered cluster pending, to be completed from the store, when it `completes`.
fn complete_if(completes: bool, stage: &mut Stage) {
    if completes {
        let Stage::Full(full) = std::mem::replace(stage, Stage::Failed(String::new())) else { unreachable!("a rendered cluster") };
        *stage = Stage::Pending(full.prepared);
    }
}

/// Completes every pending cluster from the store, a few at a time.
pub async fn complete_all<'a>(run: &Run<'_>, drafts: Vec<Draft<'a>>) -> Vec<Draft<'a>> {
    futures::stream::iter(drafts.into_iter().map(|mut d| async move {
        if !matches!(d.stage, Stage::Pending(_)) {
            return d;
        }
        let Stage::Pending(prepared) = std::mem::replace(&mut d.stage, Stage::Failed(String::new())) else { unreachable!() };
        complete_from_store(run, d, prepared, &BTreeMap::new()).await
    }))
    .buffered(STORE_READS)
    .collect()
    .await
}

/// Completes `prepared` from the store as `d`'s bundle, with the parts `held_back` names
/// (part → why) kept as the store has them.
pub async fn complete_from_store<'a>(
    run: &Run<'_>,
    mut d: Draft<'a>,
    prepared: PreparedCluster,
    held_back: &BTreeMap<String, String>,
) -> Draft<'a> {
    let plan = d.plan.as_ref().expect("a completed cluster was planned");
    let Some(keyring) = &run.keyring else {
        d.stage = Stage::Failed("the signing keys make no keyring to read the stored bundle back with".into());
        return d;
    };
    d.stage = match complete::complete(run, keyring, plan, prepared, held_back).await {
        Ok((rendered, prepared)) => Stage::Full(Box::new(full(run, rendered, prepared))),
        Err(e) => Stage::Failed(e.to_string()),
    };
    d
}
