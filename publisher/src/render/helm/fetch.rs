//! Fetching a chart archive with `helm pull`, once per publish per chart and version, into
//! the [`ChartCache`](super::cache).
//!
//! Helm does the transport (TLS, CA bundles, logins, redirects, OCI tags) and resolves
//! ranges itself, exactly as `helm install` would; this module decides when to ask it and
//! keeps the result. An exact version found in the cache starts no helm; a range starts
//! one `helm pull` per publish, and the archive it resolved to is kept by digest. HTTP
//! repositories with a login are added with `helm repo add --password-stdin` first, so no
//! password appears on a command line.

use std::time::Duration;

use super::binary::{Helm, Invocation};
use super::cache::{CacheKey, ChartCache, FetchedChart};
use super::error::{ChartLabel, HelmError, cache_error};
use super::scratch::Scratch;
use super::source::{Access, ChartRef, Repository, VersionSpec, host_of};
use crate::once::OnceMap;
use crate::process::ProcessError;
use crate::source_mirrors::Mirrors;

/// A pull downloads one archive; a slow repository gets this long.
const PULL_TIMEOUT: Duration = Duration::from_secs(300);
/// What `helm pull` and `helm repo add` may print: a line or two.
const PULL_OUTPUT_BYTES: u64 = 1 << 20;
/// The largest chart archive accepted; the largest public charts are a few megabytes.
pub(super) const MAX_ARCHIVE_BYTES: u64 = 64 << 20;

/// What one fetch depends on: the chart without the profile that asked for it.
type FetchKey = (Repository, String, VersionSpec, Access);

/// Fetches charts for one publish.
#[derive(Debug)]
pub(super) struct Fetcher {
    cache: ChartCache,
    mirrors: Mirrors,
    fetched: OnceMap<FetchKey, Result<FetchedChart, HelmError>>,
    /// HTTP repositories with a login, added once: repository URL and access → alias.
    added: OnceMap<(String, Access), Result<String, HelmError>>,
}

impl Fetcher {
    pub(super) fn new(cache: ChartCache, mirrors: Mirrors) -> Fetcher {
        Fetcher { cache, mirrors, fetched: OnceMap::default(), added: OnceMap::default() }
    }

    /// The archive of `chart`, from the cache or the repository.
    pub(super) fn fetch(&self, helm: &Helm, scratch: &Scratch, chart: &ChartRef) -> Result<FetchedChart, HelmError> {
        let key = (chart.repository.clone(), chart.chart.clone(), chart.version.clone(), chart.access.clone());
        self.fetched.get_or_init(key, || self.fetch_now(helm, scratch, chart)).map_err(|e| relabel(e, &chart.label))
    }

    /// The cache knows a chart by the repository the profile names, whichever mirror
    /// served it: a chart version is immutable, and a cache filled outside an enclave
    /// serves inside it, mirror or none. What was fetched still decides every render, by
    /// the archive's digest.
    fn fetch_now(&self, helm: &Helm, scratch: &Scratch, asked: &ChartRef) -> Result<FetchedChart, HelmError> {
        let scope = asked.access.cache_scope();
        let key = CacheKey { repository: asked.repository.url(), scope: &scope, chart: &asked.chart };
        if let VersionSpec::Exact(version) = &asked.version
            && let Some(hit) = self.cache.lookup(&key, version)
        {
            return Ok(hit);
        }
        let chart = &asked.through(&self.mirrors);
        let url = chart.repository.url();
        let dir = scratch.pull_dir().map_err(|e| cache_error(scratch.path(), e))?;
        let mut args = vec!["pull".to_string()];
        // Profile-supplied values go after `--` or as `--flag=value`, never where helm
        // could read them as a flag of their own.
        let mut positional = Vec::new();
        let mut registry_config = None;
        match &chart.repository {
            Repository::Oci { .. } => {
                positional.push(chart.oci_reference().expect("an OCI chart has a reference"));
                if chart.access.plain_http {
                    args.push("--plain-http".into());
                }
                if let Some(credentials) = &chart.access.credentials {
                    let config = credentials.docker_config(host_of(url));
                    registry_config = Some(scratch.file(&config, ".json").map_err(|e| cache_error(scratch.path(), e))?);
                }
            }
            Repository::Http { .. } if chart.access.credentials.is_some() => {
                let alias = self.added.get_or_init((url.to_string(), chart.access.clone()), || repo_add(helm, scratch, chart))?;
                positional.push(format!("{alias}/{}", chart.chart));
            }
            Repository::Http { .. } => {
                positional.push(chart.chart.clone());
                args.push(format!("--repo={url}"));
                if chart.access.pass_credentials_all {
                    args.push("--pass-credentials".into());
                }
            }
        }
        args.extend(tls_args(scratch, &chart.access)?);
        if !chart.version.text().is_empty() {
            args.push(format!("--version={}", chart.version.text()));
        }
        args.extend(["--destination".into(), dir.path().display().to_string(), "--".into()]);
        args.append(&mut positional);
        let invocation = Invocation {
            args,
            stdin: None,
            registry_config: registry_config.as_deref(),
            reads: None,
            network: true,
            timeout: PULL_TIMEOUT,
            output_limit: PULL_OUTPUT_BYTES,
        };
        helm.run(scratch, &invocation).map_err(|e| pull_error(e, chart, "pull"))?;
        let archive = single_archive(dir.path()).map_err(|message| HelmError::SourceUnavailable { chart: chart.label.clone(), message })?;
        let bytes = std::fs::read(&archive).map_err(|e| cache_error(&archive, e))?;
        let meta = super::archive::chart_meta(&bytes).map_err(|message| HelmError::Entry {
            chart: chart.label.clone(),
            field: "chartName".into(),
            message,
        })?;
        let mut versions = vec![meta.version.as_str()];
        if let VersionSpec::Exact(wanted) = &chart.version
            && wanted != &meta.version
        {
            versions.push(wanted);
        }
        self.cache.store(&key, &versions, &meta.name, &meta.version, &bytes)
    }
}

