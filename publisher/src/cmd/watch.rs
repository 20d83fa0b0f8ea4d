//! `airlock-publisher watch`: publish again whenever what the bundles are made of changes,
//! and bring the pullers' reports in as they arrive.
//!
//! Watches SveltosClusters, ClusterProfiles, Profiles, ConfigMaps and Secrets of the
//! management cluster (metadata only: a change of any kind bumps the resourceVersion),
//! coalesces a burst of changes into one run after a quiet period, and re-runs the whole
//! publish: it is idempotent, so clusters whose content did not change keep their
//! version. A periodic run refreshes bundles before they expire, and a run comes as soon as a
//! `remoteURL`'s interval passed, to fetch it again, or a built Flux source's, to look at
//! its branch or tag again. Beside it, every
//! `--reports-every`, one pass of `ingest::online` reads the reports the pullers sent to the
//! same store (a conditional read per cluster), over a cache of the SveltosClusters that a
//! watch keeps current. The Lease (`airlock_cli::lease`) keeps a second replica standing by;
//! with `--scale-out` the replicas share the clusters instead (`members`), each publishing
//! and reading the reports of its own. `--shard-key` serves the clusters of one Sveltos
//! shard key. With `--metrics-addr`, `/healthz` and `/metrics` say how the runs went (`health`).

mod health;
mod members;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_bundle::Limits;
use airlock_cli::exit;
use airlock_cli::lease;
use airlock_store::Store;
use anyhow::{Context, bail};
use clap::Args;
use futures::StreamExt;
use jiff::SignedDuration;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DynamicObject, PartialObjectMeta};
use kube::runtime::watcher::{self, Event, watcher};
use kube::runtime::{WatchStreamExt, reflector};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::ingest::log_pass;
use super::parse_duration;
use super::publish::{PublishArgs, report};
use crate::cmd::ingest::online;
use crate::cmd::ingest::target::Target;
use crate::shard::Shard;
use crate::shard::fence::Fence;
use crate::sources::live::sveltos_kinds;
use health::Health;
use members::{Seat, Seating};

const EXAMPLES: &str = "Example:
  airlock-publisher watch --kubeconfig ~/.kube/mgmt --to oci://registry.example/airlock \\
      --key /keys/airlock.key --lease-namespace projectsveltos

Run two replicas for availability: one publishes, the other stands by on the Lease.
With --scale-out every replica publishes its share of the clusters (docs/scale.md).";

/// Wait after a failed run before trying again, when nothing else triggers one.
const RETRY: Duration = Duration::from_secs(30);
/// Longest a burst of changes delays a publish.
const MAX_COALESCE: Duration = Duration::from_secs(30);
/// How often a standby looks whether the Lease became free.
const STANDBY_POLL: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct WatchArgs {
    #[command(flatten)]
    pub publish: PublishArgs,
    /// Namespace of the Lease `airlock-publisher` that elects the publishing replica (and
    /// of the members' Leases with --scale-out).
    #[arg(long, default_value = "default", value_name = "NAMESPACE")]
    pub lease_namespace: String,
    /// How long a Lease holds without renewal: a standby takes over, or the others take
    /// a member's clusters, this long after it died.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub lease_duration: SignedDuration,
    /// Publish only the SveltosClusters annotated sharding.projectsveltos.io/KEY with this
    /// key, as Sveltos's controllers started with --shard-key do. Without it: only those
    /// without the annotation.
    #[arg(long, value_name = "KEY")]
    pub shard_key: Option<String>,
    /// Every replica publishes: the clusters are split among the live replicas by a stable
    /// hash, each holding a Lease of its own, instead of one publishing while the others
    /// stand by.
    #[arg(long)]
    pub scale_out: bool,
    /// Quiet time that ends a burst of changes before publishing.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub debounce: SignedDuration,
    /// Publish at least this often, so unchanged bundles are re-signed before they expire.
    #[arg(long, default_value = "1h", value_name = "DURATION", value_parser = parse_duration)]
    pub resync: SignedDuration,
    /// Who holds the Lease (default: $POD_NAME, else host name and process id).
    #[arg(long, env = "POD_NAME", value_name = "NAME")]
    pub identity: Option<String>,
    /// How often to read the reports the pullers send to the store (bundles-format.md 14.7).
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub reports_every: SignedDuration,
    /// Read no reports from the store (they are carried as files, or another watch reads them).
    #[arg(long)]
    pub no_reports: bool,
    /// Serve /healthz and /metrics on this address (e.g. 0.0.0.0:9090); none by default.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
}

