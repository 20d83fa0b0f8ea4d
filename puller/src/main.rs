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
use airlock_puller::cmd::{self, export_reports, import, plan, run, sync, verify};
use airlock_puller::config::SyncArgs;
use airlock_puller::reports::failure::Failure;
use clap::{Parser, Subcommand};

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
    Run(run::RunArgs),
    /// Show what a sync would create, update (with diffs), prune and refuse; writes nothing.
    #[command(after_help = "Example:\n  airlock-puller plan --source oci-layout:/srv/airlock --cluster fleet/edge-1 \\\n    \
                            --keyring keyring.json\n\n\
                            Exit codes: 0 a sync would apply it, 1 an error, 3 a sync would refuse it. A refusal\n\
                            for objects a sync would take over or a mass prune it would hold comes with the\n\
                            plan, in its heading.")]
    Plan(SyncArgs),
    /// Verify a store's bundle offline and print what it holds; touches no cluster.
    #[command(after_help = "Examples:\n  airlock-puller verify --source oci-archive:update.tar --keyring keyring.json\n  \
                            airlock-puller verify --source oci+http://127.0.0.1:5000/airlock --cluster fleet/edge-1 \\\n    \
                            --keyring keyring.json --floor 12")]
    Verify(verify::VerifyArgs),
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
    Import(import::ImportArgs),
    /// Bundle the signed reports of --report-to into one file to carry back for
    /// `airlock-publisher ingest`.
    #[command(
        name = "export-reports",
        after_help = "Example:\n  airlock-puller export-reports --from /var/lib/airlock/reports --to /media/usb/reports.json\n\n\
                            The file is a JSON array of the report envelopes, each exactly as written\n\
                            (bundles-format.md 14.6). An unsigned or damaged report-*.json stops the export."
    )]
    ExportReports(export_reports::ExportReportsArgs),
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
        Command::Sync(args) => match sync::once(&args, kube, cmd::stop_on_signals()).await {
            Ok(synced) => {
                // A failure was logged (stderr); stdout carries only the success line.
                if let Some(line) = synced.summary {
                    println!("{line}");
                }
                synced.code
            }
            Err(f) => fail(&f),
        },
        Command::Run(args) => finish(run::run(&args, kube, cmd::stop_on_signals()).await.map(|()| String::new())),
        Command::Plan(args) => finish_told(plan::plan(&args, kube).await),
        Command::Verify(args) => finish_told(verify::verify(&args).await),
        Command::Import(args) => finish(import::import(&args).await),
        Command::ExportReports(args) => {
            finish(export_reports::export(&args, &Limits::SPEC).map(|line| format!("{line}\n")).map_err(Failure::from))
        }
    }
}

/// Prints a command's output, or its failure, and returns the exit code.
fn finish(done: Result<String, Failure>) -> u8 {
    match done {
        Ok(text) => {
            print!("{text}");
            exit::OK
        }
        Err(f) => fail(&f),
    }
}

/// Prints a command's output, which tells of the failure that decides the exit code if
/// there is one, or its own failure, and returns the exit code.
fn finish_told(done: Result<(String, Option<Failure>), Failure>) -> u8 {
    match done {
        Ok((text, failure)) => {
            print!("{text}");
            failure.map_or(exit::OK, |f| fail(&f))
        }
        Err(f) => fail(&f),
    }
}

fn fail(failure: &Failure) -> u8 {
    eprintln!("error: {failure}");
    failure.exit_code()
}
