//! `airlock-publisher register cluster`: enrols a pull-mode cluster. It creates the
//! `SveltosCluster` on the management side (server-side apply, or a file for Git-kept
//! management sets) and prints what the managed cluster must apply to start pulling.
//!
//! Flags are checked into a `settings::Registration` first and the registration YAML is built
//! (`manifests`, `rbac`) before anything is written, so bad input leaves no half-registered
//! cluster. This module does not publish bundles, and it never connects to the managed
//! cluster: an operator or a site technician applies the printed YAML there.

mod age;
#[cfg(test)]
mod age_tests;
mod containment;
mod manifests;
mod objects;
#[cfg(test)]
mod pod_tests;
mod rbac;
mod settings;
mod tenants;
#[cfg(test)]
mod tests;
mod token;

pub(crate) use token::SECRET_SUFFIX;

use std::path::Path;

use airlock_bundle::ClusterId;
use airlock_bundle::vocabulary::{
    AGE_RECIPIENT_ANNOTATION, CLUSTER_SCOPED_ANNOTATION, PLAINTEXT_SECRETS_ALLOW, PLAINTEXT_SECRETS_ANNOTATION, REPORT_INTERVAL_ANNOTATION,
    REPORT_KEY_ANNOTATION,
};
use airlock_cli::{KubeArgs, exit};
use airlock_store::StoreRef;
use anyhow::Context;
use clap::{Args, Subcommand};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::annotations::FIELD_MANAGER;
use crate::sources::model::WATCH_NAMESPACES_ANNOTATION;
use settings::{ClusterFlags, Registration};

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
    Cluster(Box<ClusterArgs>),
}

const CLUSTER_HELP: &str = "\
Create a pull-mode SveltosCluster and print the YAML that makes the cluster pull.

The SveltosCluster (spec.pullMode: true, the labels, and the annotations
agent.projectsveltos.io/watch-namespaces, airlock.dev/report-key and airlock.dev/age-recipient)
is server-side applied to the management cluster, or with --to-dir written to
DIR/<namespace>.<name>.sveltoscluster.yaml for `publish --from-dir`. Running it again updates
the labels and annotations.

Each registration makes the cluster an ed25519 report key (or keeps --report-key-file): its
puller signs its status reports with the private half, and `airlock-publisher ingest` accepts
only reports that verify with the public half, recorded in the annotation
airlock.dev/report-key. Registering again without --report-key-file replaces the key, so apply
the new YAML on the cluster too.

Each registration also makes the cluster an age identity (or keeps the first identity of
--age-identity-file): `publish` and `watch` encrypt to its public half, recorded in the
annotation airlock.dev/age-recipient, every Secret of the cluster's bundles, every object of a
policyRefs source annotated airlock.dev/confidential: \"true\", and the relayed store
credentials, so the store, Git history and air-gap archives never hold them in clear. The
puller decrypts with the identity file in the Secret airlock-age-identity (mounted at
/etc/airlock/age/identity.txt, passed as --age-identity), and refuses a Secret that arrives in
clear unless the SveltosCluster has the annotation airlock.dev/plaintext-secrets: allow. To
rotate, register again without --age-identity-file and with --previous-age-identity-file OLD
(the old identity file): the new identity comes first in the Secret and the old one after it,
so bundles sealed before still decrypt, and the puller keeps the old one until a bundle for
the new one has applied. Bundles published before the site applies the new YAML are sealed to
an identity it does not have yet, and refused there until then: to avoid that gap, make the new
identity with age-keygen first, register with --age-identity-file OLD
--previous-age-identity-file NEW, apply at the site, then register with --age-identity-file
NEW --previous-age-identity-file OLD. Registering again with neither flag replaces the
identity outright. With --no-encryption the cluster gets no identity and no recipient, but the annotation
airlock.dev/plaintext-secrets: allow, and its Secrets in clear. A SveltosCluster with neither
annotation gets no Secret at all: `publish` fails each profile that would carry one in clear,
and the whole cluster when relayed store credentials or a kept part would.

Stdout gets the registration YAML for the managed cluster: the puller's namespace,
ServiceAccount and RBAC, a ConfigMap with the keyring and settings, a Secret with the store
credentials (when given: registry logins mounted as $DOCKER_CONFIG/config.json, Git logins
from --git-username in git-credential-store format as the file $AIRLOCK_GIT_CREDENTIALS),
the Secret airlock-report-key with the report key (mounted at
/etc/airlock/report-key/report.key), the Secret airlock-age-identity (unless
--no-encryption), a metrics Service, and the CronJob that runs `airlock-puller sync`. Apply it
there with `kubectl apply -f`. The YAML holds private keys: keep it like a Secret.

