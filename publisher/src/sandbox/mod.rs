//! Confinement of the programs that read profile-supplied input: `helm` (charts, values)
//! and `kubectl kustomize` (kustomization trees). Whoever writes a profile, a chart or a
//! kustomization does not hold the signing key, so what these programs run must not be
//! able to read it, the publisher's credentials or any other file of the publisher's.
//!
//! A confined program is started through this binary's hidden `sandbox-exec` command
//! (`enter`): it restricts itself with Landlock to the files a [`Sandbox`] names (the
//! program itself, its scratch directory, the archive it renders) and, unless the
//! program must fetch, to no TCP at all; sets `no_new_privs`; and then executes the
//! program, which inherits the restrictions, as do its children. The environment is the
//! one `crate::process` already cleared. What the kernel must offer, and what happens
//! without it, is [`install`]'s.
//!
//! The library's own unit tests run the programs without a launcher: only the binary
//! installs one, before any command that renders.

mod enter;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub(crate) use enter::flags;
pub use enter::{EnterError, Rules, SandboxExecArgs, confine, enter};

/// The name of the hidden command that confines itself and executes a program.
pub const EXEC_COMMAND: &str = "sandbox-exec";

/// Files every networked program needs to resolve names and check certificates, read
/// only; missing ones are skipped.
const NETWORK_FILES: &[&str] =
    &["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/usr/share/ca-certificates"];

/// What one confined program may touch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    network: bool,
}

impl Sandbox {
    /// Nothing but the program itself.
    pub fn new() -> Sandbox {
        Sandbox::default()
    }

    /// Also read (and execute) `path`, a file or everything beneath a directory.
    pub fn read(mut self, path: impl Into<PathBuf>) -> Sandbox {
        self.read.push(path.into());
        self
    }

    /// Also read and write beneath `path`.
    pub fn write(mut self, path: impl Into<PathBuf>) -> Sandbox {
        self.write.push(path.into());
        self
    }

    /// Also open TCP connections, and read what name resolution and certificate checks
    /// need (with the CA files `SSL_CERT_FILE` and `SSL_CERT_DIR` name).
    pub fn network(mut self) -> Sandbox {
        self.network = true;
        self.read.extend(NETWORK_FILES.iter().map(PathBuf::from));
        for name in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
            if let Some(path) = std::env::var_os(name) {
                self.read.push(path.into());
            }
        }
        self
    }
}

/// How confined programs are started in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// Through `sandbox-exec` of this executable.
    Confined { executable: PathBuf },
    /// As they are: an operator's explicit choice on a kernel without Landlock.
    Unconfined,
}

/// Why confinement cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    #[error(
        "this kernel does not confine processes with Landlock ({reason}): helm and kubectl would run with the \
         publisher's files in reach; run on Linux 5.13 or later with Landlock enabled, or pass \
         --allow-unconfined-tools to accept that risk"
    )]
    Unsupported { reason: String },
    #[error("cannot find this executable to confine helm and kubectl with: {0}")]
    NoExecutable(String),
}

static LAUNCHER: OnceLock<Launcher> = OnceLock::new();

/// Sets how this process starts confined programs, once: confined through this
/// executable when the kernel has Landlock; without it, only with `allow_unconfined`
/// (a warning), else an error before anything renders.
pub fn install(allow_unconfined: bool) -> Result<&'static Launcher, SandboxError> {
    let launcher = match enter::probe() {
        Ok(()) => {
            let executable = std::env::current_exe().map_err(|e| SandboxError::NoExecutable(e.to_string()))?;
            Launcher::Confined { executable }
        }
        Err(reason) if allow_unconfined => {
            tracing::warn!(%reason, "Landlock is not available: helm and kubectl run unconfined (--allow-unconfined-tools)");
            Launcher::Unconfined
        }
        Err(reason) => return Err(SandboxError::Unsupported { reason }),
    };
    Ok(LAUNCHER.get_or_init(|| launcher))
}

/// The program and arguments that run `program` with `args` inside `sandbox`.
pub(crate) fn command_line(program: &Path, args: &[String], sandbox: &Sandbox) -> (PathBuf, Vec<OsString>) {
    match LAUNCHER.get() {
        Some(Launcher::Confined { executable }) => (executable.clone(), enter::arguments(program, args, sandbox)),
        Some(Launcher::Unconfined) | None => (program.to_path_buf(), args.iter().map(OsString::from).collect()),
    }
}
