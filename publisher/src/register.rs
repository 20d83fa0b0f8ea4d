//! `airlock-publisher register cluster`: enrols a pull-mode cluster. It creates the
//! `SveltosCluster` on the management side (server-side apply, or a file for Git-kept
//! management sets) and prints what the managed cluster must apply to start pulling.
//!
//! Flags are checked into a `settings::Registration` first and the registration YAML is built
//! (`manifests`, `rbac`) before anything is written, so bad input leaves no half-registered
//! cluster. This module does not publish bundles, and it never connects to the managed
//! cluster: an operator or a site technician applies the printed YAML there.

mod manifests;
mod rbac;
mod settings;
#[cfg(test)]
mod tests;

use std::path::Path;

use airlock::ClusterId;
use airlock::cli::{KubeArgs, exit};
use airlock::store::StoreRef;
use anyhow::Context;
use clap::{Args, Subcommand};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::ingest::REPORT_KEY_ANNOTATION;
use settings::{ClusterFlags, Registration};

/// Field manager of the SveltosClusters this command applies (and `ingest` updates).
pub const FIELD_MANAGER: &str = "airlock-publisher";
/// Sveltos's annotation; the publisher relays it into the cluster's signed bundle.
const WATCH_NAMESPACES_ANNOTATION: &str = "agent.projectsveltos.io/watch-namespaces";

/// Register a cluster with the management side.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Example:\n  airlock-publisher register cluster --namespace fleet --cluster edge-1 --pullmode \\\n      \
                        --labels region=eu --source oci://registry.example/airlock --keyring keys/keyring.json")]
pub struct RegisterCommand {
    #[command(subcommand)]
    what: Register,
}

#[derive(Debug, Clone, Subcommand)]
enum Register {
    /// Create a pull-mode SveltosCluster and print the YAML that makes the cluster pull.
    #[command(long_about = CLUSTER_HELP, after_help = CLUSTER_EXAMPLE)]
    Cluster(ClusterArgs),
}

const CLUSTER_HELP: &str = "\
Create a pull-mode SveltosCluster and print the YAML that makes the cluster pull.

The SveltosCluster (spec.pullMode: true, the labels, and the annotations
agent.projectsveltos.io/watch-namespaces and airlock.dev/report-key) is server-side applied to
the management cluster, or with --to-dir written to DIR/<namespace>.<name>.sveltoscluster.yaml
for `publish --from-dir`. Running it again updates the labels and annotations.

Each registration makes the cluster an ed25519 report key (or keeps --report-key-file): its
puller signs its status reports with the private half, and `airlock-publisher ingest` accepts
only reports that verify with the public half, recorded in the annotation
airlock.dev/report-key. Registering again without --report-key-file replaces the key, so apply
the new YAML on the cluster too.

Stdout gets the registration YAML for the managed cluster: the puller's namespace,
ServiceAccount and RBAC, a ConfigMap with the keyring and settings, a Secret with the registry
credentials (when given), the Secret airlock-report-key with the report key (mounted at
/etc/airlock/report-key/report.key), a metrics Service, and the CronJob that runs
`airlock-puller sync`. Apply it there with `kubectl apply -f`. The YAML holds a private key:
keep it like a Secret.

Without --watch-namespaces the puller gets a ClusterRole with every verb on every resource, as
Sveltos's agents do. With it, namespaced kinds are granted only by Roles in the listed
namespaces (which the YAML creates), plus reading namespaces, managing CRDs and discovery.

