//! The signed report files a puller wrote to `--report-to`, read back for
//! `export-reports` (bundles-format.md 14.6): every regular file named `report-*.json`, in
//! name order, each checked to be a report envelope and the whole within the reports-file
//! limit. Writing them is `writer`'s; putting them into one file the command's.

use std::io::Read;
use std::path::{Path, PathBuf};

use airlock_bundle::Limits;
use airlock_bundle::envelope::{self, EnvelopeError, REPORT_PAYLOAD_TYPE};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportReportsError {
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path}: an unsigned report; give the puller its report key (--report-key) so its reports can be ingested")]
    Unsigned { path: PathBuf },
    #[error("{path}: not a report envelope: {source}")]
    NotReport { path: PathBuf, source: EnvelopeError },
    #[error("{dir}: no report-*.json files")]
    NoReports { dir: PathBuf },
    #[error("{dir}: the reports make more than {limit} bytes (at {path}); carry older reports separately")]
    TooLarge { dir: PathBuf, path: PathBuf, limit: u64 },
}

/// A report file's exact envelope bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

pub(crate) fn io(path: &Path, e: impl std::fmt::Display) -> ExportReportsError {
    ExportReportsError::Io { path: path.to_path_buf(), message: e.to_string() }
}

/// Reads every report file of `dir`, in name order, checking each and the total size.
pub fn gather(dir: &Path, limits: &Limits) -> Result<Vec<ReportFile>, ExportReportsError> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("report-") && name.ends_with(".json") && entry.file_type().map_err(|e| io(dir, e))?.is_file() {
            paths.push(entry.path());
        }
    }
    if paths.is_empty() {
        return Err(ExportReportsError::NoReports { dir: dir.to_path_buf() });
    }
    paths.sort();
    // The array's brackets, and a comma and newline between envelopes.
    let mut total = 2u64;
    let mut reports = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes = read_report(&path, limits)?;
        total += bytes.len() as u64 + 2;
        if total > limits.reports_file_bytes {
            return Err(ExportReportsError::TooLarge { dir: dir.to_path_buf(), path, limit: limits.reports_file_bytes });
        }
        reports.push(ReportFile { path, bytes });
    }
    Ok(reports)
}

/// One report file, checked to be a report envelope. Surrounding whitespace is not part of
/// the JSON value and is left out.
fn read_report(path: &Path, limits: &Limits) -> Result<Vec<u8>, ExportReportsError> {
    let file = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let mut bytes = Vec::new();
    // One byte over the limit is enough for decoding to refuse the file as too large.
    file.take(limits.envelope_bytes + 1).read_to_end(&mut bytes).map_err(|e| io(path, e))?;
    let trimmed = bytes.trim_ascii();
    match envelope::decode(trimmed, REPORT_PAYLOAD_TYPE, limits) {
        Ok(_) => Ok(trimmed.to_vec()),
        Err(EnvelopeError::Malformed(_)) if is_plain_report(trimmed) => Err(ExportReportsError::Unsigned { path: path.to_path_buf() }),
        Err(source) => Err(ExportReportsError::NotReport { path: path.to_path_buf(), source }),
    }
}

/// Whether `bytes` are a bare report, as a puller without a report key writes it.
fn is_plain_report(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v["kind"] == "PullReport")
}
