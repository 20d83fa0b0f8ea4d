//! Helm's throw-away homes for one run: `HELM_CACHE_HOME`, `HELM_CONFIG_HOME`,
//! `HELM_DATA_HOME` (and the repository and registry files inside them) in a temporary
//! directory, removed when the run ends. Nothing a previous run, another tool or the user's
//! own helm left (repositories, registry logins, plugins) takes part in a render, and
//! nothing of a run outlives it except what the chart cache keeps on purpose.
//!
//! Files helm must read from disk (values, CA bundles, registry logins) are written here
//! under names derived from their content, so equal inputs share one file.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use airlock_bundle::Digest;

/// One run's helm homes.
#[derive(Debug)]
pub(super) struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub(super) fn new() -> io::Result<Scratch> {
        let dir = tempfile::Builder::new().prefix("airlock-helm-").tempdir()?;
        for sub in ["cache", "config", "data", "files", "pulls"] {
            std::fs::create_dir(dir.path().join(sub))?;
        }
        Ok(Scratch { dir })
    }

    /// The environment helm runs with (on top of an empty one).
    pub(super) fn env(&self) -> Vec<(&'static str, OsString)> {
        let at = |sub: &str| self.dir.path().join(sub).into_os_string();
        vec![
            ("HOME", self.dir.path().as_os_str().to_owned()),
            ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
            ("HELM_CACHE_HOME", at("cache")),
            ("HELM_CONFIG_HOME", at("config")),
            ("HELM_DATA_HOME", at("data")),
            ("HELM_PLUGINS", at("data/plugins")),
            ("HELM_REGISTRY_CONFIG", at("config/registry/config.json")),
            ("HELM_REPOSITORY_CONFIG", at("config/repositories.yaml")),
            ("HELM_REPOSITORY_CACHE", at("cache/repository")),
        ]
    }

    /// Writes `bytes` to a file named by their digest and `suffix`; an existing one is
    /// reused.
    pub(super) fn file(&self, bytes: &[u8], suffix: &str) -> io::Result<PathBuf> {
        let path = self.dir.path().join("files").join(format!("{}{suffix}", Digest::of(bytes).name_hex()));
        if !path.exists() {
            let tmp = tempfile::NamedTempFile::new_in(self.dir.path().join("files"))?;
            std::fs::write(tmp.path(), bytes)?;
            tmp.persist(&path).map_err(|e| e.error)?;
        }
        Ok(path)
    }

    /// A new empty directory for one `helm pull` to write its archive into.
    pub(super) fn pull_dir(&self) -> io::Result<tempfile::TempDir> {
        tempfile::tempdir_in(self.path().join("pulls"))
    }

    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }
}