The watch-namespaces annotation travels inside the cluster's signed bundles: editing it on the
SveltosCluster later re-scopes the puller on its next run, with no visit to the site (re-apply
this command's YAML as well when the list grows, so the puller gets the matching Roles).";

const CLUSTER_EXAMPLE: &str = "\
Example:
  airlock-publisher register cluster --namespace fleet --cluster edge-1 --pullmode \\
      --labels region=eu,tier=prod --watch-namespaces web,monitoring \\
      --source oci://registry.example/airlock --keyring keys/keyring.json \\
      --registry-username puller --registry-password-file puller.password \\
      --cronjob-api batch/v1beta1 > edge-1-registration.yaml
  kubectl --context edge-1 apply -f edge-1-registration.yaml";

#[derive(Debug, Clone, Args)]
struct ClusterArgs {
    #[command(flatten)]
    flags: ClusterFlags,
    #[command(flatten)]
    kube: KubeArgs,
}

/// Runs `register ...`; returns the process exit code.
pub async fn run(cmd: RegisterCommand) -> anyhow::Result<u8> {
    let Register::Cluster(args) = cmd.what;
    let reg = args.flags.check()?;
    let yaml = manifests::registration_yaml(&reg)?;
    let local = match &reg.source {
        StoreRef::OciLayout(path) | StoreRef::OciArchive(path) => Some(path.display().to_string()),
        StoreRef::Git { url, .. } if url.starts_with("file://") => Some(url.clone()),
        _ => None,
    };
    if let Some(path) = local {
        tracing::warn!(%path, "the source is a local path: mount it into the CronJob's pod yourself");
    }
    let object = sveltos_cluster(&reg);
    match &args.flags.to_dir {
        Some(dir) => write_to_dir(dir, &reg.cluster, &object)?,
        None => apply(&args.kube, &reg.cluster, &object).await?,
    }
    print!("{yaml}");
    Ok(exit::OK)
}

fn sveltos_cluster(reg: &Registration) -> Value {
    // The comment names the cluster for whoever copies the key out of the annotation.
    let mut annotations = json!({ REPORT_KEY_ANNOTATION: reg.report_key.public.to_openssh(&reg.cluster.to_string()) });
    if let Some(watched) = &reg.watch_namespaces {
        annotations[WATCH_NAMESPACES_ANNOTATION] = watched.join(",").into();
    }
    let metadata = json!({
        "name": reg.cluster.name(),
        "namespace": reg.cluster.namespace(),
        "labels": reg.labels,
        "annotations": annotations,
    });
    json!({
        "apiVersion": "lib.projectsveltos.io/v1beta1",
        "kind": "SveltosCluster",
        "metadata": metadata,
        "spec": {"pullMode": true},
    })
}

fn write_to_dir(dir: &Path, cluster: &ClusterId, object: &Value) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let path = dir.join(format!("{}.{}.sveltoscluster.yaml", cluster.namespace(), cluster.name()));
    std::fs::write(&path, serde_saphyr::to_string(object)?).with_context(|| format!("{}: cannot write", path.display()))?;
    tracing::info!(cluster = %cluster, path = %path.display(), "SveltosCluster written");
    Ok(())
}

async fn apply(kube: &KubeArgs, cluster: &ClusterId, object: &Value) -> anyhow::Result<()> {
    let client = kube.client().await.context("connecting to the management cluster")?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(cluster.namespace()).await.context("reading the cluster's namespace")?.is_none() {
        let namespace = Namespace {
            metadata: ObjectMeta { name: Some(cluster.namespace().to_string()), ..Default::default() },
            ..Default::default()
        };
        namespaces.create(&PostParams::default(), &namespace).await.context("creating the cluster's namespace")?;
        tracing::info!(namespace = cluster.namespace(), "namespace created");
    }
    let gvk = GroupVersionKind::gvk("lib.projectsveltos.io", "v1beta1", "SveltosCluster");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "sveltosclusters");
    let api: Api<DynamicObject> = Api::namespaced_with(client, cluster.namespace(), &resource);
    match api.patch(cluster.name(), &PatchParams::apply(FIELD_MANAGER), &Patch::Apply(object)).await {
        Ok(_) => {
            tracing::info!(cluster = %cluster, "SveltosCluster applied");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => Err(anyhow::anyhow!(
            "SveltosCluster {cluster}: the management cluster does not serve lib.projectsveltos.io/v1beta1 \
             SveltosCluster; install the CRDs first (kubectl apply --server-side -f hack/crds/)"
        )),
        Err(kube::Error::Api(status)) if status.is_conflict() => Err(anyhow::anyhow!(
            "SveltosCluster {cluster}: another field manager owns a field this command sets (edited by hand?); \
             change it with that tool, or remove its field ownership: {}",
            status.message
        )),
        Err(e) => Err(e).with_context(|| format!("applying SveltosCluster {cluster}")),
    }
}
