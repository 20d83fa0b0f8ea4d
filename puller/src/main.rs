//! `airlock-puller`: fetches this cluster's signed bundle, verifies it, applies it with
//! server-side apply, prunes, corrects drift and reports, as a CronJob (`sync`) or a
//! Deployment (`run`); `verify` and `plan` show what it would do; across an air gap,
//! `import` loads a carried archive and `export-reports` bundles the reports to carry back.
//!
//! Exit codes (`airlock_cli::exit`): 0 applied or nothing to do, 1 an error (retrying may
//! help), 3 refused by verification or policy (retrying the same bundle will not).
//! `main` parses the command line and calls into the library (`lib.rs`); it decides
//! nothing itself.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use airlock_bundle::Limits;
use airlock_cli::{KubeArgs, LogArgs, exit, install_crypto_provider};
use airlock_puller::config::{self, SyncArgs};
use airlock_puller::export_reports::{self, ExportReportsArgs};
use airlock_puller::failure::Failure;
use airlock_puller::import_cmd::{self, ImportArgs};
use airlock_puller::report::{Report, RunReport};
use airlock_puller::{plan, publish, run_cmd, sync, verify_cmd};
use clap::{Parser, Subcommand};
use tokio::sync::watch;

#[derive(Debug, Parser)]
#[command(name = "airlock-puller", version, about = "Fetch, verify and apply this cluster's signed Airlock bundle")]
struct Cli {
    #[command(flatten, next_help_heading = "Logging")]
    log: LogArgs,
    #[command(flatten, next_help_heading = "Kubernetes cluster")]
    kube: KubeArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sync once: verify the newest bundle, apply it, prune, correct drift, report.
    #[command(after_help = "Example:\n  airlock-puller sync --source oci://registry.example/airlock --cluster fleet/edge-1 \\\n    \
                            --keyring /etc/airlock/keyring.json --report-to /var/lib/airlock/reports\n  \
                            airlock-puller sync --config /etc/airlock/settings.json")]
    Sync(SyncArgs),
    /// Sync every --interval, serving /metrics and /healthz, until SIGTERM.
    #[command(after_help = "Example:\n  airlock-puller run --config /etc/airlock/settings.json --interval 5m \
                            --metrics-addr 0.0.0.0:9090")]
    Run(run_cmd::RunArgs),
    /// Show what a sync would create, update (with diffs), prune and refuse; writes nothing.
    #[command(after_help = "Example:\n  airlock-puller plan --source oci-layout:/srv/airlock --cluster fleet/edge-1 \\\n    \
                            --keyring keyring.json")]
    Plan(SyncArgs),
    /// Verify a store's bundle offline and print what it holds; touches no cluster.
    #[command(after_help = "Examples:\n  airlock-puller verify --source oci-archive:update.tar --keyring keyring.json\n  \
                            airlock-puller verify --source oci+http://127.0.0.1:5000/airlock --cluster fleet/edge-1 \\\n    \
                            --keyring keyring.json --floor 12")]
    Verify(verify_cmd::VerifyArgs),
    /// Load an archive carried across the air gap into this site's registry, layout or Git
    /// repository: verified first, never older over newer, safe to run twice.
    #[command(after_help = "Examples:\n  airlock-puller import --from oci-archive:/media/usb/update.tar \\\n    \
                            --to oci+http://registry.local:5000/airlock --keyring keyring.json\n  \
                            airlock-puller import --from oci-archive:delta.tar --to git+file:///srv/bundles.git \\\n    \
                            --keyring keyring.json\n\n\
                            A delta archive (export --since) imports only on top of the earlier ones; without\n\
                            them it fails naming the missing blobs, and writes nothing. Exit codes: 0 imported\n\
                            or already present, 1 an error, 3 a bundle refused by verification or older than\n\
                            the store's.")]
    Import(ImportArgs),
    /// Bundle the signed reports of --report-to into one file to carry back for
    /// `airlock-publisher ingest`.
    #[command(
        name = "export-reports",
        after_help = "Example:\n  airlock-puller export-reports --from /var/lib/airlock/reports --to /media/usb/reports.json\n\n\
                            The file is a JSON array of the report envelopes, each exactly as written\n\
                            (bundles-format.md 14.6). An unsigned or damaged report-*.json stops the export."
    )]
    ExportReports(ExportReportsArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    install_crypto_provider();
    let cli = Cli::parse();
    cli.log.init();
    ExitCode::from(dispatch(cli.command, &cli.kube).await)
}

async fn dispatch(command: Command, kube: &KubeArgs) -> u8 {
    match command {
        Command::Sync(args) => match args.check(kube) {
            Ok(settings) => sync_once(&settings).await,
            Err(e) => fail(&Failure::from(e)),
        },
        Command::Run(args) => {
            let settings = match args.sync.check(kube) {
                Ok(settings) => settings,
                Err(e) => return fail(&Failure::from(e)),
            };
            match run_cmd::run(&settings, &args, stop_on_signals()).await {
                Ok(()) => exit::OK,
                Err(e) => fail(&Failure::from(e)),
            }
        }
        Command::Plan(args) => {
            let planned = async {
                let settings = args.check(kube)?;
                let client = settings.kube.client().await.map_err(|e| Failure::Error(format!("Kubernetes client: {e}")))?;
                plan::plan(&settings, &client).await
            };
            match planned.await {
                Ok(text) => {
                    print!("{text}");
                    exit::OK
                }
                Err(f) => fail(&f),
            }
        }
        Command::Verify(args) => match verify_cmd::verify(&args).await {
            Ok((text, failure)) => {
                print!("{text}");
                failure.map_or(exit::OK, |f| fail(&f))
            }
            Err(f) => fail(&f),
        },
        Command::Import(args) => match import_cmd::import(&args).await {
            Ok(text) => {
                print!("{text}");
                exit::OK
            }
            Err(f) => fail(&f),
        },
        Command::ExportReports(args) => match export_reports::export(&args, &Limits::SPEC) {
            Ok(line) => {
                println!("{line}");
                exit::OK
            }
            Err(e) => fail(&Failure::Error(e.to_string())),
        },
    }
}

async fn sync_once(settings: &config::SyncSettings) -> u8 {
    let report = match settings.kube.client().await {
        Ok(client) => sync::sync(settings, &client, stop_on_signals()).await,
        Err(e) => {
            let mut report = Report::start(&settings.cluster);
            report.finish(Err(Failure::Error(format!("Kubernetes client: {e}"))));
            report
        }
    };
    let published = publish::publish(&report, settings);
    let code = publish::exit_code(&report);
    // A failure was logged (stderr) by publish; stdout carries only the success line.
    if report.error.is_none() {
        println!("{}", publish::summary(&report));
    }
    if code == exit::OK && published.is_err() { exit::ERROR } else { code }
}

fn fail(failure: &Failure) -> u8 {
    eprintln!("error: {}", failure.message());
    failure.exit_code()
}

/// Turns true on the first SIGTERM or SIGINT; a second one exits at once.
fn stop_on_signals() -> watch::Receiver<bool> {
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
