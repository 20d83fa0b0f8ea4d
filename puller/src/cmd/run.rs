//! `airlock-puller run`: the sync loop of a long-running Deployment. It syncs, writes the
//! report, folds it into the metrics (`metrics`), sleeps `--interval`, and again, serving
//! `/healthz` and `/metrics` meanwhile (`serve`). SIGTERM or SIGINT abandons a run in
//! progress (which, like a crash, records nothing; the Lease is released) and exits 0.

mod metrics;
mod serve;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_cli::KubeArgs;
use clap::Args;
use metrics::Metrics;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::sync;
use crate::config::SyncArgs;
use crate::reports::failure::Failure;
use crate::reports::writer as report_writer;
use airlock_cli::duration::parse_std_duration;

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub sync: SyncArgs,
    /// Time between the end of one run and the start of the next (e.g. 90s, 5m, 1h).
    #[arg(long, default_value = "5m", value_parser = parse_std_duration)]
    pub interval: Duration,
    /// Address of the /metrics and /healthz endpoints.
    #[arg(long, default_value = "0.0.0.0:9090")]
    pub metrics_addr: SocketAddr,
}

/// Checks the flags and runs until asked to stop.
pub async fn run(args: &RunArgs, kube: &KubeArgs, stop: watch::Receiver<bool>) -> Result<(), Failure> {
    let settings = &args.sync.check(kube)?;
    // With every cause of the error, as the log of a pod that will not start needs it.
    let failed = |e: anyhow::Error, what: String| Failure::Start(format!("{:#}", e.context(what)));
    let client = settings.kube.client().await.map_err(|e| failed(e.into(), "cannot set up the Kubernetes client".into()))?;
    let cannot_listen = |e: std::io::Error| failed(e.into(), format!("cannot listen on {}", args.metrics_addr));
    let listener = TcpListener::bind(args.metrics_addr).await.map_err(cannot_listen)?;
    tracing::info!(addr = %listener.local_addr().map_err(cannot_listen)?, interval = ?args.interval, "serving /metrics and /healthz");
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let server = tokio::spawn(serve::serve(listener, metrics.clone(), args.interval));
    let mut stop_wait = stop.clone();
    loop {
        let report = sync::sync(settings, &client, stop.clone()).await;
        // A report that could not be written was logged; the loop goes on regardless.
        let _ = report_writer::write(&report, settings);
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