pub async fn run(args: WatchArgs) -> anyhow::Result<u8> {
    if args.publish.source.from_dir.is_some() {
        bail!("watch reads a live management cluster; use publish for --from-dir");
    }
    if args.scale_out
        && matches!(args.publish.to.parse(), Ok(airlock_store::StoreRef::OciLayout(_) | airlock_store::StoreRef::OciArchive(_)))
    {
        bail!(
            "--scale-out: --to {} is a store on this machine's disk; replicas sharing the fleet need one they all reach (oci:// or git+)",
            args.publish.to
        );
    }
    if args.lease_duration.as_secs() < 3 {
        bail!("--lease-duration {}: at least 3s, so a renewal every third of it has time to get through", args.lease_duration);
    }
    let client = args.publish.source.kube.client().await.context("connecting to the management cluster")?;
    let mut worker = args.publish.render_worker(Some(client.clone())).await?;
    let health = Arc::new(Mutex::new(Health::new()));
    let server = match args.metrics_addr {
        Some(addr) => {
            let listener = TcpListener::bind(addr).await.with_context(|| format!("--metrics-addr {addr}: cannot listen"))?;
            tracing::info!(addr = %listener.local_addr()?, "serving /metrics and /healthz");
            Some(tokio::spawn(airlock_cli::http::serve(listener, health::responder(health.clone(), args.resync.unsigned_abs()))))
        }
        None => None,
    };
    let record = |run: Result<&crate::publish::Published, ()>| {
        health.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).record(run, Timestamp::now());
    };
    let seating = Seating {
        namespace: args.lease_namespace.clone(),
        key: args.shard_key.clone().filter(|k| !k.is_empty()),
        identity: args.identity.clone().unwrap_or_else(lease::identity),
        duration: args.lease_duration.unsigned_abs(),
        scale_out: args.scale_out,
    };
    // Listening from the start: a SIGTERM while standing by or mid-publish is not lost.
    let stop = shutdown();
    tokio::pin!(stop);
    let changes = Arc::new(Notify::new());
    let seat = if seating.scale_out {
        Seat::Member(seating.join(&client, changes.clone()).await?)
    } else {
        let lease = seating.leader_lease();
        tokio::select! {
            held = lease.wait(&client, STANDBY_POLL) => Seat::Leader(Box::new(held?)),
            _ = &mut stop => return Ok(exit::OK),
        }
    };
    if let Some(fence) = seat.fence() {
        worker.fence(fence);
    }
    let whole_key = Shard { key: seating.key.clone(), me: seating.identity.clone(), views: Vec::new() };
    let mut lost = seat.lost();
    health.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).lead(true);
    let mut watchers = spawn_watchers(&client, &changes);
    if !args.no_reports {
        let store = args.publish.store.open(&args.publish.to).await?;
        let mine = Mine { fence: seat.fence(), whole_key: whole_key.clone() };
        watchers.push(tokio::spawn(read_reports(store, client.clone(), args.reports_every.unsigned_abs(), mine)));
    }
    let (debounce, resync) = (args.debounce.unsigned_abs(), args.resync.unsigned_abs());
    let mut next_run = Instant::now() + resync;
    let lost_lease = || anyhow::anyhow!("lost the lease; stopping so another replica publishes");
    let outcome = loop {
        tokio::select! {
            _ = changes.notified() => coalesce(&changes, debounce).await,
            _ = tokio::time::sleep_until(next_run) => {}
            _ = lost.changed() => break Err(lost_lease()),
            _ = &mut stop => break Ok(exit::OK),
        }
        if *lost.borrow() {
            break Err(lost_lease());
        }
        next_run = Instant::now() + resync;
        let shard = match seat.fence() {
            Some(fence) => fence.current().await,
            None => whole_key.clone(),
        };
        if shard.owns_nothing() {
            tracing::info!("no clusters are this replica's yet: the publishers have not agreed on who publishes what");
            continue;
        }
        worker.shard(Some(shard));
        match worker.run().await {
            Ok(published) => {
                report(&published);
                record(Ok(&published));
                // A remoteURL is fetched again once its interval passed, changed or not.
                if let Some(due) = published.remote_due {
                    next_run = next_run.min(Instant::now() + due);
                }
                // A Flux source's branch or tag may move without any object changing.
                if let Some(every) = published.source_interval {
                    next_run = next_run.min(Instant::now() + every);
                }
            }
            Err(e) => {
                record(Err(()));
                tracing::error!("publish failed: {e:#}; retrying in {}s", RETRY.as_secs());
                next_run = Instant::now() + RETRY.min(resync);
            }
        }
    };
    for w in watchers.into_iter().chain(server) {
        w.abort();
    }
    seat.release().await;
    outcome
}

