//! The facade of one publish's chart rendering: a helm binary, its throw-away homes, the
//! chart cache and the render memo, behind [`Renderer::render`].
//!
//! Thread-safe: a publish renders clusters on many threads, and equal requests share one
//! fetch and one render (`once`).
//!
//! The determinism check (a second render on a memo miss, `memo`) runs only where a second
//! render could differ: when the chart's templates or the request's values name a function
//! that reads randomness or the clock (`variance`, read once per chart archive). Any other
//! chart is a function of its inputs, and rendering it again would only cost a helm run.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use airlock_bundle::Digest;

use super::binary::Helm;
use super::cache::{ChartCache, FetchedChart};
use super::error::{HelmError, cache_error};
use super::fetch::Fetcher;
use super::memo::{DiskMemo, Entry, inputs_digest};
use super::release::{ChartId, Release, split};
use super::scratch::Scratch;
use super::source::ChartRef;
use super::template::{self, ReleaseRequest};
use super::variance;
use crate::once::OnceMap;
use crate::source_mirrors::Mirrors;

/// Where a renderer keeps things, and how careful it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RendererSettings {
    /// Chart archives and renders kept across publishes (`charts/`, `renders/` inside);
    /// `None` keeps them for this publish only.
    pub cache_dir: Option<PathBuf>,
    /// On a memo miss, render a chart that can vary (its templates or values name a random
    /// or clock function) a second time, to find charts whose output changes every time.
    pub check_determinism: bool,
    /// Where charts are fetched from instead of the repositories profiles name.
    pub mirrors: Mirrors,
}

impl Default for RendererSettings {
    fn default() -> Self {
        RendererSettings { cache_dir: None, check_determinism: true, mirrors: Mirrors::default() }
    }
}

/// A release rendered, or remembered.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub release: Release,
    /// The digest of every input of the render (the memo key).
    pub inputs: Digest,
    /// Two renders of the same inputs differed: the chart makes random values. The output
    /// kept is the first render's, served again while the inputs stay the same.
    pub nondeterministic: bool,
    /// Served from the disk memo: no helm ran for it in this publish.
    pub remembered: bool,
}

/// Renders charts for one publish.
#[derive(Debug)]
pub struct Renderer {
    helm: Helm,
    fetcher: Fetcher,
    scratch: Scratch,
    disk: Option<DiskMemo>,
    renders: OnceMap<Digest, Result<Arc<Rendered>, HelmError>>,
    /// Per chart archive: the varying functions its templates name, or why it was unreadable.
    variance: OnceMap<Digest, Result<BTreeSet<&'static str>, String>>,
    check_determinism: bool,
}

impl Renderer {
    pub fn new(helm: Helm, settings: &RendererSettings) -> Result<Renderer, HelmError> {
        let scratch = Scratch::new().map_err(|e| cache_error(&std::env::temp_dir(), e))?;
        let (charts, disk) = match &settings.cache_dir {
            Some(dir) => (ChartCache::open(&dir.join("charts"))?, Some(DiskMemo::open(&dir.join("renders"))?)),
            None => (ChartCache::open(&scratch.path().join("charts"))?, None),
        };
        Ok(Renderer {
            helm,
            fetcher: Fetcher::new(charts, settings.mirrors.clone()),
            scratch,
            disk,
            renders: OnceMap::default(),
            variance: OnceMap::default(),
            check_determinism: settings.check_determinism,
        })
    }

    pub fn helm(&self) -> &Helm {
        &self.helm
    }

    /// The archive of `chart`: a range is resolved once per renderer.
    pub fn fetch(&self, chart: &ChartRef) -> Result<FetchedChart, HelmError> {
        self.fetcher.fetch(&self.helm, &self.scratch, chart)
    }

    /// `request`'s release, rendered once per distinct inputs.
    pub fn render(&self, request: &ReleaseRequest) -> Result<Arc<Rendered>, HelmError> {
        let chart = self.fetch(&request.chart)?;
        let values = serde_json::to_vec(&request.values).expect("JSON serialises");
        let inputs = inputs_digest(&self.helm.version().text, &chart.digest, &Digest::of(&values), request);
        self.renders.get_or_init(inputs, || self.render_now(request, &chart, &values, inputs).map(Arc::new))
    }

    fn render_now(&self, request: &ReleaseRequest, chart: &FetchedChart, values: &[u8], inputs: Digest) -> Result<Rendered, HelmError> {
        let remembered = self.disk.as_ref().and_then(|d| d.get(&inputs));
        let entry = match &remembered {
            Some(entry) => entry.clone(),
            None => {
                let values_file = self.scratch.file(values, ".json").map_err(|e| cache_error(self.scratch.path(), e))?;
                let first = template::run(&self.helm, &self.scratch, chart, request, &values_file)?;
                let nondeterministic =
                    self.may_vary(request, chart) && template::run(&self.helm, &self.scratch, chart, request, &values_file)? != first;
                let entry = Entry::new(first, nondeterministic);
                if let Some(disk) = &self.disk {
                    disk.put(&inputs, &entry)?;
                }
                entry
            }
        };
        // The app version is read from the archive each render: the cache's records of
        // charts fetched before it was kept do not have it.
        let app_version = std::fs::read(&chart.archive).ok().and_then(|bytes| super::archive::chart_meta(&bytes).ok()?.app_version);
        let id = ChartId {
            name: chart.name.clone(),
            version: chart.version.clone(),
            digest: chart.digest,
            repository: crate::redact::redact(request.chart.repository.url()),
            app_version,
        };
        let release =
            split(&entry.output, &request.release, &request.namespace, id).map_err(|(source_path, message)| HelmError::Manifest {
                chart: request.chart.label.clone(),
                release: request.release.clone(),
                namespace: request.namespace.clone(),
                source_path,
                message,
            })?;
        Ok(Rendered { release, inputs, nondeterministic: entry.nondeterministic, remembered: remembered.is_some() })
    }

