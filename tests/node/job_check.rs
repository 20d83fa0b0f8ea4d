//! A `jobCheck` (spec 5.11) run by the real puller on the node: the check's Job runs to
//! Complete and the run is recorded; a Job that fails fails the run with the Job's reason,
//! and the next run runs it anew.

use airlock_bundle::PartSettings;
use airlock_bundle::statement::{Check, Checks, JobCheck};
use airlock_e2e::puller::{Signing, Site};
use airlock_e2e::{assert_exit, service_env};
use k8s_openapi::api::batch::v1::Job;
use kube::api::Api;
use serde_json::json;

use super::{host_network, wait_for_token};

/// A validateHealths Job check whose busybox exits with `code`.
fn job_check(site: &Site, code: u8) -> Signing {
    let container = json!({
        "name": "main", "image": service_env("AIRLOCK_NODE_BUSYBOX"), "imagePullPolicy": "Never",
        "command": ["sh", "-c", format!("echo checking; exit {code}")],
    });
    let manifest = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "smoke", "namespace": site.state_ns},
        "spec": {"backoffLimit": 0, "template": {"spec": host_network(json!([container]), json!({}))}},
    });
    let check = Check {
        name: "smoke-test".into(),
        feature: "Resources".into(),
        objects: None,
        script: None,
        cel: vec![],
        metrics: None,
        job: Some(JobCheck { manifest, timeout_seconds: 120 }),
    };
    let settings = PartSettings { checks: Checks { validate_healths: vec![check], ..Checks::default() }, ..PartSettings::default() };
    Signing { settings: Some(settings), ..Signing::default() }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_check_passes_when_its_job_completes_and_fails_with_the_jobs_reason() {
    let site = Site::on("jobcheck", service_env("AIRLOCK_KUBECONFIG_NODE")).await;
    // Until then the Job's pods are refused, and the Job controller backs off.
    wait_for_token(&site.client, &site.state_ns).await;
    site.publish("store", &[site.signed_as(1, site.files(1, "x"), job_check(&site, 0), |_| {})]).await;
    let passed = site.sync("store").await;
    assert_exit(&passed, 0);
    let jobs = Api::<Job>::namespaced(site.client.clone(), &site.state_ns);
    let complete = jobs.get("smoke").await.expect("the Job is left for its logs");
    assert_eq!(complete.status.and_then(|s| s.succeeded), Some(1));

    site.publish("store", &[site.signed_as(2, site.files(1, "x"), job_check(&site, 3), |_| {})]).await;
    let failed = site.sync("store").await;
    assert_exit(&failed, 1);
    assert!(
        failed.stderr.contains(&format!(r#"validateHealths "smoke-test": Job {}/smoke failed: BackoffLimitExceeded"#, site.state_ns)),
        "{failed:?}"
    );
    assert_eq!(site.state_version().await, Some(1), "the failed run recorded nothing");
    let rerun = jobs.get("smoke").await.expect("the failed Job");
    assert_eq!(rerun.status.and_then(|s| s.failed), Some(1), "a Job of its own, not the completed one");
}
