//! The render worker: everything that reads profile-supplied content (templates, Lua,
//! patches, charts, kustomizations, remote fetches) runs in a process of its own that
//! holds no key, no secret derived from one, no credentials of the store or of the
//! management cluster, and none of the publisher's environment, and that Landlock keeps
//! from every file but its scratch directory, its caches, the source directory and the
//! programs it runs.
//!
//! The publisher (the signer) starts it as this executable's hidden `render-worker`
//! command (`child`), with a cleared environment, and hands it each run as a [`Job`]
//! over its stdin and stdout (`rpc`). The worker runs the publish pipeline unchanged;
//! its store (`store_proxy`), its management cluster (`source_proxy`), its keys and the
//! two derived secrets (`signer_proxy`) are calls the signer answers (`serve`), signing
//! only what `guard` allows. `watch` keeps one worker across runs; a worker that died is
//! started again at the next run.

mod child;
mod guard;
mod rpc;
mod serve;
mod signer_proxy;
mod source_proxy;
mod store_proxy;
#[cfg(test)]
mod tests;
mod wire;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, bail};

pub use child::{RenderWorkerArgs, confine, serve as serve_jobs};
pub use guard::Guard;
pub use serve::Served;
pub use wire::Job;

use crate::process;
use crate::publish::Published;
use crate::sandbox::{self, Sandbox};
use rpc::{Peer, RpcError};

/// The name of the hidden command the worker runs as.
pub const COMMAND: &str = "render-worker";

/// The signer's environment the worker gets: where programs are, the CA roots and proxies
/// every HTTP client is told of, and how to log. Nothing else (cloud credentials,
/// `KUBECONFIG`, registry passwords) reaches it.
const PASSED_ENV: &[&str] = &[
    "PATH",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "RUST_BACKTRACE",
];

/// How long the worker's allocator (mimalloc, which reads this from its environment when
/// the process starts) keeps memory it freed before giving it back, in milliseconds. A
/// publish frees each chunk's memory and takes as much again for the next one a fraction
/// of a second later. With mimalloc's default of one second, it gave back every second
/// whatever was free at that moment, and the kernel zeroed those pages anew when the next
/// chunk touched them: a large share of a large publish's CPU. Freed memory still goes
/// back to the system, at the allocator's first call past the delay.
const ALLOCATOR_PURGE_DELAY: (&str, &str) = ("MIMALLOC_PURGE_DELAY", "10000");

/// What the dynamic loader and the libraries of the worker, `git` configuration and time
/// zones need, read only; missing ones are skipped.
const SYSTEM_FILES: &[&str] =
    &["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache", "/etc/gitconfig", "/etc/localtime", "/usr/share/zoneinfo"];

/// The log settings the worker is started with, as the signer's own.
static LOG: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();

/// Records this process's log filter and format, for the worker to log alike.
pub fn log_like(args: &airlock_cli::LogArgs) {
    let format = clap::ValueEnum::to_possible_value(&args.log_format).map(|v| v.get_name().to_string()).unwrap_or_default();
    let _ = LOG.set(vec![("AIRLOCK_LOG", args.log.clone()), ("AIRLOCK_LOG_FORMAT", format)]);
}

/// What a worker may reach besides its scratch directory. Known from the command line
/// alone, so the worker starts while the signer opens its keys and store.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// The source directory, read only.
    pub from_dir: Option<PathBuf>,
    /// An OCI layout the worker publishes to.
    pub layout: Option<PathBuf>,
    pub helm: Option<PathBuf>,
    pub kubectl: Option<PathBuf>,
    /// Read and written: the caches.
    pub caches: Option<PathBuf>,
}

/// A render worker and what it is started with, started at its first run and again after
/// it died.
pub struct RenderWorker {
    served: Arc<Served>,
    job: Job,
    reach: Reach,
    unconfined: bool,
    /// Started before the signer's setup, served from the first run.
    waiting: Option<Started>,
    running: Option<Running>,
}

/// A worker process, confined, waiting for its signer.
pub struct Started {
    child: Child,
    /// The worker's HOME and TMPDIR, removed with it.
    _scratch: tempfile::TempDir,
}

struct Running {
    peer: Arc<Peer>,
    serving: tokio::task::JoinHandle<String>,
    /// Killed when the worker is dropped.
    _process: Started,
}

impl RenderWorker {
    /// `waiting` is the worker [`Started::spawn`] started for `reach`.
    pub fn new(served: Served, job: Job, reach: Reach, unconfined: bool, waiting: Started) -> RenderWorker {
        RenderWorker { served: Arc::new(served), job, reach, unconfined, waiting: Some(waiting), running: None }
    }