/// `helm repo add` with the login on stdin; the alias it was added under.
fn repo_add(helm: &Helm, scratch: &Scratch, chart: &ChartRef) -> Result<String, HelmError> {
    let url = chart.repository.url();
    let credentials = chart.access.credentials.as_ref().expect("only repositories with a login are added");
    let (username, password) = credentials.login_for(host_of(url)).ok_or_else(|| HelmError::Entry {
        chart: chart.label.clone(),
        field: "registryCredentialsConfig.credentials".into(),
        message: format!("has no login for {}", host_of(url)),
    })?;
    let alias = format!("airlock-{}", airlock_bundle::Digest::of(url.as_bytes()).name_hex());
    let mut args = vec!["repo".into(), "add".into(), "--force-update".into()];
    args.extend([format!("--username={username}"), "--password-stdin".into()]);
    if chart.access.pass_credentials_all {
        args.push("--pass-credentials".into());
    }
    args.extend(tls_args(scratch, &chart.access)?);
    args.extend(["--".into(), alias.clone(), url.into()]);
    let invocation = Invocation {
        args,
        stdin: Some(password.as_bytes()),
        registry_config: None,
        reads: None,
        network: true,
        timeout: PULL_TIMEOUT,
        output_limit: PULL_OUTPUT_BYTES,
    };
    helm.run(scratch, &invocation).map_err(|e| pull_error(e, chart, "repo add"))?;
    Ok(alias)
}

fn tls_args(scratch: &Scratch, access: &Access) -> Result<Vec<String>, HelmError> {
    let mut args = Vec::new();
    if access.insecure_skip_tls_verify {
        args.push("--insecure-skip-tls-verify".into());
    }
    if let Some(pem) = &access.ca_pem {
        let path = scratch.file(pem, ".crt").map_err(|e| cache_error(scratch.path(), e))?;
        args.extend(["--ca-file".into(), path.display().to_string()]);
    }
    Ok(args)
}

/// The one archive `helm pull` wrote into `dir`, checked for size.
fn single_archive(dir: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let entries: Vec<_> = std::fs::read_dir(dir).map_err(|e| e.to_string())?.filter_map(Result::ok).collect();
    let [entry] = entries.as_slice() else {
        return Err(format!("helm pull wrote {} files, not one archive", entries.len()));
    };
    let size = entry.metadata().map_err(|e| e.to_string())?.len();
    if size > MAX_ARCHIVE_BYTES {
        return Err(format!("the archive is {size} bytes, more than {MAX_ARCHIVE_BYTES}"));
    }
    Ok(entry.path())
}

/// Helm's words for a chart or version the repository does not have.
const NOT_FOUND_MARKERS: &[&str] = &["not found", "no chart version found", "no chart name found", "manifest unknown", "no matching"];
/// Helm's words for a repository it could not reach or that refused the login; checked
/// first, since some contain "not found" too ("... cannot be reached: ... 404 Not Found",
/// helm v4's "basic credential not found"). Status codes are matched as words, since a
/// repository's port may hold the same digits.
const UNAVAILABLE_MARKERS: &[&str] = &[
    "cannot be reached",
    "connection refused",
    "no such host",
    "timeout",
    "tls:",
    "x509:",
    "credential",
    "authoriz",
    "denied",
    "unauthorized",
    "forbidden",
    " 401 ",
    " 403 ",
];

