//! The watch-namespaces policy for checks (spec 5.12), read from the signed predicate when
//! the manifests are, before any check runs or anything is written. A check reaches the
//! cluster as objects do, so it is held to the same namespaces:
//!
//! - a Job check's Job must be in a watched namespace (it is created, and one of its name
//!   deleted);
//! - the objects a check lists must be in a watched namespace, but for Namespaces and
//!   CustomResourceDefinitions, the only kinds the contained grant lists cluster-wide: a
//!   script sees what it lists, and its message reaches the report;
//! - a metrics source must be a Service of a watched namespace, named
//!   `<service>.<namespace>[.svc[.<domain>]]`, and its credentials Secret must be in one:
//!   the puller sends that Secret's token to the source.
//!
//! The puller's own namespace is never watched here, as for objects. A check is never
//! filtered out (dropping a check would pass what it was meant to hold): each refusal
//! refuses the bundle. Entry point: [`refusals`].

use airlock_bundle::statement::{Check, ProfileEntry};

/// Kinds the contained grant lets the puller list cluster-wide: (group, kind).
const LISTED_CLUSTER_WIDE: [(&str, &str); 2] = [("", "Namespace"), ("apiextensions.k8s.io", "CustomResourceDefinition")];

/// Each of `profile`'s checks that reaches outside `watch` (or into `own`), as
/// `<list> "<name>" of <part>: <what>: <why>`.
pub fn refusals(profile: &ProfileEntry, watch: &[String], own: Option<&str>) -> Vec<String> {
    let inside = |namespace: &str| -> Result<(), String> {
        match namespace {
            "" => Err("no namespace".into()),
            ns if own == Some(ns) => Err(format!("namespace {ns} is the puller's own")),
            ns if watch.iter().any(|w| w == ns) => Ok(()),
            ns => Err(format!("namespace {ns} is outside watch-namespaces {}", watch.join(","))),
        }
    };
    let mut refused = Vec::new();
    for (list, check) in profile.checks.all() {
        for (what, why) in reaches(check).into_iter().filter_map(|(what, namespace)| Some((what, inside(&namespace?).err()?))) {
            refused.push(format!("{list} {:?} of {}: {what}: {why}", check.name, profile.name));
        }
    }
    refused
}

/// What `check` reaches, with the namespace it reaches into (None: none needed).
fn reaches(check: &Check) -> Vec<(String, Option<String>)> {
    let mut reached = Vec::new();
    if let Some(job) = &check.job {
        let field = |f: &str| job.manifest.pointer(&format!("/metadata/{f}")).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        let (namespace, name) = (field("namespace"), field("name"));
        reached.push((format!("Job {namespace}/{name}"), Some(namespace)));
    }
    if let Some(objects) = &check.objects {
        let cluster_wide = LISTED_CLUSTER_WIDE.contains(&(objects.group.as_str(), objects.kind.as_str()));
        let namespace = objects.namespace.clone().unwrap_or_default();
        reached.push((format!("objects of kind {}", objects.kind), (!cluster_wide).then_some(namespace)));
    }
    if let Some(metrics) = &check.metrics {
        let namespace = service_namespace(&metrics.url).unwrap_or_default();
        reached.push((format!("metrics source {}", metrics.url), Some(namespace)));
        if let Some(secret) = &metrics.secret {
            reached.push((format!("Secret {}/{}", secret.namespace, secret.name), Some(secret.namespace.clone())));
        }
    }
    reached
}

