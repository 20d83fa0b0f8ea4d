//! Where a finished run's report goes besides the cluster (which `sync` writes while it
//! holds the Lease): the log, and the signed or plain file in `--report-to`. A report file
//! that could not be written is logged and returned as an error, so `sync` can exit 1 on
//! it: proof of what was applied is part of the job.

use airlock_cli::exit;

use crate::config::SyncSettings;
use crate::report::{self, Report, RunReport, RunResult};

/// Logs the run and writes its report file.
pub fn publish(report: &Report, settings: &SyncSettings) -> anyhow::Result<()> {
    match &report.error {
        Some(error) => tracing::error!(cluster = %report.cluster, result = ?report.result, "{error}"),
        None => tracing::info!(cluster = %report.cluster, duration_ms = report.duration_ms, "{}", summary(report)),
    }
    let Some(dir) = &settings.report_to else { return Ok(()) };
    match report::write_to_dir(report, settings.report_key.as_ref(), dir) {
        Ok(path) => {
            tracing::info!(path = %path.display(), signed = settings.report_key.is_some(), "report written");
            Ok(())
        }
        Err(e) => {
            tracing::error!("report not written: {e:#}");
            Err(e)
        }
    }
}

/// One line saying what the run did.
pub fn summary(report: &Report) -> String {
    let counts: Vec<String> = report.counts().iter().map(|(action, n)| format!("{n} {action}")).collect();
    let counts = if counts.is_empty() { String::new() } else { format!(": {}", counts.join(", ")) };
    let version = report.bundle.as_ref().map_or("?".to_string(), |b| b.version.to_string());
    let drift = if report.drift.found > 0 {
        format!(" (drift: {} found, {} corrected)", report.drift.found, report.drift.corrected)
    } else {
        String::new()
    };
    match report.result {
        RunResult::Applied => format!("{} applied version {version}{counts}", report.cluster),
        RunResult::UpToDate => format!("{} is up to date at version {version}{drift}{counts}", report.cluster),
        RunResult::DryRun => format!("{} dry run of version {version}, nothing written{drift}{counts}", report.cluster),
        RunResult::Rejected | RunResult::Error => {
            format!("{}: {}", report.cluster, report.error.as_deref().unwrap_or("failed"))
        }
    }
}

/// The documented exit code of a run.
pub fn exit_code(report: &Report) -> u8 {
    match report.result {
        RunResult::Applied | RunResult::UpToDate | RunResult::DryRun => exit::OK,
        RunResult::Rejected => exit::REJECTED,
        RunResult::Error => exit::ERROR,
    }
}
