//! A renderer made when a profile first needs one: a publisher without helm fails only the
//! profiles that have charts, each naming the flag, and a run without charts or `--helm`
//! never looks for helm at all.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::error::HelmError;
use super::renderer::{Renderer, RendererSettings};

#[derive(Debug, Default)]
pub struct LazyRenderer {
    flag: Option<PathBuf>,
    settings: RendererSettings,
    located: OnceLock<Result<Renderer, HelmError>>,
}

impl LazyRenderer {
    /// Will locate the helm at `flag`, else on `PATH`.
    pub fn new(flag: Option<PathBuf>, settings: RendererSettings) -> LazyRenderer {
        LazyRenderer { flag, settings, located: OnceLock::new() }
    }

    pub fn get(&self) -> Result<&Renderer, HelmError> {
        self.located
            .get_or_init(|| super::binary::Helm::locate(self.flag.as_deref()).and_then(|helm| Renderer::new(helm, &self.settings)))
            .as_ref()
            .map_err(Clone::clone)
    }
}
