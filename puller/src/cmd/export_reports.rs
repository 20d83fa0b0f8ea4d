//! `airlock-puller export-reports`: gathers the signed report files that `--report-to`
//! wrote into one reports file to carry back across the gap (bundles-format.md 14.6): a
//! JSON array of the report envelopes, each exactly as its file holds it, in file-name
//! order (cluster, then time).
//!
//! Only regular files named `report-*.json` are taken, so the temporary files of a report
//! being written are passed over. Each must be a report envelope (strict DSSE, payload type
//! of 14.2, within the envelope limit): an unsigned, damaged or oversized one stops the
//! export, naming the file, so it is found here rather than after the trip. Signatures are
//! not checked: the puller holds no cluster's public key; `airlock-publisher ingest` does.

use std::io::Write;
use std::path::{Path, PathBuf};

use airlock_bundle::Limits;
use airlock_cli::progress::human_bytes;
use clap::Args;

use crate::reports::files::io;
use crate::reports::files::{ExportReportsError, ReportFile, gather};

#[derive(Debug, Clone, Args)]
pub struct ExportReportsArgs {
    /// The directory the puller writes its reports to (its --report-to).
    #[arg(long, value_name = "DIR")]
    pub from: PathBuf,
    /// The reports file to write (replaced if it exists), for `airlock-publisher ingest --from`.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,
}

/// Writes the reports file and returns the line to print.
pub fn export(args: &ExportReportsArgs, limits: &Limits) -> Result<String, ExportReportsError> {
    let reports = gather(&args.from, limits)?;
    let bytes = reports_file(&reports);
    let dir = match args.to.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Through a temporary file and a rename: an interrupted export leaves no half file.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io(&args.to, e))?;
    tmp.write_all(&bytes).and_then(|()| tmp.as_file().sync_all()).map_err(|e| io(&args.to, e))?;
    tmp.persist(&args.to).map_err(|e| io(&args.to, e.error))?;
    Ok(format!(
        "wrote {} report(s) from {} to {} ({})",
        reports.len(),
        args.from.display(),
        args.to.display(),
        human_bytes(bytes.len() as u64)
    ))
}