The puller also sends its signed reports to the store (not to an oci-archive:), beside its
bundles, whenever they are news and at least every --report-every; `airlock-publisher watch`
(or `ingest --from STORE`) reads them there. Give it store credentials that read its own
bundles and write its own reports only (bundles-format.md 14.7). A local --source
(oci-layout:, oci-archive:, git+file://) reaches the pod with --mount-host-path; a node
without a pod network (hack/node.sh) needs --host-network.

Without --watch-namespaces the puller gets a ClusterRole with every verb on every resource, as
Sveltos's agents do. With it, the puller is contained (bundles-format.md 5.12): Roles in the
listed namespaces (which the YAML creates) grant the ordinary verbs on the core and built-in
kinds, never impersonate, bind, escalate or serviceaccounts/token; cluster-wide it reads
namespaces, CRDs and discovery, and writes only the objects --allow-cluster-scoped names (and
creates objects of their kinds: RBAC cannot name what is created). The list may not name the
puller's own namespace.

The watch-namespaces annotation travels inside the cluster's signed bundles: editing it on the
SveltosCluster later re-scopes the puller on its next run, with no visit to the site (re-apply
this command's YAML as well when the list grows, so the puller gets the matching Roles).

Store credentials are long-lived by default: they reach the cluster in the YAML only. With
--token they are short-lived and renewed: registration also writes the management Secret
<cluster>-store-credentials (--credentials-secret) in the cluster's namespace, type
kubernetes.io/dockerconfigjson with key .dockerconfigjson for a registry, or Opaque with key
git-credentials for a Git store, and the annotation airlock.dev/expires-at (from
--token-expires-at or --token-ttl), and points the SveltosCluster at it (annotations
airlock.dev/store-credentials and airlock.dev/puller-namespace). Whatever renews the
credentials (a Vault or ECR rotator, an operator) updates that Secret and its expiry; `publish`
and `watch` relay it inside the cluster's signed bundle as the Secret airlock-store-credentials
of the puller's namespace, warn when it expires within --renew-before, and fail the cluster
once it has expired. The puller's next run uses the new credentials. The relayed Secret is
encrypted to the cluster (in clear with --no-encryption); still give each cluster credentials
that read its own repository only. With --to-dir the Secret is written beside the
SveltosCluster: it holds a credential, so keep it out of plain Git.";

const CLUSTER_EXAMPLE: &str = "\
Example:
  airlock-publisher register cluster --namespace fleet --cluster edge-1 --pullmode \\
      --labels region=eu,tier=prod --watch-namespaces web,monitoring \\
      --source oci://registry.example/airlock --keyring keys/keyring.json \\
      --registry-username puller --registry-password-file puller.password \\
      --cronjob-api batch/v1beta1 > edge-1-registration.yaml
  kubectl --context edge-1 apply -f edge-1-registration.yaml

  # Credentials that expire in 30 days, renewed through the management Secret:
  airlock-publisher register cluster --namespace fleet --cluster edge-2 --pullmode \\
      --source oci://registry.example/airlock --keyring keys/keyring.json \\
      --registry-username edge-2 --registry-password-file edge-2.token --token --token-ttl 30d

  # The same for a Git store (no credentials in the --source URL):
  airlock-publisher register cluster --namespace fleet --cluster edge-3 --pullmode \\
      --source git+http://git.example:8418/fleet.git#main --keyring keys/keyring.json \\
      --git-username edge-3 --git-password-file edge-3.token --token --token-ttl 30d

  # Keep the cluster's age identity (saved from its Secret airlock-age-identity), or rotate
  # it, keeping the old one until the puller has moved on:
  airlock-publisher register cluster --namespace fleet --cluster edge-1 --pullmode \\
      --source oci://registry.example/airlock --keyring keys/keyring.json \\
      --age-identity-file edge-1.age          # or --previous-age-identity-file edge-1.age";

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
    if let Some(path) = local.filter(|_| reg.host_path.is_none()) {
        tracing::warn!(%path, "the source is a local path: mount it into the CronJob's pod yourself, or give --mount-host-path");
    }
    if let Some(age) = &reg.age {
        let previous: Vec<String> = age.previous().iter().map(ToString::to_string).collect();
        tracing::info!(cluster = %reg.cluster, recipient = %age.recipient(), ?previous, "the cluster's bundles are encrypted to its age identity");
    }
    let objects = management_objects(&reg);
    match &args.flags.to_dir {
        Some(dir) => write_to_dir(dir, &objects)?,
        None => apply(&args.kube, &reg.cluster, &objects).await?,
    }
    print!("{yaml}");
    Ok(exit::OK)
}

/// What registration writes on the management side, in the order to write it: the
/// credentials Secret (with `--token`) before the SveltosCluster that points at it, so a
/// publisher never sees the pointer without the Secret.
fn management_objects(reg: &Registration) -> Vec<Value> {
    let secret = match (&reg.token, &reg.login) {
        (Some(token), Some(login)) => Some(token::management_secret(token, &reg.cluster, login)),
        _ => None,
    };
    secret.into_iter().chain([sveltos_cluster(reg)]).collect()
}

fn sveltos_cluster(reg: &Registration) -> Value {
    // The comment names the cluster for whoever copies the key out of the annotation.
    let mut annotations = json!({
        REPORT_KEY_ANNOTATION: reg.report_key.public.to_openssh(&reg.cluster.to_string()),
        REPORT_INTERVAL_ANNOTATION: reg.report_every,
    });
    if let Some(watched) = &reg.watch_namespaces {
        annotations[WATCH_NAMESPACES_ANNOTATION] = watched.join(",").into();
    }
    if !reg.cluster_scoped.is_empty() {
        annotations[CLUSTER_SCOPED_ANNOTATION] = reg.cluster_scoped.iter().map(ToString::to_string).collect::<Vec<_>>().join(",").into();
    }
    // Without an identity the publisher refuses the cluster's Secrets unless told, and
    // --no-encryption is that telling.
    match &reg.age {
        Some(age) => annotations[AGE_RECIPIENT_ANNOTATION] = age.recipient().to_string().into(),
        None => annotations[PLAINTEXT_SECRETS_ANNOTATION] = PLAINTEXT_SECRETS_ALLOW.into(),
    }
    for (key, value) in reg.token.iter().flat_map(|t| token::annotations(t, &reg.puller_namespace)) {
        annotations[key] = value.into();
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

/// Writes each object to `DIR/<namespace>.<name>.<kind>.yaml`.
fn write_to_dir(dir: &Path, objects: &[Value]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    for object in objects {
        let (kind, meta) = (object["kind"].as_str().unwrap_or_default(), &object["metadata"]);
        let (namespace, name) = (meta["namespace"].as_str().unwrap_or_default(), meta["name"].as_str().unwrap_or_default());
        let path = dir.join(format!("{namespace}.{name}.{}.yaml", kind.to_lowercase()));
        std::fs::write(&path, serde_saphyr::to_string(object)?).with_context(|| format!("{}: cannot write", path.display()))?;
        tracing::info!(object = %format!("{kind} {namespace}/{name}"), path = %path.display(), "written");
    }
    Ok(())
}

async fn apply(kube: &KubeArgs, cluster: &ClusterId, objects: &[Value]) -> anyhow::Result<()> {
    let client = kube.client().await.context("connecting to the management cluster")?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(cluster.namespace()).await.context("reading the cluster's namespace")?.is_none() {
        let namespace =
            Namespace { metadata: ObjectMeta { name: Some(cluster.namespace().to_string()), ..Default::default() }, ..Default::default() };
        namespaces.create(&PostParams::default(), &namespace).await.context("creating the cluster's namespace")?;
        tracing::info!(namespace = cluster.namespace(), "namespace created");
    }
    for object in objects {
        if object["kind"] == "Secret" {
            apply_secret(&client, cluster, object).await?;
        } else {
            apply_cluster(&client, cluster, object).await?;
        }
    }
    Ok(())
}

/// The credentials Secret, with force: the credentials given are the ones the registration
/// YAML hands the managed cluster, so they replace whatever a rotator wrote before.
async fn apply_secret(client: &kube::Client, cluster: &ClusterId, object: &Value) -> anyhow::Result<()> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(client.clone(), cluster.namespace());
    api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(object))
        .await
        .with_context(|| format!("applying Secret {}/{name}", cluster.namespace()))?;
    tracing::info!(secret = %format!("{}/{name}", cluster.namespace()), "store credentials Secret applied");
    Ok(())
}

async fn apply_cluster(client: &kube::Client, cluster: &ClusterId, object: &Value) -> anyhow::Result<()> {
    let gvk = GroupVersionKind::gvk("lib.projectsveltos.io", "v1beta1", "SveltosCluster");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "sveltosclusters");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &resource);
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
