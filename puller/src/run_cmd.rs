//! `airlock-puller run`: the sync loop of a long-running Deployment. It syncs, publishes
//! the report, folds it into the metrics, sleeps `--interval`, and again, serving
//! `/healthz` and `/metrics` meanwhile. SIGTERM or SIGINT abandons a run in progress
//! (which, like a crash, records nothing; the Lease is released) and exits 0.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::{SyncArgs, SyncSettings, parse_interval};
use crate::metrics::Metrics;
use crate::{publish, serve, sync};

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub sync: SyncArgs,
    /// Time between the end of one run and the start of the next (e.g. 90s, 5m, 1h).
    #[arg(long, default_value = "5m", value_parser = parse_interval)]
    pub interval: Duration,
    /// Address of the /metrics and /healthz endpoints.
    #[arg(long, default_value = "0.0.0.0:9090")]
    pub metrics_addr: SocketAddr,
}

/// Runs until asked to stop.
pub async fn run(settings: &SyncSettings, args: &RunArgs, stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    let client = settings.kube.client().await.context("cannot set up the Kubernetes client")?;
    let listener = TcpListener::bind(args.metrics_addr).await.with_context(|| format!("cannot listen on {}", args.metrics_addr))?;
    tracing::info!(addr = %listener.local_addr()?, interval = ?args.interval, "serving /metrics and /healthz");
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let server = tokio::spawn(serve::serve(listener, metrics.clone(), args.interval));
    let mut stop_wait = stop.clone();
    loop {
        let report = sync::sync(settings, &client, stop.clone()).await;
        // A report that could not be written was logged; the loop goes on regardless.
        let _ = publish::publish(&report, settings);
        metrics.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).record(&report);
        if *stop.borrow() {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(args.interval) => {}
            _ = stop_wait.wait_for(|v| *v) => break,
        }
    }
    server.abort();
    tracing::info!("stopped");
    Ok(())
}