    /// Whether the determinism check should render `request` again. An archive that cannot
    /// be read through is checked as before: helm will say what is wrong with it.
    fn may_vary(&self, request: &ReleaseRequest, chart: &FetchedChart) -> bool {
        if !self.check_determinism {
            return false;
        }
        let scanned = self.variance.get_or_init(chart.digest, || {
            let archive = std::fs::File::open(&chart.archive).map_err(|e| format!("{}: {e}", chart.archive.display()))?;
            variance::in_archive(std::io::BufReader::new(archive))
        });
        let in_chart = match scanned {
            Ok(functions) => functions,
            Err(reason) => {
                tracing::debug!(chart = %request.chart.label, release = %request.release, reason, "rendering twice: the chart archive was not read through");
                return true;
            }
        };
        let in_values = variance::in_values(&request.values);
        if in_chart.is_empty() && in_values.is_empty() {
            return false;
        }
        tracing::debug!(
            chart = %request.chart.label,
            release = %request.release,
            ?in_chart,
            ?in_values,
            "rendering twice: functions that read randomness or the clock are named"
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::render::helm::cache::CacheKey;
    use crate::render::helm::source::Access;
    use crate::render::helm::template::Capabilities;
    use crate::sources::model::helm_options::TemplateOptions;
    use crate::test_archive::tar_gz;

    const REPOSITORY: &str = "http://charts.invalid";

    /// A helm whose `template` prints a ConfigMap holding its own process id: any two
    /// renders differ, so every second render shows as nondeterministic.
    fn fake_helm(dir: &Path) -> Helm {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("helm");
        let script = "#!/bin/sh\ncase \"$1\" in\nversion) echo v3.17.2+gfake ;;\ntemplate) printf -- '---\\n# Source: web/templates/cm.yaml\\napiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: web\\ndata:\\n  pid: \"%s\"\\n' $$ ;;\n*) exit 1 ;;\nesac\n";
        std::fs::write(&path, script).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Helm::at(&path).expect("the fake helm answers")
    }

    /// A renderer whose chart cache already holds `archive` as chart `web` 1.0.0, so
    /// fetching it starts no helm.
    fn renderer(dir: &Path, archive: &[u8], check_determinism: bool) -> Renderer {
        let key = CacheKey { repository: REPOSITORY, scope: "", chart: "web" };
        ChartCache::open(&dir.join("cache/charts")).expect("opens").store(&key, &["1.0.0"], "web", "1.0.0", archive).expect("stores");
        let settings = RendererSettings { cache_dir: Some(dir.join("cache")), check_determinism, ..RendererSettings::default() };
        Renderer::new(fake_helm(dir), &settings).expect("renderer")
    }

    fn request(values: serde_json::Value) -> ReleaseRequest {
        ReleaseRequest {
            chart: ChartRef::new("ClusterProfile/test", REPOSITORY, "repo", "repo/web", "1.0.0", Access::default()).expect("valid"),
            release: "web".into(),
            namespace: "web".into(),
            values,
            capabilities: Capabilities::default(),
            options: TemplateOptions::default(),
        }
    }

    /// Renders `request`; whether it was found nondeterministic, and how many helm ran.
    fn render(renderer: &Renderer, request: &ReleaseRequest) -> (bool, u64) {
        let before = renderer.helm().invocations();
        let rendered = renderer.render(request).expect("renders");
        (rendered.nondeterministic, renderer.helm().invocations() - before)
    }

    fn chart(template: &str) -> Vec<u8> {
        tar_gz(&[
            ("web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n"),
            ("web/README.md", "The password is now made by the chart.\n"),
            ("web/templates/cm.yaml", template),
        ])
    }

    #[test]
    fn renders_a_chart_that_cannot_vary_once_per_memo_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let renderer = renderer(dir.path(), &chart("data:\n  a: {{ .Values.a | quote }}\n"), true);
        assert_eq!(render(&renderer, &request(json!({"a": "1"}))), (false, 1));
        assert_eq!(render(&renderer, &request(json!({"a": "2"}))), (false, 1));
        assert_eq!(render(&renderer, &request(json!({"a": "1"}))), (false, 0));
    }

    #[test]
    fn renders_twice_when_the_templates_or_the_values_can_vary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let random = renderer(dir.path(), &chart("data:\n  a: {{ randAlphaNum 10 | quote }}\n"), true);
        assert_eq!(render(&random, &request(json!({}))), (true, 2));

        let dir = tempfile::tempdir().expect("tempdir");
        let fixed = renderer(dir.path(), &chart("data:\n  a: {{ tpl .Values.a . | quote }}\n"), true);
        assert_eq!(render(&fixed, &request(json!({"a": "{{ randAlpha 5 }}"}))), (true, 2));
        assert_eq!(render(&fixed, &request(json!({"a": "randAlpha"}))), (false, 1));

        let dir = tempfile::tempdir().expect("tempdir");
        let unreadable = renderer(dir.path(), b"not an archive", true);
        assert_eq!(render(&unreadable, &request(json!({}))), (true, 2));
    }

    #[test]
    fn renders_once_without_the_determinism_check() {
        let dir = tempfile::tempdir().expect("tempdir");
        let random = renderer(dir.path(), &chart("data:\n  a: {{ randAlphaNum 10 | quote }}\n"), false);
        assert_eq!(render(&random, &request(json!({"a": "{{ now }}"}))), (false, 1));
    }
}
