//! Whether and how often a puller sends its reports to the store (bundles-format.md 14.7
//! and 14.8), checked: only with a report key (the store gets signed reports only) and a
//! store that keeps reports (not an archive, which is carried media). Deciding what a run
//! sends is `report_push`'s.

use std::time::Duration;

use airlock_store::StoreRef;
use anyhow::bail;

use super::file::SettingsFile;
use super::flags::SyncArgs;
use airlock_cli::duration::parse_std_duration;

/// The report interval when none is given: what `register cluster --report-every` defaults to.
pub const DEFAULT_REPORT_EVERY: Duration = Duration::from_secs(30 * 60);

/// When reports go to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reporting {
    /// Reports are sent to the store at all.
    pub push: bool,
    /// A report is sent at least this often.
    pub every: Duration,
}

/// The flags over the settings file, for a store `store` and with a report key or not.
pub(super) fn check(args: &SyncArgs, file: &SettingsFile, store: &StoreRef, signed: bool) -> anyhow::Result<Reporting> {
    let push = args.push_reports || file.push_reports.unwrap_or(false);
    let every = match (args.report_every, &file.report_every) {
        (Some(every), _) => every,
        (None, Some(text)) => parse_std_duration(text).map_err(|e| anyhow::anyhow!("reportEvery: {e}"))?,
        (None, None) => DEFAULT_REPORT_EVERY,
    };
    if push && !signed {
        bail!("--push-reports needs --report-key: the store gets signed reports only");
    }
    if push && matches!(store, StoreRef::OciArchive(_)) {
        bail!("--push-reports: an oci-archive: store is carried media and keeps no reports; use --report-to");
    }
    Ok(Reporting { push, every })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(push: Option<bool>, every: Option<&str>) -> SettingsFile {
        SettingsFile { push_reports: push, report_every: every.map(str::to_string), ..SettingsFile::default() }
    }

    #[test]
    fn reads_the_settings_file_and_lets_flags_override_it() {
        let layout = StoreRef::OciLayout("/srv".into());
        let off = check(&SyncArgs::default(), &file(None, None), &layout, false).unwrap();
        assert_eq!(off, Reporting { push: false, every: DEFAULT_REPORT_EVERY });
        let on = check(&SyncArgs::default(), &file(Some(true), Some("5m")), &layout, true).unwrap();
        assert_eq!(on, Reporting { push: true, every: Duration::from_secs(300) });
        let flags = SyncArgs { push_reports: true, report_every: Some(Duration::from_secs(60)), ..SyncArgs::default() };
        assert_eq!(
            check(&flags, &file(Some(false), Some("5m")), &layout, true).unwrap(),
            Reporting { push: true, every: Duration::from_secs(60) }
        );
    }

    #[test]
    fn rejects_unsigned_pushes_archives_and_bad_intervals() {
        let layout = StoreRef::OciLayout("/srv".into());
        let err = check(&SyncArgs::default(), &file(Some(true), None), &layout, false).unwrap_err().to_string();
        assert!(err.contains("needs --report-key"), "{err}");
        let archive = StoreRef::OciArchive("/media/update.tar".into());
        let err = check(&SyncArgs::default(), &file(Some(true), None), &archive, true).unwrap_err().to_string();
        assert!(err.contains("keeps no reports"), "{err}");
        let err = check(&SyncArgs::default(), &file(None, Some("soon")), &layout, true).unwrap_err().to_string();
        assert!(err.starts_with("reportEvery: "), "{err}");
    }
}
