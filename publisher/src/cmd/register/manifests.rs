//! The registration YAML for a managed cluster: the puller's namespace, identity, settings,
//! credentials, report signing key, age identity, metrics Service and CronJob, plus the RBAC
//! from `rbac`;
//! what every one of them carries is `objects`'.
//! Built from k8s-openapi types and serialised with serde-saphyr, so the output is valid and
//! the same input always gives the same bytes. Nothing here talks to a cluster.

use std::collections::BTreeMap;

use airlock_bundle::vocabulary::{CLUSTER_ANNOTATION, EXPIRES_AT_ANNOTATION};
use airlock_store::StoreRef;
use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapProjection, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, HostPathVolumeSource, KeyToPath,
    Namespace, PodDNSConfig, PodSecurityContext, PodSpec, PodTemplateSpec, ProjectedVolumeSource, ResourceRequirements, SeccompProfile,
    Secret, SecretProjection, SecretVolumeSource, SecurityContext, Service, ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
    VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;
use serde_json::Value;

use super::containment::POD_SECURITY_ENFORCE;
use super::objects::{PULLER, doc, meta};
use super::rbac;
use super::settings::Registration;
use crate::render::credentials::{CREDENTIALS_SECRET, EXPIRES_AT_KEY, Login};

/// The Secret with the cluster's report signing key, and its data key.
pub const REPORT_KEY_SECRET: &str = "airlock-report-key";
const REPORT_KEY_FILE: &str = "report.key";
const CONFIG_DIR: &str = "/etc/airlock";
/// Where the report key appears, inside the config volume (see `pod_template`).
const REPORT_KEY_DIR: &str = "report-key";
/// The Secret with the cluster's age identity file, and its data key.
pub const AGE_IDENTITY_SECRET: &str = "airlock-age-identity";
const AGE_IDENTITY_FILE: &str = "identity.txt";
/// Where the age identity file appears, inside the config volume.
const AGE_IDENTITY_DIR: &str = "age";
const REPORT_DIR: &str = "/var/lib/airlock/reports";
/// `$DOCKER_CONFIG`: the store client reads `config.json` there (spec 9.2).
const DOCKER_CONFIG_DIR: &str = "/var/lib/airlock/docker";
/// Where the Git logins appear; `$AIRLOCK_GIT_CREDENTIALS` names the file in it.
const GIT_CREDENTIALS_DIR: &str = "/var/lib/airlock/git";
const METRICS_PORT: i32 = 9090;
/// `$AIRLOCK_CACHE` of a Git store's puller: its bare clone of the repository.
const GIT_CACHE_DIR: &str = "/var/lib/airlock/cache";
/// A bare clone holds every cluster's bundles of the branch, which the puller cannot
/// bound; this bounds what a runaway repository costs the node.
const GIT_CACHE_SIZE: &str = "1Gi";
/// The `nonroot` user of distroless-style images; any non-zero id would do.
const PULLER_UID: i64 = 65532;

/// The puller's settings file, `config.json` in its ConfigMap. The puller parses exactly
/// this shape.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PullerConfig<'a> {
    source: String,
    cluster: String,
    keyring: String,
    /// `null` when the puller may write in every namespace.
    watch_namespaces: Option<&'a [String]>,
    namespace_policy: &'a str,
    state_namespace: &'a str,
    report_to: &'a str,
    report_key: String,
    /// Every store kind but a carried archive keeps reports (spec 14.7).
    push_reports: bool,
    report_every: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_duration: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    protect_namespace_keys: &'a [String],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    allow_endpoints: bool,
}

/// The registration YAML: documents separated by `---`, in an order `kubectl apply -f`
/// accepts (namespaces before what lives in them).
pub fn registration_yaml(reg: &Registration) -> anyhow::Result<String> {
    Ok(serde_saphyr::to_string_multiple(&documents(reg)?)?)
}

