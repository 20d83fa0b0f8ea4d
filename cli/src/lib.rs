//! What both binaries share at their edges: kubectl-like cluster flags, log setup, the
//! exit codes scripts rely on, the one grammar of durations ([`duration`]), the responder
//! of `/healthz` and `/metrics` ([`http`]), the Lease that elects one writer ([`lease`]),
//! the metadata of the objects they write ([`meta`]) and progress of long transfers
//! ([`progress`]).
//! The publisher and the puller use it beside `airlock-store` and `airlock-bundle`; it
//! points down at `airlock-store` only for the mirror's progress, and neither lower crate
//! uses it.
#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod duration;
pub mod http;
pub mod lease;
pub mod meta;
pub mod progress;

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Exit codes, documented in `docs/operations.md`.
pub mod exit {
    /// Everything done, or nothing to do.
    pub const OK: u8 = 0;
    /// An error: bad flags, unreachable store or cluster, failed apply. Retry may help.
    pub const ERROR: u8 = 1;
    /// Some clusters failed; the others were published (publisher).
    pub const PARTIAL: u8 = 2;
    /// Refused by verification or policy: retrying the same input will not help.
    pub const REJECTED: u8 = 3;
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LogFormat {
    /// Human-readable lines on stderr.
    #[default]
    Human,
    /// One JSON object per line on stderr, for log collectors.
    Json,
}

/// Logging flags common to every command.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Log format.
    #[arg(long, value_enum, default_value_t, global = true, env = "AIRLOCK_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// Log filter, as RUST_LOG (e.g. `info`, `airlock=debug`).
    #[arg(long, default_value = "info", global = true, env = "AIRLOCK_LOG")]
    pub log: String,
}

impl LogArgs {
    /// Installs the global subscriber. Logs go to stderr so stdout stays for output that
    /// scripts read (YAML, tables).
    pub fn init(&self) {
        let filter = tracing_subscriber::EnvFilter::try_new(&self.log).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
        let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
        match self.log_format {
            // No colour codes when stderr is a pipe (pod logs, CI), as ripgrep does.
            LogFormat::Human => builder.with_target(false).with_ansi(std::io::stderr().is_terminal()).init(),
            LogFormat::Json => builder.json().flatten_event(true).init(),
        }
    }
}

/// kubectl's way of choosing a cluster: `--kubeconfig`, `KUBECONFIG`, `--context`, else
/// the in-cluster service account.
#[derive(Debug, Clone, Default, Args)]
pub struct KubeArgs {
    /// Path to a kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).
    #[arg(long, env = "KUBECONFIG", global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
}

impl KubeArgs {
    /// A client for the chosen cluster.
    pub async fn client(&self) -> Result<kube::Client, kube::Error> {
        kube::Client::try_from(self.config().await?)
    }

    /// The configuration of the chosen cluster, from which clients are made.
    pub async fn config(&self) -> Result<kube::Config, kube::Error> {
        let options = kube::config::KubeConfigOptions { context: self.context.clone(), ..Default::default() };
        Ok(match &self.kubeconfig {
            Some(path) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(kube::Error::InferKubeconfig)?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.map_err(kube::Error::InferKubeconfig)?
            }
            None if self.context.is_some() => kube::Config::from_kubeconfig(&options).await.map_err(kube::Error::InferKubeconfig)?,
            None => kube::Config::infer().await.map_err(kube::Error::InferConfig)?,
        })
    }
}

/// The HTTP status of a Kubernetes API error, if the server answered.
pub fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// A one-line description of an API error: the server's message, not kube's debug dump.
pub fn describe_api_error(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

/// Whether an API error says the namespace itself is missing (a create into it).
pub fn namespace_missing(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404 && status.message.starts_with("namespaces "))
}

/// Whether an API error is a 404: the object is missing, or its kind is not served (a CRD
/// that is not installed). An API server answers the latter with a plain-text body, which
/// kube reads as a status without the `NotFound` reason, so `is_not_found` misses it.
pub fn absent(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// Installs the one rustls crypto provider of the process (ring). Call first in `main`:
/// kube and the registry client both need it, and two providers would panic.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
        let mut status = Status::failure(message, reason);
        status.code = code;
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn a_kind_that_is_not_served_is_absent_like_a_missing_object() {
        assert!(super::absent(&api_error(404, "Failed to parse error data", "404 page not found")));
        assert!(super::absent(&api_error(404, "NotFound", "clusterconfigurations \"x\" not found")));
        assert!(!super::absent(&api_error(403, "Forbidden", "forbidden")));
        assert!(!super::namespace_missing(&api_error(404, "Failed to parse error data", "404 page not found")));
    }
}
