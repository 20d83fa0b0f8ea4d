//! The confined side: `airlock-publisher sandbox-exec --read P --write P [--network] --
//! PROGRAM ARGS...` restricts itself with Landlock and executes PROGRAM. The rules:
//! reading and executing only PROGRAM and the `--read` paths, writing only beneath the
//! `--write` paths, no TCP bind or connect without `--network` (kernels with Landlock's
//! network rules, 6.7 and later), no signals to and no abstract sockets of processes
//! outside the sandbox (6.12 and later), and `no_new_privs`. Filesystem rules are
//! required; the later ones are taken where the kernel has them.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use clap::Args;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};

use super::Sandbox;

/// The newest Landlock ABI whose rights are asked for; older kernels enforce what they know.
const ABI_WANTED: ABI = ABI::V6;

/// A [`Sandbox`] as flags: how `sandbox-exec` and the render worker are told theirs.
#[derive(Debug, Args)]
pub struct Rules {
    /// Read and execute beneath PATH.
    #[arg(long, value_name = "PATH")]
    read: Vec<PathBuf>,
    /// Read and write beneath PATH.
    #[arg(long, value_name = "PATH")]
    write: Vec<PathBuf>,
    /// Allow TCP connections.
    #[arg(long)]
    network: bool,
}

impl Rules {
    pub fn sandbox(&self) -> Sandbox {
        Sandbox { read: self.read.clone(), write: self.write.clone(), network: self.network }
    }
}

/// The hidden command's flags.
#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    #[command(flatten)]
    rules: Rules,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    command: Vec<OsString>,
}

/// Why the confined program could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnterError {
    #[error("Landlock: {0}")]
    Landlock(String),
    #[error("Landlock is not enforced by this kernel")]
    NotEnforced,
    #[error("{program}: {message}")]
    Exec { program: String, message: String },
}

/// The `sandbox-exec` command line for `program` with `args` inside `sandbox`.
pub(super) fn arguments(program: &Path, args: &[String], sandbox: &Sandbox) -> Vec<OsString> {
    let mut out = vec![OsString::from(super::EXEC_COMMAND)];
    out.extend(flags(sandbox));
    out.push("--".into());
    out.push(program.into());
    out.extend(args.iter().map(OsString::from));
    out
}

/// The [`Rules`] flags that give `sandbox`.
pub(crate) fn flags(sandbox: &Sandbox) -> Vec<OsString> {
    let mut out = Vec::new();
    for (flag, paths) in [("--read", &sandbox.read), ("--write", &sandbox.write)] {
        for path in paths {
            out.push(flag.into());
            out.push(path.into());
        }
    }
    if sandbox.network {
        out.push("--network".into());
    }
    out
}

/// Whether this kernel enforces Landlock's filesystem rules: a ruleset can be created.
pub(super) fn probe() -> Result<(), String> {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Confines this process as `args` say and executes the program; returns only on failure.
pub fn enter(args: SandboxExecArgs) -> EnterError {
    let (program, rest) = args.command.split_first().expect("clap requires the program");
    let program = PathBuf::from(program);
    if let Err(e) = confine(&args.rules.sandbox().read(&program)) {
        return e;
    }
    let e = std::process::Command::new(&program).args(rest).exec();
    EnterError::Exec { program: program.display().to_string(), message: e.to_string() }
}

/// Restricts this thread, and everything it executes or starts after, to `sandbox`, and
/// sets `no_new_privs`. A process confines itself by calling it before starting threads.
pub fn confine(sandbox: &Sandbox) -> Result<(), EnterError> {
    let landlock = |e: landlock::RulesetError| EnterError::Landlock(e.to_string());
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(ABI_WANTED)).map_err(landlock)?;
    if !sandbox.network {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI_WANTED)).map_err(landlock)?;
    }
    let (read, write) = (&sandbox.read, &sandbox.write);
    let readable = read.iter().filter(|p| p.exists());
    let status = ruleset
        .scope(Scope::from_all(ABI_WANTED))
        .map_err(landlock)?
        .create()
        .map_err(landlock)?
        .add_rules(path_beneath_rules(readable, AccessFs::from_read(ABI_WANTED)))
        .map_err(landlock)?
        .add_rules(path_beneath_rules(write.iter().filter(|p| p.exists()), AccessFs::from_all(ABI_WANTED)))
        .map_err(landlock)?
        .restrict_self()
        .map_err(landlock)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(EnterError::NotEnforced);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn puts_the_program_after_its_rules() {
        let sandbox = Sandbox::new().read("/tree").write("/scratch");
        let args = arguments(Path::new("/bin/helm"), &["--post-renderer=x".into()], &sandbox);
        let text: Vec<_> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(text, ["sandbox-exec", "--read", "/tree", "--write", "/scratch", "--", "/bin/helm", "--post-renderer=x"]);
    }

    /// Landlock confines the thread that restricts itself (and what it executes), so a
    /// thread of the test process shows the rules without leaving the process confined.
    #[test]
    fn a_confined_thread_reaches_only_what_its_rules_name() {
        let (allowed, scratch, denied) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(allowed.path().join("chart.tgz"), "chart").unwrap();
        std::fs::write(denied.path().join("signing.key"), "key").unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (allowed, scratch, denied) = (allowed.path().to_path_buf(), scratch.path().to_path_buf(), denied.path().to_path_buf());
        std::thread::spawn(move || {
            confine(&Sandbox::new().read("/nonexistent/program").read(&allowed).write(&scratch)).expect("this kernel enforces Landlock");
            assert_eq!(std::fs::read_to_string(allowed.join("chart.tgz")).unwrap(), "chart");
            assert_eq!(std::fs::read(denied.join("signing.key")).unwrap_err().kind(), ErrorKind::PermissionDenied);
            assert_eq!(std::fs::read("/proc/self/environ").unwrap_err().kind(), ErrorKind::PermissionDenied);
            assert_eq!(std::fs::write(allowed.join("new"), "x").unwrap_err().kind(), ErrorKind::PermissionDenied);
            std::fs::write(scratch.join("values.yaml"), "a: 1").expect("the scratch directory is writable");
            assert_eq!(TcpStream::connect(("127.0.0.1", port)).unwrap_err().kind(), ErrorKind::PermissionDenied);
        })
        .join()
        .expect("the confined thread's checks pass");
        TcpStream::connect(("127.0.0.1", port)).expect("the rest of the process is not confined");
    }
}
