//! The facade of one publish's chart rendering: a helm binary, its throw-away homes, the
//! chart cache and the render memo, behind [`Renderer::render`].
//!
//! Thread-safe: a publish renders clusters on many threads, and equal requests share one
//! fetch and one render (`once`).

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
use crate::once::OnceMap;

/// Where a renderer keeps things, and how careful it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RendererSettings {
    /// Chart archives and renders kept across publishes (`charts/`, `renders/` inside);
    /// `None` keeps them for this publish only.
    pub cache_dir: Option<PathBuf>,
    /// Render twice on a memo miss to find charts whose output changes every time.
    pub check_determinism: bool,
}

impl Default for RendererSettings {
    fn default() -> Self {
        RendererSettings { cache_dir: None, check_determinism: true }
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
            fetcher: Fetcher::new(charts),
            scratch,
            disk,
            renders: OnceMap::default(),
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
                    self.check_determinism && template::run(&self.helm, &self.scratch, chart, request, &values_file)? != first;
                let entry = Entry::new(first, nondeterministic);
                if let Some(disk) = &self.disk {
                    disk.put(&inputs, &entry)?;
                }
                entry
            }
        };
        let id = ChartId { name: chart.name.clone(), version: chart.version.clone(), digest: chart.digest };
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
}