/// Helm quotes the repository URL in its messages, with any login or token it carries:
/// those are scrubbed, as the message lands in a signed statement.
fn pull_error(err: ProcessError, chart_ref: &ChartRef, verb: &str) -> HelmError {
    let chart = &chart_ref.label;
    match err {
        ProcessError::Timeout { seconds } => HelmError::Timeout { chart: chart.clone(), verb: verb.into(), seconds },
        ProcessError::TooLarge { limit_bytes } => HelmError::OutputTooLarge { chart: chart.clone(), verb: verb.into(), limit_bytes },
        ProcessError::Spawn { message } => HelmError::HelmUnusable { path: "helm".into(), message },
        ProcessError::Failed { stderr } => {
            let lower = stderr.to_lowercase();
            let message = crate::redact::scrub(stderr.trim_start_matches("Error: "), chart_ref.repository.url());
            let unavailable = UNAVAILABLE_MARKERS.iter().any(|m| lower.contains(m));
            if !unavailable && NOT_FOUND_MARKERS.iter().any(|m| lower.contains(m)) {
                HelmError::ChartNotFound { chart: chart.clone(), message }
            } else {
                HelmError::SourceUnavailable { chart: chart.clone(), message }
            }
        }
    }
}

/// An error remembered for one profile's chart, retold for another profile's identical one.
fn relabel(err: HelmError, label: &ChartLabel) -> HelmError {
    match err {
        HelmError::Entry { field, message, .. } => HelmError::Entry { chart: label.clone(), field, message },
        HelmError::SourceUnavailable { message, .. } => HelmError::SourceUnavailable { chart: label.clone(), message },
        HelmError::ChartNotFound { message, .. } => HelmError::ChartNotFound { chart: label.clone(), message },
        HelmError::Timeout { verb, seconds, .. } => HelmError::Timeout { chart: label.clone(), verb, seconds },
        HelmError::OutputTooLarge { verb, limit_bytes, .. } => HelmError::OutputTooLarge { chart: label.clone(), verb, limit_bytes },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(url: &str) -> ChartRef {
        ChartRef::new("ClusterProfile/web", url, "r", "web", "", Access::default()).expect("a valid entry")
    }

    #[test]
    fn classifies_helm_pull_failures() {
        let failed = |s: &str| pull_error(ProcessError::Failed { stderr: s.into() }, &chart("http://r"), "pull");
        assert!(matches!(
            failed("Error: chart \"web\" version \"9.9.9\" not found in http://r repository"),
            HelmError::ChartNotFound { .. }
        ));
        assert!(matches!(
            failed(
                "Error: looks like \"http://r\" is not a valid chart repository or cannot be reached: Get \"http://r/index.yaml\": dial tcp: connect: connection refused"
            ),
            HelmError::SourceUnavailable { .. }
        ));
        assert!(matches!(
            failed(
                "Error: looks like \"http://r\" is not a valid chart repository or cannot be reached: failed to fetch http://r/index.yaml : 404 Not Found"
            ),
            HelmError::SourceUnavailable { .. }
        ));
        assert!(matches!(failed("Error: 127.0.0.1:5000/charts/web:9.9.9: not found"), HelmError::ChartNotFound { .. }));
        assert!(matches!(
            failed(
                "Error: failed to perform \"FetchReference\" on source: GET \"http://r/v2/web/manifests/1\": basic credential not found"
            ),
            HelmError::SourceUnavailable { .. }
        ));
        assert!(matches!(
            failed("Error: chart \"web\" version \"9.9.9\" not found in http://127.0.0.1:40143 repository"),
            HelmError::ChartNotFound { .. }
        ));
        assert!(matches!(
            failed("Error: failed to fetch http://127.0.0.1:8080/index.yaml : 401 Unauthorized"),
            HelmError::SourceUnavailable { .. }
        ));
    }

    #[test]
    fn a_failure_names_the_repository_without_its_login_or_token() {
        let chart = chart("https://ops:s3cret@charts.example/stable?token=t0k");
        let stderr = "Error: looks like \"https://ops:s3cret@charts.example/stable?token=t0k\" is not a valid chart repository \
                      or cannot be reached: failed to fetch https://ops:s3cret@charts.example/stable/index.yaml?token=t0k : 401";
        let err = pull_error(ProcessError::Failed { stderr: stderr.into() }, &chart, "repo add").to_string();
        for secret in ["s3cret", "t0k", "ops"] {
            assert!(!err.contains(secret), "{secret} in {err}");
        }
        assert!(err.contains("\"https://charts.example/stable\""), "{err}");
    }
}
