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

/// The Sveltos options that change what `helm template` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TemplateOptions {
    /// `!options.skipCRDs`: print the `crds/` directories.
    pub include_crds: bool,
    /// `!options.disableHooks`: print hook objects.
    pub hooks: bool,
    /// `options.skipSchemaValidation`: do not check values against `values.schema.json`.
    pub skip_schema_validation: bool,
}

impl Default for TemplateOptions {
    fn default() -> Self {
        TemplateOptions { include_crds: true, hooks: true, skip_schema_validation: false }
    }
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
    let mut args = vec![
        "template".to_string(),
        request.release.clone(),
        chart.archive.display().to_string(),
        "--namespace".into(),
        request.namespace.clone(),
        "--values".into(),
        values.display().to_string(),
    ];
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
        args.extend(["--kube-version".into(), version.clone()]);
    }
    for api in &request.capabilities.api_versions {
        args.extend(["--api-versions".into(), api.clone()]);
    }
    let invocation =
        Invocation { args, stdin: None, registry_config: None, timeout: TEMPLATE_TIMEOUT, output_limit: TEMPLATE_OUTPUT_BYTES };
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