pub fn documents(reg: &Registration) -> Result<Vec<Value>, serde_json::Error> {
    let ns = reg.puller_namespace.as_str();
    let mut docs = Vec::new();
    docs.push(doc(&Namespace { metadata: meta(ns, None), ..Default::default() })?);
    // The watched namespaces are created here because their Roles must live in them. They
    // belong to the workloads, so they do not carry the puller's labels; the Pod Security
    // level is the operator's, which no bundle may change.
    let pod_security =
        reg.containment.pod_security.map(|level| BTreeMap::from([(POD_SECURITY_ENFORCE.to_string(), level.level().to_string())]));
    for name in reg.watch_namespaces.iter().flatten() {
        let metadata = ObjectMeta { name: Some(name.clone()), labels: pod_security.clone(), ..Default::default() };
        docs.push(doc(&Namespace { metadata, ..Default::default() })?);
    }
    docs.push(doc(&ServiceAccount { metadata: meta(PULLER, Some(ns)), ..Default::default() })?);
    docs.extend(rbac::documents(reg)?);
    docs.push(doc(&config_map(reg)?)?);
    docs.push(doc(&Secret {
        metadata: meta(REPORT_KEY_SECRET, Some(ns)),
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(REPORT_KEY_FILE.to_string(), ByteString(reg.report_key.private_pem.clone().into_bytes()))])),
        ..Default::default()
    })?);
    if let Some(age) = &reg.age {
        docs.push(doc(&Secret {
            metadata: meta(AGE_IDENTITY_SECRET, Some(ns)),
            type_: Some("Opaque".into()),
            data: Some(BTreeMap::from([(AGE_IDENTITY_FILE.to_string(), ByteString(age.file_text().into_bytes()))])),
            ..Default::default()
        })?);
    }
    if let Some(login) = &reg.login {
        docs.push(doc(&credentials_secret(reg, login))?);
    }
    docs.push(doc(&metrics_service(ns))?);
    let mut cron_job = doc(&cron_job(reg))?;
    // k8s-openapi only knows batch/v1; the v1beta1 CronJob has the same fields we set.
    cron_job["apiVersion"] = reg.cronjob_api.api_version().into();
    docs.push(cron_job);
    Ok(docs)
}

/// The puller's store logins. With `--token` it also says when they expire, in the same
/// shape as the copies the publisher relays later (spec 2.6), which replace it.
fn credentials_secret(reg: &Registration, login: &Login) -> Secret {
    let mut metadata = meta(CREDENTIALS_SECRET, Some(&reg.puller_namespace));
    let mut data = BTreeMap::from([(login.key().to_string(), ByteString(login.bytes().to_vec()))]);
    if let Some(token) = &reg.token {
        let expires = token.expires_at.to_string();
        metadata.annotations = Some(BTreeMap::from([(EXPIRES_AT_ANNOTATION.to_string(), expires.clone())]));
        data.insert(EXPIRES_AT_KEY.to_string(), ByteString(expires.into_bytes()));
    }
    Secret { metadata, type_: Some(login.secret_type().into()), data: Some(data), ..Default::default() }
}

fn selector() -> BTreeMap<String, String> {
    BTreeMap::from([("app.kubernetes.io/name".to_string(), PULLER.to_string())])
}

fn config_map(reg: &Registration) -> Result<ConfigMap, serde_json::Error> {
    let config = PullerConfig {
        source: reg.source.to_string(),
        cluster: reg.cluster.to_string(),
        keyring: format!("{CONFIG_DIR}/keyring.json"),
        watch_namespaces: reg.watch_namespaces.as_deref(),
        namespace_policy: "reject",
        state_namespace: &reg.puller_namespace,
        report_to: REPORT_DIR,
        report_key: format!("{CONFIG_DIR}/{REPORT_KEY_DIR}/{REPORT_KEY_FILE}"),
        push_reports: !matches!(reg.source, StoreRef::OciArchive(_)),
        report_every: &reg.report_every,
        lease_duration: reg.lease_duration.as_deref(),
        protect_namespace_keys: &reg.containment.protected_keys,
        allow_endpoints: reg.containment.allow_endpoints,
    };
    let config = serde_json::to_string_pretty(&config)? + "\n";
    Ok(ConfigMap {
        metadata: meta(PULLER, Some(&reg.puller_namespace)),
        data: Some(BTreeMap::from([("config.json".to_string(), config), ("keyring.json".to_string(), reg.keyring.clone())])),
        ..Default::default()
    })
}

