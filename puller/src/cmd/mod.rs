//! The puller's commands, one module each: `sync` (one run, and the run every other
//! command builds on), `run` (the sync loop, with its metrics and health endpoints),
//! `plan` and `verify` (what a sync would do, what a store holds), and across the air gap
//! `import` and `export_reports`. Each checks its flags, calls the stages (`source`,
//! `engine`, `kept`) and returns what to print; `main` prints it and exits.

pub mod export_reports;
pub mod import;
pub mod plan;
pub mod run;
pub mod sync;
pub mod verify;

use airlock_cli::exit;
use tokio::sync::watch;

/// Turns true on the first SIGTERM or SIGINT; a second one exits at once.
pub fn stop_on_signals() -> watch::Receiver<bool> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tell, stop) = watch::channel(false);
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        tracing::warn!("cannot install signal handlers; SIGTERM stops the puller abruptly");
        return stop;
    };
    tokio::spawn(async move {
        for first in [true, false] {
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            if !first {
                std::process::exit(exit::ERROR.into());
            }
            tracing::info!("stopping: abandoning the run in progress, releasing the lease");
            let _ = tell.send(true);
        }
    });
    stop
}
