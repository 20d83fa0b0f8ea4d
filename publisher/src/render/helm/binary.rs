//! The helm binary: where it is, which major version it is, and running it in a run's
//! throw-away homes (`scratch`) through `process`, which gives it a clean environment, a
//! time budget and an output cap.
//!
//! It does not decide what to run; `fetch` and `template` build the arguments. Every
//! process goes through [`Helm::run`], which counts it, so a test can prove that a memo hit
//! started no helm at all.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::error::HelmError;
use super::scratch::Scratch;
use crate::process::{self, ProcessError, Run};
use crate::sandbox::Sandbox;

/// What `helm version --short` may print.
const VERSION_OUTPUT_BYTES: u64 = 4 << 10;
/// How long `helm version` may take: it reads nothing and contacts nothing.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

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

/// One helm process to run.
pub(super) struct Invocation<'a> {
    pub args: Vec<String>,
    pub stdin: Option<&'a [u8]>,
    /// Overrides `HELM_REGISTRY_CONFIG` for this run: the registry logins of one chart.
    pub registry_config: Option<&'a Path>,
    /// A file outside the scratch homes it reads: the chart archive it renders.
    pub reads: Option<&'a Path>,
    /// Whether it reaches a chart repository.
    pub network: bool,
    pub timeout: Duration,
    pub output_limit: u64,
}

impl Helm {
    /// The helm at `flag` (the `--helm PATH` value), else the first `helm` on `PATH`.
    pub fn locate(flag: Option<&Path>) -> Result<Helm, HelmError> {
        let path = process::locate("helm", flag).map_err(|searched| HelmError::HelmNotFound { searched })?;
        Helm::at(&path)
    }

    /// The helm at `path`, after asking it its version.
    pub fn at(path: &Path) -> Result<Helm, HelmError> {
        let unusable = |message: String| HelmError::HelmUnusable { path: path.display().to_string(), message };
        let scratch = Scratch::new().map_err(|e| unusable(e.to_string()))?;
        let invocation = Invocation {
            args: vec!["version".into(), "--short".into()],
            stdin: None,
            registry_config: None,
            reads: None,
            network: false,
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
    pub(super) fn run(&self, scratch: &Scratch, invocation: &Invocation<'_>) -> Result<Vec<u8>, ProcessError> {
        self.invocations.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(verb = %invocation.args.first().map_or("", String::as_str), "helm runs");
        spawn(&self.path, scratch, invocation)
    }
}

fn spawn(path: &Path, scratch: &Scratch, invocation: &Invocation<'_>) -> Result<Vec<u8>, ProcessError> {
    let mut env = scratch.env();
    if let Some(config) = invocation.registry_config {
        env.push(("HELM_REGISTRY_CONFIG", config.as_os_str().to_owned()));
    }
    let mut sandbox = Sandbox::new().write(scratch.path());
    if let Some(file) = invocation.reads {
        sandbox = sandbox.read(file);
    }
    if invocation.network {
        sandbox = sandbox.network();
    }
    process::run(&Run {
        program: path,
        args: &invocation.args,
        env,
        stdin: invocation.stdin,
        timeout: invocation.timeout,
        output_limit: invocation.output_limit,
        sandbox,
    })
}

/// `v3.17.2+gcc0bbbd` → 3.
fn parse_major(text: &str) -> Option<u32> {
    text.strip_prefix('v')?.split('.').next()?.parse().ok()
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

    /// A stand-in helm that prints `version` and exits with `code`.
    fn fake_helm(dir: &Path, version: &str, code: i32) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("helm");
        std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\nexit {code}\n")).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[test]
    fn knows_helm_v3_and_v4() {
        let dir = tempfile::tempdir().expect("tempdir");
        let helm = Helm::at(&fake_helm(dir.path(), "v4.1.4+g05fa379", 0)).expect("a helm v4");
        assert_eq!(helm.version(), &HelmVersion { major: 4, text: "v4.1.4+g05fa379".into() });
        assert_eq!(helm.invocations(), 1);
    }

    #[test]
    fn rejects_a_helm_that_is_not_v3_or_v4() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (version, code) in [("v2.17.0+ga690bad", 0), ("Client: &version.Version{}", 0), ("v3.17.2", 1)] {
            let err = Helm::at(&fake_helm(dir.path(), version, code)).unwrap_err();
            assert!(matches!(err, HelmError::HelmUnusable { .. }), "{version}: {err}");
        }
    }

    #[test]
    fn rejects_a_missing_helm_path() {
        let err = Helm::locate(Some(Path::new("/nonexistent/helm"))).unwrap_err();
        assert!(matches!(err, HelmError::HelmNotFound { .. }), "{err}");
    }
}
