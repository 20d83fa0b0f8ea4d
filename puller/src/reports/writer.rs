//! Where a finished run's report goes besides the cluster (which the sync command keeps
//! there itself, `kept::last_report`): the log, and the file in `--report-to`.
//!
//! `--report-to DIR` gets `report-<ns>.<name>-<time>.json` per run, written atomically: a
//! DSSE envelope signed with the cluster's own key when `--report-key` is given, else the
//! plain report JSON. A report file that could not be written is logged and returned as an
//! error, so `sync` can exit 1 on it: proof of what was applied is part of the job.

use std::path::{Path, PathBuf};

use airlock_bundle::SigningKey;

use crate::config::SyncSettings;
use crate::reports::report::{Report, summary};

/// Why a report file was not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportFileError {
    /// No temporary file could be written and flushed in the directory.
    #[error("cannot write to {}: {source}", dir.display())]
    Dir { dir: PathBuf, source: std::io::Error },
    /// The temporary file could not be renamed into place.
    #[error("cannot write {}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
}

/// Logs the run and writes its report file.
pub fn write(report: &Report, settings: &SyncSettings) -> Result<(), ReportFileError> {
    match &report.error {
        Some(error) => tracing::error!(cluster = %report.cluster, result = ?report.result, "{error}"),
        None => tracing::info!(cluster = %report.cluster, duration_ms = report.duration_ms, "{}", summary(report)),
    }
    let Some(dir) = &settings.report_to else { return Ok(()) };
    match write_to_dir(report, settings.report_key.as_ref(), dir) {
        Ok(path) => {
            tracing::info!(path = %path.display(), signed = settings.report_key.is_some(), "report written");
            Ok(())
        }
        Err(e) => {
            tracing::error!("report not written: {e}");
            Err(e)
        }
    }
}

/// Writes the report into `dir` atomically (a temporary file renamed into place).
pub fn write_to_dir(report: &Report, key: Option<&SigningKey>, dir: &Path) -> Result<PathBuf, ReportFileError> {
    let path = dir.join(report.file_name());
    let in_dir = |source| ReportFileError::Dir { dir: dir.to_path_buf(), source };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(in_dir)?;
    std::io::Write::write_all(&mut tmp, &report.file_bytes(key)).and_then(|()| tmp.as_file().sync_all()).map_err(in_dir)?;
    tmp.persist(&path).map_err(|e| ReportFileError::File { path: path.clone(), source: e.error })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reports::report::{RunReport, RunResult};

    #[test]
    fn writes_atomically_with_the_documented_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        r.finish(Ok(RunResult::Applied));
        let path = write_to_dir(&r, None, dir.path()).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with("report-fleet.edge-1-") && name.ends_with("Z.json"), "{name}");
        let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(entries.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn names_the_directory_it_cannot_write_to() {
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        r.finish(Ok(RunResult::Applied));
        let err = write_to_dir(&r, None, Path::new("/nonexistent/reports")).unwrap_err();
        assert!(matches!(&err, ReportFileError::Dir { dir, .. } if dir == Path::new("/nonexistent/reports")), "{err:?}");
        assert!(err.to_string().starts_with("cannot write to /nonexistent/reports: "), "{err}");
    }
}
