//! The helm binary: where it is, which major version it is, and running it with a clean
//! environment, a time budget and an output cap.
//!
//! It does not decide what to run; `fetch` and `template` build the arguments. Every
//! process goes through [`Helm::run`], which counts it, so a test can prove that a memo hit
//! started no helm at all.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::error::HelmError;
use super::scratch::Scratch;

/// What `helm version --short` may print.
const VERSION_OUTPUT_BYTES: u64 = 4 << 10;
/// How long `helm version` may take: it reads nothing and contacts nothing.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of stderr kept for an error message; helm's own errors are one line.
const STDERR_BYTES: u64 = 64 << 10;
/// Environment passed through to helm: proxies and the system's CA roots, which an operator
/// sets for every HTTP client. Nothing else of the publisher's environment (cloud
/// credentials, `KUBECONFIG`, `HELM_*` settings) reaches a chart download.
const PASSED_ENV: &[&str] =
    &["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "TMPDIR"];

/// A helm binary that answered `helm version`.
#[derive(Debug)]
pub struct Helm {
    path: PathBuf,
    version: HelmVersion,
    invocations: AtomicU64,
}

/// What `helm version --short` said, e.g. `v3.17.2+gcc0bbbd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmVersion {
    /// 3 or 4: flags and the install order of webhook configurations differ between them.
    pub major: u32,
    pub text: String,
}

/// How one helm run ended, before the caller names the chart it was about.
#[derive(Debug)]
pub(super) enum RunError {
    Failed { stderr: String },
    Timeout { seconds: u64 },
    TooLarge { limit_bytes: u64 },
    Spawn { message: String },
}

/// One helm process to run.
pub(super) struct Invocation<'a> {
    pub args: Vec<String>,
    pub stdin: Option<&'a [u8]>,
    /// Overrides `HELM_REGISTRY_CONFIG` for this run: the registry logins of one chart.
    pub registry_config: Option<&'a Path>,
    pub timeout: Duration,
    pub output_limit: u64,
}

impl Helm {
    /// The helm at `flag` (the `--helm PATH` value), else the first `helm` on `PATH`.
    pub fn locate(flag: Option<&Path>) -> Result<Helm, HelmError> {
        if let Some(path) = flag {
            if !path.is_file() {
                return Err(HelmError::HelmNotFound { searched: format!("{} does not exist", path.display()) });
            }
            return Helm::at(path);
        }
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        let found = std::env::split_paths(&path_var).map(|dir| dir.join("helm")).find(|p| p.is_file());
        match found {
            Some(path) => Helm::at(&path),
            None => Err(HelmError::HelmNotFound { searched: "no helm on PATH".into() }),
        }
    }

    /// The helm at `path`, after asking it its version.
    pub fn at(path: &Path) -> Result<Helm, HelmError> {
        let unusable = |message: String| HelmError::HelmUnusable { path: path.display().to_string(), message };
        let scratch = Scratch::new().map_err(|e| unusable(e.to_string()))?;
        let invocation = Invocation {
            args: vec!["version".into(), "--short".into()],
            stdin: None,
            registry_config: None,
            timeout: VERSION_TIMEOUT,
            output_limit: VERSION_OUTPUT_BYTES,
        };
        let out = spawn(path, &scratch, &invocation).map_err(|e| unusable(format!("helm version --short: {}", e.message())))?;
        let text = String::from_utf8_lossy(&out).trim().to_string();
        let major = parse_major(&text).ok_or_else(|| unusable(format!("unrecognised version {text:?}")))?;
        if !(3..=4).contains(&major) {
            return Err(unusable(format!("helm {text} is neither v3 nor v4")));
        }
        Ok(Helm { path: path.to_path_buf(), version: HelmVersion { major, text }, invocations: AtomicU64::new(1) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn version(&self) -> &HelmVersion {
        &self.version
    }

    /// How many helm processes this value started, `helm version` included.
    pub fn invocations(&self) -> u64 {
        self.invocations.load(Ordering::Relaxed)
    }

    /// Runs helm in `scratch`'s throw-away homes; its stdout on success.
    pub(super) fn run(&self, scratch: &Scratch, invocation: &Invocation<'_>) -> Result<Vec<u8>, RunError> {
        self.invocations.fetch_add(1, Ordering::Relaxed);
        spawn(&self.path, scratch, invocation)
    }
}

impl RunError {
    pub(super) fn message(&self) -> String {
        match self {
            RunError::Failed { stderr } => stderr.clone(),
            RunError::Timeout { seconds } => format!("ran longer than {seconds} s"),
            RunError::TooLarge { limit_bytes } => format!("printed more than {limit_bytes} bytes"),
            RunError::Spawn { message } => message.clone(),
        }
    }
}

/// `v3.17.2+gcc0bbbd` → 3.
fn parse_major(text: &str) -> Option<u32> {
    text.strip_prefix('v')?.split('.').next()?.parse().ok()
}

fn spawn(path: &Path, scratch: &Scratch, invocation: &Invocation<'_>) -> Result<Vec<u8>, RunError> {
    let mut command = Command::new(path);
    command.args(&invocation.args).env_clear().envs(scratch.env());
    for name in PASSED_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    if let Some(config) = invocation.registry_config {
        command.env("HELM_REGISTRY_CONFIG", config);
    }
    command.stdin(if invocation.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| RunError::Spawn { message: format!("{}: {e}", path.display()) })?;
    if let (Some(bytes), Some(mut stdin)) = (invocation.stdin, child.stdin.take()) {
        // A helm that exits before reading its stdin reports why on stderr.
        let _ = stdin.write_all(bytes);
    }
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let limit = invocation.output_limit;
    let out_reader = std::thread::spawn(move || read_capped(stdout, limit));
    let err_reader = std::thread::spawn(move || read_capped(stderr, STDERR_BYTES));
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() >= invocation.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(RunError::Timeout { seconds: invocation.timeout.as_secs() });
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => break Err(RunError::Spawn { message: format!("waiting for helm: {e}") }),
        }
    };
    let (out, out_over) = out_reader.join().expect("the stdout reader does not panic");
    let (err, _) = err_reader.join().expect("the stderr reader does not panic");
    let status = status?;
    if out_over {
        return Err(RunError::TooLarge { limit_bytes: limit });
    }
    if !status.success() {
        let text = String::from_utf8_lossy(&err).trim().to_string();
        let stderr = if text.is_empty() { format!("helm exited with {status}") } else { text };
        return Err(RunError::Failed { stderr });
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

    #[test]
    fn reads_the_major_version() {
        assert_eq!(parse_major("v3.17.2+gcc0bbbd"), Some(3));
        assert_eq!(parse_major("v4.1.4+g05fa379"), Some(4));
        assert_eq!(parse_major("3.17.2"), None);
        assert_eq!(parse_major("version.BuildInfo{...}"), None);
    }

    #[test]
    fn rejects_a_missing_helm_path() {
        let err = Helm::locate(Some(Path::new("/nonexistent/helm"))).unwrap_err();
        assert!(matches!(err, HelmError::HelmNotFound { .. }), "{err}");
    }

    #[test]
    fn read_capped_keeps_the_limit_and_says_there_was_more() {
        assert_eq!(read_capped(&b"abcdef"[..], 4), (b"abcd".to_vec(), true));
        assert_eq!(read_capped(&b"abcd"[..], 4), (b"abcd".to_vec(), false));
    }
}
