//! One `helm template` run: what a release is rendered against, and the command line.
//!
//! Rendering is Sveltos's pull-mode render (an install, client-only dry run): CRDs of
//! `crds/` included unless `skipCRDs`, `.Release.IsInstall` true, and `lookup` returning
//! an empty map, since no cluster is asked. `.Capabilities` come from [`Capabilities`]:
//! the caller passes the managed cluster's version and API list (its report has them);
//! without a version helm assumes its own default (v1.32.0 for v3.17, v1.35.0 for v4.1),
//! without an API list its built-in one, which lists APIs a 1.20 cluster does not serve.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::binary::{Helm, Invocation};
use super::cache::FetchedChart;
use super::error::HelmError;
use super::scratch::Scratch;
use super::source::ChartRef;
use crate::process::ProcessError;
use crate::sources::model::helm_options::TemplateOptions;

/// A render is CPU only; the largest charts take seconds.
const TEMPLATE_TIMEOUT: Duration = Duration::from_secs(120);
/// No larger output could fit in a bundle.
const TEMPLATE_OUTPUT_BYTES: u64 = airlock_bundle::Limits::SPEC.total_bytes;

/// What `.Capabilities` says while rendering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Capabilities {
    /// `v1.20.2`; `None` leaves helm's default.
    pub kube_version: Option<String>,
    /// `group/version` and `group/version/Kind` entries, as `--api-versions` takes them.
    pub api_versions: Vec<String>,
}

/// One release to render.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseRequest {
    pub chart: ChartRef,
    pub release: String,
    pub namespace: String,
    /// The merged values (Sveltos's `values` and `valuesFrom`, already instantiated).
    pub values: serde_json::Value,
    pub capabilities: Capabilities,
    pub options: TemplateOptions,
}

/// Runs `helm template` for `request` on the fetched archive; its output.
pub(super) fn run(
    helm: &Helm,
    scratch: &Scratch,
    chart: &FetchedChart,
    request: &ReleaseRequest,
    values: &Path,
) -> Result<String, HelmError> {
    let args = arguments(&chart.archive, request, values);
    let invocation = Invocation {
        args,
        stdin: None,
        registry_config: None,
        reads: Some(&chart.archive),
        network: false,
        timeout: TEMPLATE_TIMEOUT,
        output_limit: TEMPLATE_OUTPUT_BYTES,
    };
    let failed = |message: String| HelmError::Render {
        chart: request.chart.label.clone(),
        release: request.release.clone(),
        namespace: request.namespace.clone(),
        message,
    };
    let out = helm.run(scratch, &invocation).map_err(|e| match e {
        ProcessError::Timeout { seconds } => HelmError::Timeout { chart: request.chart.label.clone(), verb: "template".into(), seconds },
        ProcessError::TooLarge { limit_bytes } => {
            HelmError::OutputTooLarge { chart: request.chart.label.clone(), verb: "template".into(), limit_bytes }
        }
        ProcessError::Spawn { message } => HelmError::HelmUnusable { path: helm.path().display().to_string(), message },
        ProcessError::Failed { stderr } => failed(stderr.trim_start_matches("Error: ").to_string()),
    })?;
    String::from_utf8(out).map_err(|_| failed("printed bytes that are not UTF-8".into()))
}

/// `helm template`'s command line for `request` on `archive`, with the merged values in
/// the file `values`.
fn arguments(archive: &Path, request: &ReleaseRequest, values: &Path) -> Vec<String> {
    let mut args =
        vec!["template".to_string(), format!("--namespace={}", request.namespace), "--values".into(), values.display().to_string()];
    if request.options.include_crds {
        args.push("--include-crds".into());
    }
    if !request.options.hooks {
        args.push("--no-hooks".into());
    }
    if request.options.skip_schema_validation {
        args.push("--skip-schema-validation".into());
    }
    if let Some(version) = &request.capabilities.kube_version {
        args.push(format!("--kube-version={version}"));
    }
    for api in &request.capabilities.api_versions {
        args.push(format!("--api-versions={api}"));
    }
    // Profile-supplied values are flag values (`--flag=value`) or positionals after `--`,
    // so none can be read as a flag of its own, such as `--post-renderer`.
    args.extend(["--".into(), request.release.clone(), archive.display().to_string()]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::helm::source::Access;

    #[test]
    fn passes_profile_values_where_helm_cannot_read_them_as_flags() {
        let request = ReleaseRequest {
            chart: ChartRef::new("ClusterProfile/test", "http://charts.invalid", "repo", "repo/web", "1.0.0", Access::default())
                .expect("valid"),
            release: "--post-renderer=/bin/sh".into(),
            namespace: "--kubeconfig=/etc/key".into(),
            values: serde_json::json!({}),
            capabilities: Capabilities { kube_version: Some("-v9".into()), api_versions: vec!["--x".into()] },
            options: TemplateOptions::default(),
        };
        let args = arguments(Path::new("/cache/web.tgz"), &request, Path::new("/scratch/values.yaml"));
        let dash = args.iter().position(|a| a == "--").expect("positionals follow --");
        assert_eq!(&args[dash + 1..], ["--post-renderer=/bin/sh", "/cache/web.tgz"]);
        assert_eq!(args[0], "template");
        let ours = ["--namespace=", "--values", "/scratch/values.yaml", "--include-crds", "--kube-version=", "--api-versions="];
        for arg in &args[1..dash] {
            assert!(ours.iter().any(|flag| arg.starts_with(flag)), "{arg} stands where helm reads flags");
        }
        assert!(args.contains(&"--namespace=--kubeconfig=/etc/key".to_string()));
        assert!(args.contains(&"--kube-version=-v9".to_string()));
        assert!(args.contains(&"--api-versions=--x".to_string()));
    }
}
