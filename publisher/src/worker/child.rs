//! The worker's side: `airlock-publisher render-worker --read P --write P [--network]`
//! confines itself (`sandbox::confine`) before its runtime starts a thread, then runs each
//! job the signer sends through the publish pipeline, with the signer's store, source,
//! keys and secrets behind the channel. It keeps what it fetched and remembered between
//! jobs, and exits when its stdin closes.

use std::sync::Arc;

use airlock_bundle::age::Recipient;
use airlock_bundle::{Limits, PublicKey};
use airlock_store::StoreRef;
use anyhow::Context;
use clap::Args;

use super::rpc::{Incoming, Peer};
use super::signer_proxy::{MacProxy, SignerProxy};
use super::source_proxy::SourceProxy;
use super::store_proxy::StoreProxy;
use super::wire::{Job, SecretName, max_frame};
use crate::publish::memo::Memo;
use crate::publish::{self, Publisher, Secrets, Signer};
use crate::sandbox::{self, Rules};
use crate::sources::Source;
use crate::sources::dir::DirSource;
use crate::sources::live::LiveSource;

/// The hidden command's flags: its sandbox.
#[derive(Debug, Args)]
pub struct RenderWorkerArgs {
    #[command(flatten)]
    rules: Rules,
    /// Run without Landlock: the kernel has none and the operator allowed it.
    #[arg(long)]
    unconfined: bool,
}

/// Confines this process as `args` say. Called before any other thread exists: Landlock
/// restricts the calling thread and those it starts after.
pub fn confine(args: &RenderWorkerArgs) -> anyhow::Result<()> {
    warn_of_inherited();
    if !args.unconfined {
        sandbox::confine(&args.rules.sandbox()).context("confining the render worker")?;
    }
    Ok(())
}

/// Warns of descriptors besides stdin, stdout and stderr left after the binary closed
/// every inherited one (a kernel without `close_range`): one inherited by the publisher
/// itself or opened by a library that does not set close-on-exec (a PKCS#11 module) stays
/// readable whatever Landlock says.
fn warn_of_inherited() {
    let Ok(listing) = std::fs::read_dir("/proc/self/fd") else { return };
    let listed: Vec<_> = listing.flatten().map(|e| e.path()).collect();
    for path in listed {
        let number = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse::<u32>().ok());
        // The listing's own descriptor is gone by now and reads as no link.
        if let (Some(3..), Ok(target)) = (number, std::fs::read_link(&path)) {
            tracing::warn!(descriptor = number, target = %target.display(), "the render worker inherited a descriptor of the publisher's");
        }
    }
}

/// Serves the signer's jobs until it closes the channel.
pub async fn serve(args: &RenderWorkerArgs) -> anyhow::Result<u8> {
    sandbox::install(args.unconfined)?;
    let (peer, mut jobs) = Peer::start("signer", std::io::stdin(), std::io::stdout(), max_frame(&Limits::SPEC));
    let mut publisher: Option<Publisher> = None;
    while let Some(Incoming { id, body }) = jobs.recv().await {
        let job: Job = serde_json::from_value(body).context("the signer sent a job that is not one")?;
        let publisher = match &mut publisher {
            Some(kept) => kept,
            None => publisher.insert(self::publisher(&peer, &job).await?),
        };
        // Which clusters are this replica's changes between runs; the rest is kept.
        publisher.shard = job.shard.clone();
        let published = run(&peer, &job, publisher).await;
        peer.reply(id, published.and_then(|p| Ok(serde_json::to_value(p)?)).map_err(|e| format!("{e:#}")));
    }
    Ok(airlock_cli::exit::OK)
}

async fn run(peer: &Arc<Peer>, job: &Job, publisher: &Publisher) -> anyhow::Result<publish::Published> {
    let helm = publisher.helm_renderer();
    let source = match &job.from_dir {
        Some(dir) => Source::Dir(DirSource::read(dir)?),
        None => Source::Live(LiveSource::through(Arc::new(SourceProxy::new(Arc::clone(peer))))),
    };
    publish::run(&source, publisher, helm).await
}

/// The publisher of `job`, its keys, secrets and store the signer's. Built once: what it
/// fetched and remembers lasts for the worker's life.
pub(super) async fn publisher(peer: &Arc<Peer>, job: &Job) -> anyhow::Result<Publisher> {
    let mut keys: Vec<Box<dyn airlock_bundle::Signer>> = Vec::new();
    for (key, pem) in job.keys.iter().enumerate() {
        let public = PublicKey::parse(pem).with_context(|| format!("the signer's key number {}", key + 1))?;
        keys.push(Box::new(SignerProxy { peer: Arc::clone(peer), key, public }));
    }
    let mac = |secret| Arc::new(MacProxy { peer: Arc::clone(peer), secret });
    let secrets = Secrets { entropy: mac(SecretName::Entropy), seal: mac(SecretName::Seal) };
    let age_recipients = job.age_recipients.iter().map(|r| r.parse::<Recipient>()).collect::<Result<_, _>>()?;
    Ok(Publisher {
        signer: Signer::with_secrets(keys, job.keyring_version, job.chain.clone(), job.expires_in, secrets),
        store: match &job.layout {
            Some(dir) => airlock_store::open(&StoreRef::OciLayout(dir.clone()), &Default::default())
                .await
                .with_context(|| format!("opening {}", job.store))?
                .into(),
            None => Arc::new(StoreProxy::new(Arc::clone(peer), job.store.clone())),
        },
        meta: job.meta.clone(),
        only: job.only.clone(),
        shard: job.shard.clone(),
        dry_run: job.dry_run,
        limits: Limits::SPEC,
        memo: job.memo.as_deref().map_or_else(Memo::disabled, Memo::open),
        renew_before: job.renew_before,
        remote: Default::default(),
        kubectl: job.kubectl.clone(),
        helm: job.helm.clone(),
        helm_cache: job.helm_cache.clone(),
        age_recipients,
        mirrors: job.mirrors.clone(),
    })
}
