//! Running a helper binary (helm, kubectl) as a child process with a budget: an empty
//! environment plus what the caller passes, confined to the files its [`Sandbox`] names
//! (`crate::sandbox`), stdin from a buffer, a time limit after which it is killed, and a
//! cap on what it may print. Entry point: [`run`].
//!
//! It does not know what the binaries are; their modules build the arguments and read the
//! output.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::sandbox::{self, Sandbox};

/// Bytes of stderr kept for an error message; the helpers' own errors are a line or two.
const STDERR_BYTES: u64 = 64 << 10;
/// Environment passed through to every helper: proxies and the system's CA roots, which an
/// operator sets for every HTTP client. Nothing else of the publisher's environment (cloud
/// credentials, `KUBECONFIG`, `HELM_*` settings) reaches a helper.
const PASSED_ENV: &[&str] =
    &["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "TMPDIR"];

/// One process to run.
pub struct Run<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    /// Set on top of an empty environment (and [`PASSED_ENV`]).
    pub env: Vec<(&'static str, OsString)>,
    pub stdin: Option<&'a [u8]>,
    pub timeout: Duration,
    /// Bytes of stdout accepted.
    pub output_limit: u64,
    /// What it may read, write and reach besides itself.
    pub sandbox: Sandbox,
}

/// How a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessError {
    /// It exited unsuccessfully; what it printed on stderr.
    Failed {
        stderr: String,
    },
    Timeout {
        seconds: u64,
    },
    TooLarge {
        limit_bytes: u64,
    },
    Spawn {
        message: String,
    },
}

impl ProcessError {
    pub fn message(&self) -> String {
        match self {
            ProcessError::Failed { stderr } => stderr.clone(),
            ProcessError::Timeout { seconds } => format!("ran longer than {seconds} s"),
            ProcessError::TooLarge { limit_bytes } => format!("printed more than {limit_bytes} bytes"),
            ProcessError::Spawn { message } => message.clone(),
        }
    }
}

/// `flag` (a `--helm PATH`-style value) when given, else the first `name` on `PATH`; or
/// where it looked.
pub fn locate(name: &str, flag: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = flag {
        return if path.is_file() { Ok(path.to_path_buf()) } else { Err(format!("{} does not exist", path.display())) };
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_var).map(|dir| dir.join(name)).find(|p| p.is_file()).ok_or_else(|| format!("no {name} on PATH"))
}

/// Runs `run`; its stdout on success.
pub fn run(run: &Run<'_>) -> Result<Vec<u8>, ProcessError> {
    let (program, args) = sandbox::command_line(run.program, run.args, &run.sandbox);
    let mut command = Command::new(program);
    command.args(args).env_clear();
    for name in PASSED_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(run.env.iter().map(|(k, v)| (k, v)));
    command.stdin(if run.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let program = run.program.display();
    let mut child = command.spawn().map_err(|e| ProcessError::Spawn { message: format!("{program}: {e}") })?;
    if let (Some(bytes), Some(mut stdin)) = (run.stdin, child.stdin.take()) {
        // A process that exits before reading its stdin says why on stderr.
        let _ = stdin.write_all(bytes);
    }
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let limit = run.output_limit;
    let out_reader = std::thread::spawn(move || read_capped(stdout, limit));
    let err_reader = std::thread::spawn(move || read_capped(stderr, STDERR_BYTES));
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() >= run.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(ProcessError::Timeout { seconds: run.timeout.as_secs() });
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => break Err(ProcessError::Spawn { message: format!("waiting for {program}: {e}") }),
        }
    };
    let (out, out_over) = out_reader.join().expect("the stdout reader does not panic");
    let (err, _) = err_reader.join().expect("the stderr reader does not panic");
    let status = status?;
    if out_over {
        return Err(ProcessError::TooLarge { limit_bytes: limit });
    }
    if !status.success() {
        let text = String::from_utf8_lossy(&err).trim().to_string();
        let stderr = if text.is_empty() { format!("{program} exited with {status}") } else { text };
        return Err(ProcessError::Failed { stderr });
    }
    Ok(out)
}

/// Up to `limit` bytes of `from`, and whether there was more. Reading goes on to the end
/// so the process never blocks on a full pipe.
fn read_capped(mut from: impl Read, limit: u64) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut over = false;
    let mut buf = [0u8; 64 << 10];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = usize::try_from(limit).unwrap_or(usize::MAX).saturating_sub(kept.len());
                if n > room {
                    over = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, over)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration, output_limit: u64) -> Result<Vec<u8>, ProcessError> {
        let args = ["-c".to_string(), script.to_string()];
        run(&Run { program: Path::new("/bin/sh"), args: &args, env: vec![], stdin: None, timeout, output_limit, sandbox: Sandbox::new() })
    }

    #[test]
    fn returns_stdout_and_reports_failures() {
        assert_eq!(sh("echo hi", Duration::from_secs(10), 100), Ok(b"hi\n".to_vec()));
        assert_eq!(sh("echo boom >&2; exit 3", Duration::from_secs(10), 100), Err(ProcessError::Failed { stderr: "boom".into() }));
    }

    #[test]
    fn rejects_a_process_over_its_budget() {
        assert_eq!(sh("sleep 5", Duration::from_millis(100), 100), Err(ProcessError::Timeout { seconds: 0 }));
        assert_eq!(sh("head -c 1000 /dev/zero", Duration::from_secs(10), 10), Err(ProcessError::TooLarge { limit_bytes: 10 }));
    }

    #[test]
    fn passes_no_environment_but_what_it_is_given() {
        let args = ["-c".to_string(), "echo \"$HOME|$CARGO|$X\"".to_string()];
        let out = run(&Run {
            program: Path::new("/bin/sh"),
            args: &args,
            env: vec![("X", "x".into())],
            stdin: None,
            timeout: Duration::from_secs(10),
            output_limit: 100,
            sandbox: Sandbox::new(),
        });
        assert_eq!(out, Ok(b"||x\n".to_vec()));
    }
}
