//! `airlock-publisher export`: writes the newest bundle of each chosen cluster from an OCI
//! store into an OCI archive to carry across an air gap, leaving out with `--since` what the
//! far side already received (`airlock_store::mirror`, bundles-format.md 9.7). Flags are checked
//! into an [`Export`] before any store is opened; this module chooses clusters, shows
//! progress and the summary, and maps the outcome to an exit code.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use airlock_bundle::Keyring;
use airlock_bundle::{ClusterId, Limits};
use airlock_cli::exit;
use airlock_store::StoreRef;
use airlock_store::mirror::{self, ExportIndex};
use anyhow::{Context, bail, ensure};
use clap::Args;
use jiff::Timestamp;
use serde_json::json;

use super::{SourceArgs, StoreArgs};
use crate::cmd::table::{self, human_bytes};
use crate::keys;
use crate::progress::Reporter;
use crate::sources::select;
use crate::sources::selector::Selector;

const EXAMPLES: &str = "Examples:
  # Everything the registry holds, for the first trip:
  airlock-publisher export --from oci://registry.example/airlock --to oci-archive:full.tar \\
      --keyring keys/keyring.json

  # Next time, only what changed since (the previous archive or its .index.json):
  airlock-publisher export --from oci://registry.example/airlock --to oci-archive:delta.tar \\
      --keyring keys/keyring.json --since full.tar

  # The clusters of one site, chosen by their SveltosCluster labels:
  airlock-publisher export --from oci://registry.example/airlock --to oci-archive:site-a.tar \\
      --keyring keys/keyring.json --selector site=a --from-dir ./management

Every bundle is verified with --keyring before it is written; the archive is a plain OCI image
layout tarball (skopeo reads it) with an index beside it, FILE.index.json, which the next
--since starts from. Exit codes: 0 written, 1 error, 3 a bundle was rejected by verification
(nothing written).";

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct ExportArgs {
    /// OCI store to export from: oci://HOST/PREFIX, oci+http://HOST:PORT/PREFIX or
    /// oci-layout:DIR (a Git store cannot be exported from).
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// The archive to write (replaced if it exists): oci-archive:FILE.
    #[arg(long, value_name = "oci-archive:FILE")]
    pub to: String,
    /// Keyring every exported bundle must verify with.
    #[arg(long, value_name = "FILE")]
    pub keyring: PathBuf,
    /// Export only these clusters. Default: every cluster the store holds.
    #[arg(long, value_delimiter = ',', value_name = "NS/NAME,...", conflicts_with = "selector")]
    pub clusters: Vec<ClusterId>,
    /// Export the pull-mode clusters whose SveltosCluster labels are all K=V, read from
    /// --from-dir or the management cluster.
    #[arg(long, value_name = "K=V,...")]
    pub selector: Option<String>,
    /// The previous archive (or its index): leave out every blob the far side holds once it
    /// is imported.
    #[arg(long, value_name = "FILE")]
    pub since: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Which clusters to export.
#[derive(Debug)]
pub enum Pick {
    /// Every cluster the store holds.
    All,
    Clusters(Vec<ClusterId>),
    Selector(Selector),
}

/// The flags, checked.
#[derive(Debug)]
pub struct Export {
    pub from: StoreRef,
    pub to: PathBuf,
    pub keyring: Keyring,
    pub pick: Pick,
    pub since: Option<ExportIndex>,
}

impl ExportArgs {
    pub fn check(&self) -> anyhow::Result<Export> {
        let from: StoreRef = self.from.parse().context("--from")?;
        if matches!(from, StoreRef::Git { .. }) {
            bail!("--from {from}: export reads OCI artifacts; a Git store has none (publish to an OCI store to export)");
        }
        let to = match self.to.parse().context("--to")? {
            StoreRef::OciArchive(path) => path,
            other => bail!("--to {other}: export writes an OCI archive, oci-archive:FILE"),
        };
        ensure!(from != StoreRef::OciArchive(to.clone()), "--to {}: the archive --from reads", self.to);
        let pick = match (&self.selector, self.clusters.is_empty()) {
            (Some(text), _) => Pick::Selector(parse_selector(text)?),
            (None, false) => Pick::Clusters(self.clusters.clone()),
            (None, true) => Pick::All,
        };
        ensure!(
            matches!(pick, Pick::Selector(_)) || self.source.from_dir.is_none(),
            "--from-dir is only read with --selector, to find the clusters' labels"
        );
        let since = self.since.as_ref().map(|p| {
            // Accept the archive as written in --to, too.
            let p = p.to_str().and_then(|s| s.strip_prefix("oci-archive:")).map_or(p.clone(), PathBuf::from);
            ExportIndex::read(&p).context("--since")
        });
        Ok(Export { from, to, keyring: keys::load_keyring(&self.keyring)?, pick, since: since.transpose()? })
    }
}

/// `k=v,k2=v2` as a selector that requires every pair.
fn parse_selector(text: &str) -> anyhow::Result<Selector> {
    let mut labels = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((key, value)) = item.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            bail!("--selector {item:?}: expected KEY=VALUE");
        };
        ensure!(labels.insert(key, value).is_none(), "--selector: {key:?} given twice");
    }
    let selector = Selector::parse(&json!({ "matchLabels": labels })).map_err(|e| anyhow::anyhow!("--selector: {e}"))?;
    selector.context("--selector is empty; leave it out to export every cluster")
}