    /// Signs and writes only what `fence` admits from now on; before the first run.
    pub fn fence(&mut self, fence: Arc<crate::shard::fence::Fence>) {
        Arc::get_mut(&mut self.served).expect("fenced before the first run serves").fence = Some(fence);
    }

    /// Publishes only `shard`'s clusters from the next run on; `None`: all.
    pub fn shard(&mut self, shard: Option<crate::shard::Shard>) {
        self.job.shard = shard;
    }

    /// One publish run in the worker. A worker that breaks the protocol is killed and the
    /// run fails; one that died is started again at the next run.
    pub async fn run(&mut self) -> anyhow::Result<Published> {
        if self.running.as_ref().is_none_or(|r| r.peer.closed().is_some() || r.serving.is_finished()) {
            self.running = None;
            let started = match self.waiting.take() {
                Some(started) => started,
                None => Started::spawn(&self.reach, self.unconfined)?,
            };
            self.running = Some(self.serve(started));
        }
        let running = self.running.as_mut().expect("started above");
        let answer = tokio::select! {
            answer = running.peer.call::<Published>("run", &self.job) => answer,
            why = &mut running.serving => Err(RpcError::Closed { peer: "render worker", reason: why.unwrap_or_else(|e| e.to_string()) }),
        };
        match answer {
            Ok(published) => Ok(published),
            Err(RpcError::Refused(why)) => bail!("{why}"),
            Err(e) => {
                self.running = None;
                Err(anyhow::Error::new(e).context("the render worker failed and was stopped"))
            }
        }
    }

    fn serve(&self, mut started: Started) -> Running {
        let (stdin, stdout) = (started.child.stdin.take().expect("piped"), started.child.stdout.take().expect("piped"));
        let (peer, calls) = Peer::start("render worker", stdout, stdin, wire::max_frame(&self.served.limits));
        let serving = tokio::spawn(Arc::clone(&self.served).serve(Arc::clone(&peer), calls));
        Running { peer, serving, _process: started }
    }
}

impl Started {
    /// Starts a worker that may reach `reach`, with a cleared environment and a scratch
    /// directory of its own.
    pub fn spawn(reach: &Reach, unconfined: bool) -> anyhow::Result<Started> {
        let scratch =
            tempfile::Builder::new().prefix("airlock-render-").tempdir().context("creating the render worker's scratch directory")?;
        if let Some(caches) = &reach.caches {
            std::fs::create_dir_all(caches).with_context(|| format!("creating {}", caches.display()))?;
        }
        let executable = std::env::current_exe().context("finding this executable to start the render worker")?;
        let mut command = Command::new(&executable);
        command.arg(COMMAND).args(sandbox::flags(&sandbox_of(reach, &executable, scratch.path())));
        if unconfined {
            command.arg("--unconfined");
        }
        command.env_clear();
        for name in PASSED_ENV {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.envs(LOG.get().into_iter().flatten().map(|(k, v)| (k, OsString::from(v))));
        command.env(ALLOCATOR_PURGE_DELAY.0, ALLOCATOR_PURGE_DELAY.1);
        command.env("HOME", scratch.path()).env("TMPDIR", scratch.path()).current_dir(scratch.path());
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let child = command.spawn().with_context(|| format!("starting the render worker {}", executable.display()))?;
        tracing::debug!(pid = child.id(), "render worker started");
        Ok(Started { child, _scratch: scratch })
    }
}

/// What a worker of `reach` may touch: this executable and the programs it runs, the
/// system's libraries, the source directory, its scratch directory, the caches and an OCI
/// layout it publishes to; TCP, since only what it renders tells whether a run fetches
/// (remote URLs, charts, Flux sources).
fn sandbox_of(reach: &Reach, executable: &Path, scratch: &Path) -> Sandbox {
    let mut sandbox = Sandbox::new().read(executable).network().write(scratch).write("/dev/null");
    for (name, flag) in [("helm", &reach.helm), ("kubectl", &reach.kubectl)] {
        if let Ok(program) = process::locate(name, flag.as_deref()) {
            sandbox = sandbox.read(std::fs::canonicalize(&program).unwrap_or(program));
        }
    }
    for path in SYSTEM_FILES {
        sandbox = sandbox.read(path);
    }
    if let Some(dir) = &reach.from_dir {
        sandbox = sandbox.read(dir);
    }
    if let Some(caches) = &reach.caches {
        sandbox = sandbox.write(caches);
    }
    if let Some(layout) = &reach.layout {
        sandbox = sandbox.write(layout);
    }
    sandbox
}

impl Drop for Running {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        // Closing its stdin ends a healthy worker; one that broke the protocol is killed.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
