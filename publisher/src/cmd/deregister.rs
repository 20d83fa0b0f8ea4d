//! `airlock-publisher deregister cluster NS/NAME`: the reverse of `register cluster`. On the
//! management side it deletes what registration (and `ingest`) wrote for the cluster
//! (`management`), and it prints what the site deletes (`site`). With `--final-bundle` it
//! first publishes the cluster's final bundle instead (`final_bundle`, bundles-format.md
//! 2.5.5), which makes the puller prune everything it applied and stop; the cluster is
//! deregistered once its report says so.
//!
//! Every step is idempotent: what is already gone is said so, and running the command again
//! finishes what a failed run left. `--dry-run` asks the API server to check each delete
//! (server-side dry run) and publishes nothing.

mod final_bundle;
mod management;
mod site;

use std::path::PathBuf;

use airlock_bundle::ClusterId;
use airlock_bundle::vocabulary::DECOMMISSIONED_ANNOTATION;
use airlock_cli::{KubeArgs, exit};
use anyhow::Context;
use clap::{Args, Subcommand};
use jiff::SignedDuration;
use kube::api::{Api, DynamicObject};
use serde_json::Value;

use crate::cmd::{StoreArgs, parse_duration};
use crate::sources::live::sveltos_kinds;

/// Deregister a cluster from the management side.
#[derive(Debug, Clone, Args)]
pub struct DeregisterCommand {
    #[command(subcommand)]
    what: Deregister,
}

#[derive(Debug, Clone, Subcommand)]
enum Deregister {
    /// Remove what `register cluster` created, or first publish the cluster's final bundle.
    #[command(long_about = CLUSTER_HELP, after_help = CLUSTER_EXAMPLE)]
    Cluster(Box<ClusterArgs>),
}

const CLUSTER_HELP: &str = "\
Remove what `register cluster` created on the management side, and print what to delete at
the site.

Deleted, each only when it is there: the management Secret of renewable store credentials
(--token; named by the annotation airlock.dev/store-credentials, else <name>-store-credentials,
and only when airlock-publisher wrote it), the ClusterConfiguration and ClusterReports `ingest`
wrote for the cluster (only those airlock-publisher alone manages), and last the
SveltosCluster, with the report key, age recipient and every other annotation registration set.
The cluster's namespace, its bundles and reports in the store, and the keyring are left.

The puller at the site keeps what it applied until it is told otherwise: first run this
command with --final-bundle, which publishes, signed with --key, a bundle with no parts and the
signed setting decommission (bundles-format.md 2.5.5), and marks the SveltosCluster
(annotation airlock.dev/decommission) so `publish` and `watch` put nothing above it. The puller
that verifies it prunes everything it applied (only objects it created, as every prune), reports
it, and from then on does nothing but say so. Once `ingest` records that report (annotation
airlock.dev/decommissioned), run this command again without --final-bundle. Without the final
bundle, what the puller applied stays in place, as it is.

Exit codes: 0 done (or nothing left to do), 1 an error (the management cluster or the store
could not be read or written; run again).";

const CLUSTER_EXAMPLE: &str = "\
Example:
  airlock-publisher deregister cluster fleet/edge-1 --final-bundle \\
      --to oci://registry.example/airlock --key keys/ops-1.key
  # ... the site syncs and reports; airlock-publisher ingest records it ...
  airlock-publisher deregister cluster fleet/edge-1 --dry-run
  airlock-publisher deregister cluster fleet/edge-1 > edge-1-site-cleanup.sh";

#[derive(Debug, Clone, Args)]
struct ClusterArgs {
    /// The cluster, NAMESPACE/NAME.
    #[arg(value_name = "NS/NAME")]
    cluster: ClusterId,
    /// Check every delete with the API server (server-side dry run), publish nothing, and
    /// change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Publish the cluster's final bundle to --to instead, signed with --key: its puller
    /// prunes everything it applied and stops.
    #[arg(long, requires_all = ["to", "keys"])]
    final_bundle: bool,
    /// The store the cluster pulls from (as publish --to).
    #[arg(long, value_name = "STORE", requires = "final_bundle")]
    to: Option<String>,
    /// Private signing key, as publish --key; repeat for a threshold above 1.
    #[arg(long = "key", value_name = "FILE|URI", requires = "final_bundle")]
    keys: Vec<PathBuf>,
    /// The keyring the final bundle declares, as publish --keyring.
    #[arg(long, value_name = "FILE", requires = "final_bundle")]
    keyring: Option<PathBuf>,
    /// Keyring updates carried beside the final bundle, as publish --keyring-chain.
    #[arg(long = "keyring-chain", value_name = "FILE", requires = "final_bundle")]
    keyring_chain: Vec<PathBuf>,
    /// How long the final bundle stays valid: a site that pulls later refuses it as expired.
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = parse_duration)]
    expires_in: SignedDuration,
    /// The puller's namespace at the site, for what to delete there. Default: the
    /// SveltosCluster's annotation airlock.dev/puller-namespace, else airlock-system.
    #[arg(long, value_name = "NAMESPACE")]
    puller_namespace: Option<String>,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    kube: KubeArgs,
}

/// Runs `deregister ...`; returns the process exit code.
pub async fn run(cmd: DeregisterCommand) -> anyhow::Result<u8> {
    let Deregister::Cluster(args) = cmd.what;
    let client = args.kube.client().await.context("connecting to the management cluster")?;
    let cluster = &args.cluster;
    let [(resource, _), ..] = sveltos_kinds();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &resource);
    let object: Option<Value> = api
        .get_opt(cluster.name())
        .await
        .with_context(|| format!("reading SveltosCluster {cluster}"))?
        .map(|o| serde_json::to_value(o).expect("a Kubernetes object serialises"));
    if args.final_bundle {
        let object = object.with_context(|| format!("SveltosCluster {cluster}: not found; a final bundle goes to a registered cluster"))?;
        let to = args.to.as_deref().expect("clap requires --to with --final-bundle");
        let signer = crate::cmd::publish::open_signer(&args.keys, args.keyring.as_deref(), &args.keyring_chain, args.expires_in)?;
        let store = args.store.open(to).await?;
        let published = final_bundle::publish(&api, cluster, &object, &signer, &*store, args.dry_run).await?;
        println!("{published}");
        return Ok(exit::OK);
    }
    if let Some(object) = &object
        && object["metadata"]["annotations"][DECOMMISSIONED_ANNOTATION].is_null()
    {
        tracing::warn!(
            %cluster,
            "its puller has not reported a final bundle applied: what it applied stays at the site as it is \
             (run with --final-bundle first to have it pruned)"
        );
    }
    let deleted = management::delete(&client, cluster, object.as_ref(), args.dry_run).await?;
    for line in deleted {
        println!("{line}");
    }
    let puller_namespace = site::puller_namespace(args.puller_namespace.as_deref(), object.as_ref());
    print!("{}", site::instructions(cluster, &puller_namespace, object.as_ref()));
    Ok(exit::OK)
}
