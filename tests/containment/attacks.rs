//! The hostile bundles of `containment.rs`'s second test, and what they are judged by:
//! every object an attack aims at, read as `uid/resourceVersion` before and after.

use std::collections::BTreeMap;

use airlock_bundle::PartSettings;
use airlock_bundle::statement::{Check, Checks, JobCheck, MetricQuery, Metrics, SecretName};
use airlock_e2e::publisher::kubectl;

const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";

/// A file of the part `part`: its path and bytes.
pub type File = (String, Vec<u8>);

/// ConfigMap `name` in `ns`, holding `value`, with `annotations` (a YAML flow map's
/// inside, may be empty) and `labels` likewise.
pub fn config_map(part: &str, ns: &str, name: &str, value: &str, annotations: &str, labels: &str) -> File {
    let yaml = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations: {{{annotations}}}\n  labels: {{{labels}}}\ndata:\n  value: \"{value}\"\n"
    );
    (format!("{part}/ConfigMap.{ns}.{name}.yaml"), yaml.into_bytes())
}

/// The Namespace `name` with these labels and annotations (flow maps' insides).
pub fn namespace(name: &str, labels: &str, annotations: &str) -> File {
    let yaml =
        format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\n  annotations: {{{annotations}}}\n");
    (format!("ClusterProfile.app/Namespace.{name}.yaml"), yaml.into_bytes())
}

/// Endpoints `web` in `ns` sending the Service's traffic to `ip`.
pub fn endpoints(ns: &str, ip: &str) -> File {
    let yaml = format!(
        "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: web\n  namespace: {ns}\nsubsets:\n- addresses: [{{ip: {ip}}}]\n  ports: [{{port: 80}}]\n"
    );
    (format!("ClusterProfile.app/Endpoints.{ns}.web.yaml"), yaml.into_bytes())
}

/// An EndpointSlice of the Service `web` in `ns` sending its traffic to `ip`.
pub fn endpoint_slice(ns: &str, ip: &str) -> File {
    let yaml = format!(
        "apiVersion: discovery.k8s.io/v1beta1\nkind: EndpointSlice\nmetadata:\n  name: web-stolen\n  namespace: {ns}\n  labels: {{kubernetes.io/service-name: web}}\naddressType: IPv4\nendpoints:\n- addresses: [{ip}]\nports: [{{port: 80}}]\n"
    );
    (format!("ClusterProfile.app/EndpointSlice.{ns}.web-stolen.yaml"), yaml.into_bytes())
}

/// What an admin makes by hand before the attacks: objects Airlock did not create.
pub fn foreign_objects(ns: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: adoptee, namespace: {ns}}}\nimmutable: true\ndata: {{value: hand-made}}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: {ns}}}\nspec: {{ports: [{{port: 80}}]}}\n---\n\
         apiVersion: v1\nkind: Endpoints\nmetadata: {{name: web, namespace: {ns}}}\nsubsets: [{{addresses: [{{ip: 10.0.0.1}}], ports: [{{port: 80}}]}}]\n---\n\
         apiVersion: batch/v1\nkind: Job\nmetadata: {{name: migrate, namespace: {ns}}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: c, image: hand-made}}]\n"
    )
}

/// The hand-made ConfigMap that takes the place of Airlock's `name`: immutable, so any
/// change to it is refused as only a delete and create would resolve.
pub fn foreign_config_map(ns: &str, name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}}}\nimmutable: true\ndata: {{value: hand-made}}\n")
}

fn check(name: &str) -> Check {
    Check { name: name.into(), feature: "Resources".into(), objects: None, script: None, cel: Vec::new(), metrics: None, job: None }
}

/// A Job check running Job `ns/migrate`.
pub fn job_check(ns: &str) -> Check {
    let manifest = serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": ns},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "check"}]}}}});
    Check { job: Some(JobCheck { manifest, timeout_seconds: 5 }), ..check("migrate") }
}

/// A metrics check asking `url`, with the credentials of Secret `secret` if given.
pub fn metrics_check(url: &str, secret: Option<(&str, &str)>) -> Check {
    let secret = secret.map(|(namespace, name)| SecretName { namespace: namespace.into(), name: name.into() });
    let queries = vec![MetricQuery { name: "up".into(), query: "sum(up)".into() }];
    Check {
        metrics: Some(Metrics { url: url.into(), path: "api/v1/query".into(), secret, queries }),
        script: Some("function evaluate() return {healthy = true} end".into()),
        ..check("metrics")
    }
}

/// Part settings: the part `ClusterProfile.app` with these preDeploy checks, the part
/// `ClusterProfile.swap` forcing conflicts (so its update reaches validation).
pub fn parts(pre_deploy: Vec<Check>) -> impl Fn(&str) -> PartSettings {
    move |part| match part {
        "ClusterProfile.app" => {
            PartSettings { checks: Checks { pre_deploy: pre_deploy.clone(), ..Checks::default() }, ..PartSettings::default() }
        }
        "ClusterProfile.swap" => PartSettings { force_conflicts: true, ..PartSettings::default() },
        _ => PartSettings::default(),
    }
}

/// `uid/resourceVersion` of each object, `-` for one that is not there.
pub fn snapshot(objects: &[(&str, Option<&str>, &str)]) -> BTreeMap<String, String> {
    objects
        .iter()
        .map(|(resource, ns, name)| {
            let mut args = vec!["get", resource, name, "--ignore-not-found", "-o", "jsonpath={.metadata.uid}/{.metadata.resourceVersion}"];
            args.extend(ns.iter().flat_map(|ns| ["-n", ns]));
            let out = kubectl(MANAGED, &args, b"");
            assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (format!("{resource} {}/{name}", ns.unwrap_or_default()), if found.is_empty() { "-".into() } else { found })
        })
        .collect()
}

/// `kubectl` on the managed API server as the admin; its stdout. Panics unless it succeeds.
pub fn admin(args: &[&str], stdin: &str) -> String {
    let out = kubectl(MANAGED, args, stdin.as_bytes());
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