pub async fn run(args: ExportArgs) -> anyhow::Result<u8> {
    let export = args.check()?;
    let limits = Limits::SPEC;
    let from = args.store.open_oci(&export.from).await?;
    let clusters = match &export.pick {
        Pick::All => from.clusters(&limits).await?,
        Pick::Clusters(clusters) => clusters.clone(),
        Pick::Selector(selector) => {
            let inventory = args.source.open().await?.load().await?;
            let candidates = select::candidates(&inventory.clusters, &[])?;
            candidates.into_iter().filter(|c| selector.matches(&c.labels)).map(|c| c.id.clone()).collect()
        }
    };
    ensure!(!clusters.is_empty(), "nothing to export: no cluster in {} matches", export.from);
    let mut progress = Reporter::new();
    let result = mirror::export(
        from.as_ref(),
        &clusters,
        export.since.as_ref(),
        &export.to,
        &mirror::Trust { keyring: &export.keyring, now: Timestamp::now(), limits: &limits },
        &mut |p| progress.update(p),
    )
    .await;
    progress.finish();
    match result {
        Ok(index) => {
            let archive_bytes = std::fs::metadata(&export.to).with_context(|| format!("{}", export.to.display()))?.len();
            let unchanged = export.since.is_some().then(|| clusters.len().saturating_sub(index.clusters.len()));
            write_summary(&mut std::io::stdout().lock(), &index, unchanged, &export.to, archive_bytes)?;
            Ok(exit::OK)
        }
        Err(e) if e.is_rejection() => {
            tracing::error!("{e}");
            Ok(exit::REJECTED)
        }
        Err(e) => Err(e.into()),
    }
}

/// The exported clusters, then one `name: value` line per figure, for people and scripts.
/// `unchanged`: with --since, how many chosen clusters the far side already holds as they are.
fn write_summary(
    out: &mut dyn Write,
    index: &ExportIndex,
    unchanged: Option<usize>,
    archive: &std::path::Path,
    archive_bytes: u64,
) -> std::io::Result<()> {
    let rows: Vec<Vec<String>> =
        index.clusters.iter().map(|c| vec![c.cluster.clone(), c.version.to_string(), table::short(&c.bundle)]).collect();
    table::write(out, &["CLUSTER", "VERSION", "BUNDLE"], &rows)?;
    match unchanged {
        Some(n) => writeln!(out, "clusters: {} exported, {n} unchanged since the previous export", index.clusters.len())?,
        None => writeln!(out, "clusters: {} exported", index.clusters.len())?,
    }
    writeln!(out, "total bytes: {} ({})", index.total_bytes, human_bytes(index.total_bytes))?;
    writeln!(out, "new bytes: {} ({})", index.new_bytes, human_bytes(index.new_bytes))?;
    let ratio = if index.total_bytes == 0 { 0.0 } else { 100.0 * index.new_bytes as f64 / index.total_bytes as f64 };
    writeln!(out, "ratio: {ratio:.1}% of the clusters' bytes are new")?;
    writeln!(out, "archive: {} ({archive_bytes} bytes, {})", archive.display(), human_bytes(archive_bytes))?;
    writeln!(out, "index: {}", ExportIndex::path_for(archive).display())
}

#[cfg(test)]
#[path = "export_tests.rs"]
mod tests;