/// The reports file (spec 14.6): the envelopes' exact bytes as elements of a JSON array.
fn reports_file(reports: &[ReportFile]) -> Vec<u8> {
    let mut out = b"[".to_vec();
    for (i, r) in reports.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b",\n");
        }
        out.extend_from_slice(&r.bytes);
    }
    out.extend_from_slice(b"]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reports::report::{Report, RunReport, RunResult};
    use crate::reports::writer::write_to_dir;
    use airlock_bundle::SigningKey;
    use airlock_bundle::envelope::{self, EnvelopeError, REPORT_PAYLOAD_TYPE};
    use serde_json::value::RawValue;

    fn report_in(dir: &Path, cluster: &str, key: Option<&SigningKey>) -> PathBuf {
        let mut r = Report::start(&cluster.parse().unwrap());
        r.finish(Ok(RunResult::UpToDate));
        write_to_dir(&r, key, dir).unwrap()
    }

    fn args(dir: &Path) -> ExportReportsArgs {
        ExportReportsArgs { from: dir.join("reports"), to: dir.join("out/reports.json") }
    }

    fn setup() -> (tempfile::TempDir, SigningKey) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("reports")).unwrap();
        std::fs::create_dir_all(tmp.path().join("out")).unwrap();
        (tmp, SigningKey::from_seed([9; 32]))
    }

    #[test]
    fn bundles_every_report_unchanged_in_name_order_and_passes_over_other_files() {
        let (tmp, key) = setup();
        let reports = tmp.path().join("reports");
        let b = report_in(&reports, "fleet/b", Some(&key));
        let a = report_in(&reports, "fleet/a", Some(&key));
        std::fs::write(reports.join("notes.txt"), "not a report").unwrap();
        std::fs::write(reports.join(".tmpXYZ"), "half a report").unwrap();
        std::fs::create_dir(reports.join("report-dir.json")).unwrap();
        let line = export(&args(tmp.path()), &Limits::SPEC).unwrap();
        assert!(line.starts_with("wrote 2 report(s) from "), "{line}");

        let written = std::fs::read(tmp.path().join("out/reports.json")).unwrap();
        let items: Vec<Box<RawValue>> = serde_json::from_slice(&written).unwrap();
        let want = [std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap()];
        assert_eq!(items.iter().map(|i| i.get().as_bytes().to_vec()).collect::<Vec<_>>(), want);
        for item in &items {
            let decoded = envelope::decode(item.get().as_bytes(), REPORT_PAYLOAD_TYPE, &Limits::SPEC).unwrap();
            assert_eq!(decoded.signatures[0].0, key.public().key_id());
        }
    }

    #[test]
    fn rejects_a_report_file_that_is_not_a_report_envelope_naming_it() {
        let (tmp, key) = setup();
        let reports = tmp.path().join("reports");
        report_in(&reports, "fleet/a", Some(&key));
        let plain = report_in(&reports, "fleet/b", None);
        let err = export(&args(tmp.path()), &Limits::SPEC).unwrap_err();
        assert_eq!(err, ExportReportsError::Unsigned { path: plain.clone() });
        assert!(err.to_string().contains("--report-key"), "{err}");
        std::fs::remove_file(&plain).unwrap();

        let keyring = reports.join("report-z-keyring.json");
        std::fs::write(&keyring, envelope::sign(envelope::KEYRING_PAYLOAD_TYPE, b"{}", &[key])).unwrap();
        let err = export(&args(tmp.path()), &Limits::SPEC).unwrap_err();
        assert!(
            matches!(&err, ExportReportsError::NotReport { path, source: EnvelopeError::PayloadType { .. } } if *path == keyring),
            "{err:?}"
        );
        std::fs::write(&keyring, b"{\"payloadType\": ").unwrap();
        let err = export(&args(tmp.path()), &Limits::SPEC).unwrap_err();
        assert!(matches!(&err, ExportReportsError::NotReport { source: EnvelopeError::Malformed(_), .. }), "{err:?}");
        assert!(err.to_string().starts_with(&keyring.display().to_string()), "{err}");
        assert!(!tmp.path().join("out/reports.json").exists(), "nothing written on a refusal");
    }

    #[test]
    fn rejects_an_oversized_report_and_an_oversized_reports_file() {
        let (tmp, key) = setup();
        let reports = tmp.path().join("reports");
        let first = report_in(&reports, "fleet/a", Some(&key));
        let second = report_in(&reports, "fleet/b", Some(&key));
        let size = std::fs::metadata(&first).unwrap().len();

        let small = Limits { envelope_bytes: size - 1, ..Limits::SPEC };
        let err = export(&args(tmp.path()), &small).unwrap_err();
        assert!(
            matches!(&err, ExportReportsError::NotReport { path, source: EnvelopeError::TooLarge { .. } } if *path == first),
            "{err:?}"
        );
        let one_fits = Limits { reports_file_bytes: size + 4, ..Limits::SPEC };
        assert_eq!(
            gather(&reports, &one_fits).unwrap_err(),
            ExportReportsError::TooLarge { dir: reports.clone(), path: second, limit: size + 4 }
        );
        assert!(!tmp.path().join("out/reports.json").exists(), "nothing written on a refusal");
    }

    #[test]
    fn an_empty_or_missing_directory_is_named() {
        let (tmp, _) = setup();
        let reports = tmp.path().join("reports");
        assert_eq!(export(&args(tmp.path()), &Limits::SPEC).unwrap_err(), ExportReportsError::NoReports { dir: reports.clone() });
        let missing = tmp.path().join("missing");
        assert!(matches!(gather(&missing, &Limits::SPEC), Err(ExportReportsError::Io { path, .. }) if path == missing));
    }
}
