//! The subcommands, and the flags several of them share: where profiles come from, and how
//! to reach the store. Each subcommand parses its raw flags, checks them into typed
//! settings before any I/O, then hands over to the pipeline modules.

pub mod charts;
pub mod deregister;
pub mod export;
pub mod ingest;
pub mod keygen;
pub mod keyring;
pub mod publish;
pub mod register;
pub mod status;
mod table;
pub mod watch;

pub use airlock_cli::duration::parse_duration;

use std::path::PathBuf;

use airlock_cli::KubeArgs;
use airlock_store::{OciStore, RegistryCredentials, Store, StoreRef};
use anyhow::Context;
use clap::Args;

use crate::sources::Source;
use crate::sources::dir::DirSource;
use crate::sources::live::LiveSource;

/// Where the Sveltos objects come from: a directory, else the management cluster.
#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// Read SveltosClusters, profiles, ConfigMaps and Secrets from the YAML/JSON files under
    /// DIR instead of a management cluster.
    #[arg(long, value_name = "DIR")]
    pub from_dir: Option<PathBuf>,
    #[command(flatten)]
    pub kube: KubeArgs,
}

impl SourceArgs {
    pub async fn open(&self) -> anyhow::Result<Source> {
        match &self.from_dir {
            Some(dir) => Ok(Source::Dir(DirSource::read(dir)?)),
            None => {
                let client = self.kube.client().await.context("connecting to the management cluster")?;
                Ok(Source::Live(LiveSource::new(client)))
            }
        }
    }
}

/// Registry credentials (Git URLs carry their own). Default: the Docker config.json.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Registry user name; the password comes from $AIRLOCK_REGISTRY_PASSWORD.
    #[arg(long, value_name = "USER", env = "AIRLOCK_REGISTRY_USERNAME")]
    pub registry_username: Option<String>,
    #[arg(long, hide = true, env = "AIRLOCK_REGISTRY_PASSWORD", hide_env_values = true)]
    pub registry_password: Option<String>,
    /// A bearer token for the registry (from the environment only).
    #[arg(long, hide = true, env = "AIRLOCK_REGISTRY_TOKEN", hide_env_values = true)]
    pub registry_token: Option<String>,
    /// A Docker config.json to read registry credentials from.
    #[arg(long, value_name = "FILE")]
    pub docker_config: Option<PathBuf>,
}

impl StoreArgs {
    pub async fn open(&self, reference: &str) -> anyhow::Result<Box<dyn Store>> {
        Ok(airlock_store::open(&reference.parse()?, &self.credentials()).await?)
    }

    /// Opens an OCI store for raw artifact access (`export`); a Git store is an error.
    pub async fn open_oci(&self, reference: &StoreRef) -> anyhow::Result<Box<dyn OciStore>> {
        Ok(airlock_store::open_oci(reference, &self.credentials()).await?)
    }

    fn credentials(&self) -> RegistryCredentials {
        RegistryCredentials {
            username: self.registry_username.clone(),
            password: self.registry_password.clone(),
            token: self.registry_token.clone(),
            docker_config: self.docker_config.clone(),
        }
    }
}
