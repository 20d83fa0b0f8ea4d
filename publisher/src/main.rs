//! `airlock-publisher`: reads Sveltos profiles and publishes one signed bundle per pull-mode
//! cluster. This file only parses the command line, calls into the library (`lib.rs`) and
//! turns results into exit codes.
// Two audited calls need `unsafe`, both in the render worker before it confines itself:
// `close_inherited` and `forbid_new_privileges`.
#![deny(unsafe_code)]

use std::process::ExitCode;

use airlock_cli::{LogArgs, exit, install_crypto_provider};
use airlock_publisher::cmd::{self, deregister, register};
use airlock_publisher::{sandbox, worker};
use clap::{Parser, Subcommand};

use cmd::charts::ChartsCommand;
use cmd::export::ExportArgs;
use cmd::ingest::IngestArgs;
use cmd::keygen::KeygenArgs;
use cmd::keyring::KeyringCommand;
use cmd::publish::PublishArgs;
use cmd::status::StatusArgs;
use cmd::watch::WatchArgs;

/// A publish of thousands of clusters builds and drops millions of small values (parsed
/// YAML, statements), on which glibc's allocator spends far more than mimalloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EXAMPLES: &str = "Examples:
  airlock-publisher keygen --out-dir keys
  airlock-publisher publish --from-dir mgmt/ --to oci://registry.example/airlock \\
      --key keys/airlock.key
  airlock-publisher status --from-dir mgmt/ --from oci://registry.example/airlock
  airlock-publisher watch --to git+https://git.example/bundles.git --key keys/airlock.key
  airlock-publisher export --from oci://registry.example/airlock --to oci-archive:update.tar \\
      --keyring keys/keyring.json --since previous.tar
  airlock-publisher charts export --output charts.tar
  airlock-publisher ingest --from reports.json --kubeconfig ~/.kube/mgmt
  airlock-publisher deregister cluster fleet/edge-1 --final-bundle --to oci://registry.example/airlock \\
      --key keys/airlock.key

Run `airlock-publisher <command> --help` for each command's flags.";

/// Publishes signed per-cluster bundles from Sveltos profiles for airlock-puller.
#[derive(Debug, Parser)]
#[command(name = "airlock-publisher", version, after_help = EXAMPLES)]
struct Cli {
    #[command(flatten)]
    log: LogArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Render every pull-mode cluster's profiles, sign and publish the bundles that changed.
    Publish(Box<PublishArgs>),
    /// Keep publishing as clusters, profiles, ConfigMaps and Secrets change.
    Watch(Box<WatchArgs>),
    /// Show what the store holds for each cluster.
    Status(StatusArgs),
    /// Generate an ed25519 key pair and a keyring for pullers.
    Keygen(KeygenArgs),
    /// Manage keyrings.
    #[command(
        subcommand,
        after_help = "Example:\n  airlock-publisher keyring rotate --keyring keyring.json --add new.pub \\\n      --key old.key --out keyring-v2.json"
    )]
    Keyring(KeyringCommand),
    /// Register a cluster with the management side.
    Register(register::RegisterCommand),
    /// Remove a cluster from the management side, or publish its final bundle first.
    Deregister(deregister::DeregisterCommand),
    /// Write bundles from an OCI store into an OCI archive to carry across an air gap.
    Export(Box<ExportArgs>),
    /// Carry the chart cache across an air gap: `charts export`, `charts import`.
    #[command(subcommand)]
    Charts(ChartsCommand),
    /// Record the pullers' signed status reports on their SveltosClusters.
    Ingest(IngestArgs),
    /// Confine this process and execute a program: how helm and kubectl are started.
    #[command(name = sandbox::EXEC_COMMAND, hide = true)]
    SandboxExec(sandbox::SandboxExecArgs),
    /// Confine this process and render what the publisher hands it: how `publish` and
    /// `watch` keep profile content away from the keys.
    #[command(name = worker::COMMAND, hide = true)]
    RenderWorker(worker::RenderWorkerArgs),
}

fn main() -> ExitCode {
    install_crypto_provider();
    let cli = Cli::parse();
    cli.log.init();
    worker::log_like(&cli.log);
    // The worker confines itself before the runtime starts its threads: Landlock restricts
    // the thread that asks and those it starts after.
    if let Command::RenderWorker(args) = &cli.command {
        close_inherited();
        forbid_new_privileges();
        if let Err(e) = worker::confine(args) {
            return failed(e);
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("the async runtime starts");
    match runtime.block_on(run(cli.command)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => failed(e),
    }
}

/// Closes every descriptor above stderr in the render worker before it confines itself:
/// the publisher opens its files close-on-exec, but one it was started with (a shell's
/// `3<keyfile`) or one a PKCS#11 module opened would stay readable in the worker whatever
/// Landlock says. The worker talks over stdin and stdout only. On a kernel without
/// `close_range` (before 5.9) the worker warns of each one left (`worker::confine`).
#[allow(unsafe_code)]
fn close_inherited() {
    // SAFETY: called before any other thread exists and before this process opened
    // anything of its own: no descriptor above stderr is in use, so closing them all
    // invalidates nothing the program holds.
    unsafe {
        libc::close_range(3, libc::c_uint::MAX, 0);
    }
}

/// Sets `no_new_privs` in the render worker, so nothing it executes gains privileges
/// through setuid or file capabilities: Landlock sets it too, but a worker started with
/// `--allow-unconfined-tools` on a kernel without Landlock would go without.
#[allow(unsafe_code)]
fn forbid_new_privileges() {
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS) takes plain integers and touches no memory of
    // this process.
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    }
}

fn failed(e: anyhow::Error) -> ExitCode {
    tracing::error!("{e:#}");
    ExitCode::from(exit::ERROR)
}

async fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Publish(args) => cmd::publish::run(*args).await,
        Command::Watch(args) => cmd::watch::run(*args).await,
        Command::Status(args) => cmd::status::run(args).await,
        Command::Keygen(args) => cmd::keygen::run(args),
        Command::Keyring(command) => cmd::keyring::run(command),
        Command::Register(command) => register::run(command).await,
        Command::Deregister(command) => deregister::run(command).await,
        Command::Export(args) => cmd::export::run(*args).await,
        Command::Charts(command) => cmd::charts::run(command),
        Command::Ingest(args) => cmd::ingest::run(args).await,
        Command::SandboxExec(args) => Err(sandbox::enter(args).into()),
        Command::RenderWorker(args) => worker::serve_jobs(&args).await,
    }
}