fn metrics_service(ns: &str) -> Service {
    let mut metadata = meta(PULLER, Some(ns));
    metadata.annotations = Some(BTreeMap::from([
        ("prometheus.io/port".to_string(), METRICS_PORT.to_string()),
        ("prometheus.io/scrape".to_string(), "true".to_string()),
    ]));
    Service {
        metadata,
        spec: Some(ServiceSpec {
            selector: Some(selector()),
            ports: Some(vec![ServicePort {
                name: Some("metrics".into()),
                port: METRICS_PORT,
                target_port: Some(IntOrString::String("metrics".into())),
                // Explicit: Kubernetes 1.20's server-side apply refuses a port without it.
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn cron_job(reg: &Registration) -> CronJob {
    let mut metadata = meta(PULLER, Some(&reg.puller_namespace));
    metadata.annotations = Some(BTreeMap::from([(CLUSTER_ANNOTATION.to_string(), reg.cluster.to_string())]));
    CronJob {
        metadata,
        spec: Some(CronJobSpec {
            schedule: reg.schedule.clone(),
            // Two pullers never apply at once (the Lease is the second guard).
            concurrency_policy: Some("Forbid".into()),
            // Runs missed while the controller was down are skipped, not replayed in a burst.
            starting_deadline_seconds: Some(300),
            successful_jobs_history_limit: Some(3),
            failed_jobs_history_limit: Some(3),
            job_template: JobTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(selector()), ..Default::default() }),
                spec: Some(JobSpec {
                    // The next scheduled run is the retry.
                    backoff_limit: Some(0),
                    // A hung run would otherwise block every later one (Forbid).
                    active_deadline_seconds: Some(1800),
                    template: pod_template(reg),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod_template(reg: &Registration) -> PodTemplateSpec {
    let mount = |name: &str, path: &str, read_only: bool| VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: Some(read_only),
        ..Default::default()
    };
    let scratch = |name: &str| Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource { size_limit: Some(Quantity("64Mi".into())), ..Default::default() }),
        ..Default::default()
    };
    // One projected volume rather than the Secret mounted below the ConfigMap: a mount
    // point inside a read-only mount cannot be created by the container runtime.
    let secret_file = |secret: &str, key: &str, dir: &str| VolumeProjection {
        secret: Some(SecretProjection {
            name: secret.into(),
            items: Some(vec![KeyToPath {
                key: key.into(),
                path: format!("{dir}/{key}"),
                // Readable through fsGroup by the non-root puller, by nobody else.
                mode: Some(0o440),
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut config = vec![
        VolumeProjection { config_map: Some(ConfigMapProjection { name: PULLER.into(), ..Default::default() }), ..Default::default() },
        secret_file(REPORT_KEY_SECRET, REPORT_KEY_FILE, REPORT_KEY_DIR),
    ];
    let mut args = vec!["sync".to_string(), "--config".into(), format!("{CONFIG_DIR}/config.json")];
    if reg.age.is_some() {
        config.push(secret_file(AGE_IDENTITY_SECRET, AGE_IDENTITY_FILE, AGE_IDENTITY_DIR));
        args.extend(["--age-identity".into(), format!("{CONFIG_DIR}/{AGE_IDENTITY_DIR}/{AGE_IDENTITY_FILE}")]);
    }
    let mut volumes = vec![
        Volume {
            name: "config".into(),
            projected: Some(ProjectedVolumeSource { sources: Some(config), ..Default::default() }),
            ..Default::default()
        },
        scratch("tmp"),
        scratch("reports"),
    ];
    let mut mounts = vec![mount("config", CONFIG_DIR, true), mount("tmp", "/tmp", false), mount("reports", REPORT_DIR, false)];
    let mut env = vec![EnvVar { name: "AIRLOCK_LOG_FORMAT".into(), value: Some("json".into()), ..Default::default() }];
    if let Some(path) = &reg.host_path {
        // The same path inside the pod as on the node, so the settings' --source is right in both.
        let archive = matches!(reg.source, StoreRef::OciArchive(_));
        let kind = if archive { "File" } else { "Directory" };
        let path = path.display().to_string();
        volumes.push(Volume {
            name: "store".into(),
            host_path: Some(HostPathVolumeSource { path: path.clone(), type_: Some(kind.into()) }),
            ..Default::default()
        });
        mounts.push(mount("store", &path, archive));
    }
    if let StoreRef::Git { .. } = reg.source {
        // The Git store's bare cache (`$AIRLOCK_CACHE`), outside the read-only root.
        volumes.push(Volume {
            name: "git-cache".into(),
            empty_dir: Some(EmptyDirVolumeSource { size_limit: Some(Quantity(GIT_CACHE_SIZE.into())), ..Default::default() }),
            ..Default::default()
        });
        mounts.push(mount("git-cache", GIT_CACHE_DIR, false));
        env.push(EnvVar { name: "AIRLOCK_CACHE".into(), value: Some(GIT_CACHE_DIR.into()), ..Default::default() });
    }
    if let Some(login) = &reg.login {
        // The store client finds registry logins as `$DOCKER_CONFIG/config.json`, the
        // puller Git logins in the file `$AIRLOCK_GIT_CREDENTIALS`; `expires-at` sits beside.
        let (dir, file, variable, value) = match login {
            Login::Docker(_) => (DOCKER_CONFIG_DIR, "config.json", "DOCKER_CONFIG", DOCKER_CONFIG_DIR.to_string()),
            Login::Git(_) => {
                (GIT_CREDENTIALS_DIR, login.key(), "AIRLOCK_GIT_CREDENTIALS", format!("{GIT_CREDENTIALS_DIR}/{}", login.key()))
            }
        };
        let item = |key: &str, path: &str| KeyToPath { key: key.into(), path: path.into(), mode: None };
        let mut items = vec![item(login.key(), file)];
        // Only renewed credentials have the key: a missing one would keep the pod from starting.
        if reg.token.is_some() {
            items.push(item(EXPIRES_AT_KEY, EXPIRES_AT_KEY));
        }
        // Mounted whole, not by subPath: a long-running puller sees renewed credentials
        // too, and every CronJob pod reads the Secret as it is when the pod starts.
        volumes.push(Volume {
            name: "store-credentials".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(CREDENTIALS_SECRET.into()),
                items: Some(items),
                // Readable through fsGroup by the non-root puller, by nobody else.
                default_mode: Some(0o440),
                ..Default::default()
            }),
            ..Default::default()
        });
        mounts.push(mount("store-credentials", dir, true));
        env.push(EnvVar { name: variable.into(), value: Some(value), ..Default::default() });
    }
    let quantities = |cpu: &str, memory: &str| {
        Some(BTreeMap::from([("cpu".to_string(), Quantity(cpu.into())), ("memory".to_string(), Quantity(memory.into()))]))
    };
    let container = Container {
        name: "puller".into(),
        image: Some(reg.image.clone()),
        command: Some(vec![PULLER.into()]),
        args: Some(args),
        env: Some(env),
        // On the host network a container port is a host port, which two pullers on one
        // node (two fleets) cannot share; `sync` serves no metrics anyway.
        ports: (!reg.host_network).then(|| {
            vec![ContainerPort {
                name: Some("metrics".into()),
                container_port: METRICS_PORT,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]
        }),
        // Bundles hold up to 256 MiB of manifests (spec 10); typical ones need far less.
        resources: Some(ResourceRequirements {
            requests: quantities("50m", "64Mi"),
            limits: quantities("1", "512Mi"),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(PULLER_UID),
            run_as_group: Some(PULLER_UID),
            read_only_root_filesystem: Some(true),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities { drop: Some(vec!["ALL".into()]), ..Default::default() }),
            ..Default::default()
        }),
        volume_mounts: Some(mounts),
        ..Default::default()
    };
    PodTemplateSpec {
        metadata: Some(ObjectMeta { labels: Some(selector()), ..Default::default() }),
        spec: Some(PodSpec {
            service_account_name: Some(PULLER.into()),
            restart_policy: Some("Never".into()),
            security_context: Some(PodSecurityContext {
                fs_group: Some(PULLER_UID),
                seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), ..Default::default() }),
                ..Default::default()
            }),
            containers: vec![container],
            volumes: Some(volumes),
            host_network: reg.host_network.then_some(true),
            // A node without a pod network has no cluster DNS either: its own resolver.
            dns_policy: reg.host_network.then(|| "None".into()),
            dns_config: reg.host_network.then(|| PodDNSConfig { nameservers: Some(vec!["127.0.0.1".into()]), ..Default::default() }),
            ..Default::default()
        }),
    }
}