/// Which clusters' reports this replica reads: those of its key, and with --scale-out
/// those its fence admits now.
struct Mine {
    fence: Option<Arc<Fence>>,
    whole_key: Shard,
}

impl Mine {
    async fn filter(&self, clusters: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
        let shard = match &self.fence {
            Some(fence) => fence.current().await,
            None => self.whole_key.clone(),
        };
        clusters
            .into_iter()
            .filter(|c| {
                let meta = &c["metadata"];
                let id = format!("{}/{}", meta["namespace"].as_str().unwrap_or_default(), meta["name"].as_str().unwrap_or_default());
                shard.in_key(meta["annotations"][crate::shard::SHARD_ANNOTATION].as_str()) && shard.owns(&id)
            })
            .collect()
    }
}

/// Reads the pullers' reports from `store` every `every`, over a cache of the
/// SveltosClusters that a watch keeps current (one pass: a conditional read per cluster).
async fn read_reports(store: Box<dyn Store>, client: kube::Client, every: Duration, mine: Mine) {
    let Some(reports) = store.reports() else {
        return tracing::warn!(store = %store.describe(), "this kind of store keeps no reports: none are read");
    };
    let [(resource, _), ..] = sveltos_kinds();
    let writer = reflector::store::Writer::new(resource.clone());
    let cache = writer.as_reader();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let feed =
        tokio::spawn(watch(reflector(writer, watcher(api, watcher::Config::default())), "SveltosCluster".into(), Arc::new(Notify::new())));
    if cache.wait_until_ready().await.is_err() {
        return;
    }
    let (target, mut marks) = (Target::Live(client), online::Marks::default());
    loop {
        let clusters: Vec<serde_json::Value> = cache.state().iter().filter_map(|o| serde_json::to_value(&**o).ok()).collect();
        let clusters = mine.filter(clusters).await;
        let pass = online::pass(reports, &clusters, &mut marks, &target, Timestamp::now(), &Limits::SPEC).await;
        log_pass(&pass);
        if let Target::Live(client) = &target {
            super::ingest::log_staging(client, &clusters).await;
        }
        tokio::time::sleep(every).await;
        if feed.is_finished() {
            break tracing::error!("the SveltosCluster watch ended; reports are no longer read");
        }
    }
}

/// Waits until no change arrived for `quiet`, or [`MAX_COALESCE`] passed: a controller
/// that rewrites a ConfigMap every second must not hold publishing off forever.
async fn coalesce(changes: &Notify, quiet: Duration) {
    let deadline = Instant::now() + MAX_COALESCE;
    while Instant::now() < deadline && tokio::time::timeout(quiet, changes.notified()).await.is_ok() {}
}

/// One watcher per input kind; each change (and each completed initial list) notifies.
fn spawn_watchers(client: &kube::Client, changes: &Arc<Notify>) -> Vec<tokio::task::JoinHandle<()>> {
    // Metadata-only watches: the publish re-reads what it needs, a change is all we need to know.
    let config = watcher::Config::default;
    let mut tasks = Vec::new();
    for (ar, _) in sveltos_kinds() {
        let api: Api<PartialObjectMeta<DynamicObject>> = Api::all_with(client.clone(), &ar);
        tasks.push(tokio::spawn(watch(watcher(api, config()), ar.kind, changes.clone())));
    }
    let config_maps: Api<PartialObjectMeta<ConfigMap>> = Api::all(client.clone());
    tasks.push(tokio::spawn(watch(watcher(config_maps, config()), "ConfigMap".into(), changes.clone())));
    let secrets: Api<PartialObjectMeta<Secret>> = Api::all(client.clone());
    tasks.push(tokio::spawn(watch(watcher(secrets, config()), "Secret".into(), changes.clone())));
    tasks
}

async fn watch<S, K>(stream: S, kind: String, changes: Arc<Notify>)
where
    S: futures::Stream<Item = Result<Event<K>, watcher::Error>> + Send,
{
    let mut stream = std::pin::pin!(stream.default_backoff());
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Apply(_) | Event::Delete(_) | Event::InitDone) => {
                tracing::debug!(kind, "change");
                changes.notify_one();
            }
            Ok(Event::Init | Event::InitApply(_)) => {}
            Err(e) => tracing::warn!(kind, error = %e, "watch failed; retrying"),
        }
    }
}

async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down");
}