/// The namespace of the Service a URL names, `<service>.<namespace>`, optionally followed by
/// `.svc` and the cluster's domain; None for any other host (an address, another name).
fn service_namespace(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    // `domain` is None for an IP address.
    let labels: Vec<&str> = url.domain()?.split('.').collect();
    match labels.as_slice() {
        [_, namespace] => Some(namespace.to_string()),
        [_, namespace, "svc", ..] => Some(namespace.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use airlock_bundle::statement::{Checks, JobCheck, MetricQuery, Metrics, SecretName, Selection};
    use serde_json::json;

    use super::*;

    fn check(name: &str) -> Check {
        Check { name: name.into(), feature: "Resources".into(), objects: None, script: None, cel: Vec::new(), metrics: None, job: None }
    }

    fn refused(pre_deploy: Vec<Check>) -> Vec<String> {
        let mut profile = crate::engine::testing::profile("ClusterProfile.p", &[]);
        profile.checks = Checks { pre_deploy, ..Checks::default() };
        refusals(&profile, &["web".into(), "api".into()], Some("airlock-system"))
    }

    fn job(namespace: &str) -> Check {
        let manifest = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": namespace}});
        Check { job: Some(JobCheck { manifest, timeout_seconds: 60 }), ..check("job") }
    }

    fn metrics(url: &str, secret: Option<&str>) -> Check {
        let secret = secret.map(|ns| SecretName { namespace: ns.into(), name: "prom".into() });
        let queries = vec![MetricQuery { name: "up".into(), query: "sum(up)".into() }];
        Check { metrics: Some(Metrics { url: url.into(), path: "api/v1/query".into(), secret, queries }), ..check("metrics") }
    }

    fn objects(kind: &str, namespace: Option<&str>) -> Check {
        let group = if kind == "CustomResourceDefinition" { "apiextensions.k8s.io" } else { "" };
        let selection = Selection {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: namespace.map(String::from),
            name: None,
            label_selector: String::new(),
        };
        Check { objects: Some(selection), ..check("objects") }
    }

    #[test]
    fn checks_inside_the_watched_namespaces_pass() {
        let inside = vec![
            job("web"),
            metrics("http://prometheus.web:9090", Some("web")),
            metrics("http://prometheus.api.svc.cluster.local:9090/", None),
            objects("Deployment", Some("api")),
            objects("Namespace", None),
            objects("CustomResourceDefinition", None),
        ];
        assert_eq!(refused(inside), Vec::<String>::new());
    }

    #[test]
    fn rejects_a_job_outside_the_watched_namespaces() {
        assert_eq!(
            refused(vec![job("kube-system")]),
            [
                r#"preDeployChecks "job" of ClusterProfile.p: Job kube-system/migrate: namespace kube-system is outside watch-namespaces web,api"#
            ]
        );
        assert!(refused(vec![job("airlock-system")])[0].ends_with("namespace airlock-system is the puller's own"));
        assert!(refused(vec![job("")])[0].ends_with(": no namespace"));
    }

    #[test]
    fn rejects_a_metrics_source_or_secret_outside_them() {
        for url in [
            "http://prometheus.monitoring.svc:9090",
            "http://10.0.0.9:9090",
            "http://127.0.0.1:9090",
            "https://metrics.example.com",
            "http://prometheus:9090",
            "not a url",
        ] {
            let why = refused(vec![metrics(url, None)]);
            assert_eq!(why.len(), 1, "{url}: {why:?}");
            assert!(why[0].contains(&format!("metrics source {url}: ")), "{why:?}");
        }
        let secret = refused(vec![metrics("http://prometheus.web:9090", Some("airlock-system"))]);
        assert_eq!(
            secret,
            [r#"preDeployChecks "metrics" of ClusterProfile.p: Secret airlock-system/prom: namespace airlock-system is the puller's own"#]
        );
    }

    #[test]
    fn rejects_objects_listed_outside_them() {
        let why =
            refused(vec![objects("Secret", Some("airlock-system")), objects("Deployment", None), objects("Pod", Some("kube-system"))]);
        assert_eq!(why.len(), 3, "{why:?}");
        assert!(why[0].ends_with("objects of kind Secret: namespace airlock-system is the puller's own"), "{why:?}");
        assert!(why[1].ends_with("objects of kind Deployment: no namespace"), "{why:?}");
    }
}
