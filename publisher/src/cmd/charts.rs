//! `airlock-publisher charts export|import`: the chart cache of `publish` and `watch`
//! carried across an air gap on the same medium as the bundles, so a publisher inside
//! renders the exact chart versions one outside fetched, with no network and no mirror
//! (`render::helm::cache_transfer` does the work; docs/mirrors.md).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::publish::default_cache_root;
use crate::render::helm::cache_transfer::{self, Carried};

const EXAMPLES: &str = "Examples:
  # Outside: publish once (it fetches the charts), then write the chart cache out:
  airlock-publisher charts export --output charts.tar

  # Inside, beside `airlock-puller import` of the bundles:
  airlock-publisher charts import charts.tar";

#[derive(Debug, Clone, Subcommand)]
pub enum ChartsCommand {
    /// Write the chart archives `publish` fetched (and what they are) into a tar.
    #[command(after_help = EXAMPLES)]
    Export(ExportChartsArgs),
    /// Add the charts of a tar `charts export` wrote to this publisher's chart cache.
    #[command(after_help = EXAMPLES)]
    Import(ImportChartsArgs),
}

/// The cache directory `publish --cache-dir` names.
#[derive(Debug, Clone, Args)]
pub struct CacheDirArgs {
    /// The cache directory publish and watch use. Default: $XDG_CACHE_HOME/airlock-publisher,
    /// else ~/.cache/airlock-publisher.
    #[arg(long, value_name = "DIR", env = "AIRLOCK_PUBLISHER_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl CacheDirArgs {
    /// The chart cache inside it.
    fn charts(&self) -> anyhow::Result<PathBuf> {
        let root = self.cache_dir.clone().or_else(default_cache_root).context("no --cache-dir, and neither XDG_CACHE_HOME nor HOME")?;
        Ok(root.join("helm").join("charts"))
    }
}

#[derive(Debug, Clone, Args)]
pub struct ExportChartsArgs {
    #[command(flatten)]
    pub cache: CacheDirArgs,
    /// The tar to write (replaced if it exists).
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct ImportChartsArgs {
    #[command(flatten)]
    pub cache: CacheDirArgs,
    /// A tar `charts export` wrote.
    #[arg(value_name = "FILE")]
    pub archive: PathBuf,
}

pub fn run(command: ChartsCommand) -> anyhow::Result<u8> {
    let (verb, carried) = match command {
        ChartsCommand::Export(args) => ("exported", cache_transfer::export(&args.cache.charts()?, &args.output)?),
        ChartsCommand::Import(args) => ("imported", cache_transfer::import(&args.cache.charts()?, &args.archive)?),
    };
    let Carried { records, archives, bytes } = carried;
    println!("charts: {records} chart versions {verb}, {archives} archives, {bytes} bytes");
    Ok(airlock_cli::exit::OK)
}
