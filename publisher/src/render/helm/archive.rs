//! Reads a chart archive's `Chart.yaml`: which chart and version `helm pull` actually
//! fetched, when the profile asked for a range or its spelling differs from the chart's,
//! and the app version the cluster's report names.
//!
//! It reads only the top-level `Chart.yaml` entry, through size caps; nothing is unpacked.

use std::io::Read;

use flate2::read::GzDecoder;
use serde_json::Value;

/// A chart archive's inflated size budget: the largest charts (with vendored subcharts and
/// CRDs) are a few megabytes; anything this large is not a chart.
pub(super) const MAX_INFLATED_BYTES: u64 = 256 << 20;
/// `Chart.yaml` is metadata: names, versions, dependencies.
const MAX_CHART_YAML_BYTES: u64 = 1 << 20;

/// Name, version and app version from an archive's `Chart.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ChartMeta {
    pub name: String,
    pub version: String,
    /// `appVersion`, which a chart need not declare.
    pub app_version: Option<String>,
}

/// The archive's `<chart>/Chart.yaml`, or why it has none.
pub(super) fn chart_meta(archive: &[u8]) -> Result<ChartMeta, String> {
    let inflated = GzDecoder::new(archive).take(MAX_INFLATED_BYTES);
    let mut tar = tar::Archive::new(inflated);
    let entries = tar.entries().map_err(|e| format!("not a tar.gz: {e}"))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("not a tar.gz: {e}"))?;
        let path = entry.path().map_err(|e| e.to_string())?.to_string_lossy().into_owned();
        let mut parts = path.split('/');
        let top_level = matches!((parts.next(), parts.next(), parts.next()), (Some(_), Some("Chart.yaml"), None));
        if !top_level {
            continue;
        }
        let mut text = String::new();
        entry.take(MAX_CHART_YAML_BYTES).read_to_string(&mut text).map_err(|e| format!("{path}: {e}"))?;
        let docs = crate::yaml::parse_documents(&text).map_err(|e| format!("{path}: {e}"))?;
        let doc = docs.first().ok_or_else(|| format!("{path} is empty"))?;
        let field = |name: &str| match &doc[name] {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err(format!("{path} has no {name}")),
        };
        return Ok(ChartMeta { name: field("name")?, version: field("version")?, app_version: field("appVersion").ok() });
    }
    Err("no Chart.yaml at the top of the archive".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_archive::tar_gz as archive;

    #[test]
    fn reads_the_top_level_chart_yaml() {
        let bytes = archive(&[
            ("web/charts/sub/Chart.yaml", "name: sub\nversion: 9.9.9\n"),
            ("web/Chart.yaml", "apiVersion: v2\nname: web\nversion: v1.2.3\nappVersion: 4.5\n"),
        ]);
        let meta = ChartMeta { name: "web".into(), version: "v1.2.3".into(), app_version: Some("4.5".into()) };
        assert_eq!(chart_meta(&bytes), Ok(meta));
        let without = archive(&[("web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n")]);
        assert_eq!(chart_meta(&without).map(|m| m.app_version), Ok(None));
    }

    #[test]
    fn rejects_an_archive_without_chart_yaml() {
        assert_eq!(chart_meta(&archive(&[("web/values.yaml", "a: 1\n")])), Err("no Chart.yaml at the top of the archive".into()));
        assert!(chart_meta(b"not gzip").is_err());
    }
}
