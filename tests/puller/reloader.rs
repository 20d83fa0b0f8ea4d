//! The reloader (spec 5.10) across runs of the real binary: the digest of what a
//! Deployment mounts is kept in the state, a run that finds the bundle applied and a
//! mounted ConfigMap changed restarts the Deployment, and a run where nothing changed
//! leaves it as it is.

use airlock_bundle::PartSettings;
use airlock_bundle::vocabulary::RESTARTED_AT_ANNOTATION;
use airlock_e2e::assert_exit;
use airlock_e2e::puller::{Signing, Site, config_map_file};
use airlock_puller::engine::Action;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};

/// The application Namespace, the ConfigMap `settings` and a Deployment mounting it.
fn files(site: &Site) -> Vec<(String, Vec<u8>)> {
    let ns = &site.app_ns;
    let mut files = site.files(0, "");
    files.push(config_map_file("settings", ns, "one"));
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {ns}\nspec:\n  selector:\n    matchLabels: {{app: web}}\n  \
         template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.19\n      \
         volumes:\n      - name: settings\n        configMap: {{name: settings}}\n"
    );
    files.push((format!("ClusterProfile.app/Deployment.{ns}.web.yaml"), deployment.into_bytes()));
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_mounted_configmap_restarts_its_deployment_at_the_next_run() {
    let site = Site::new("reloader").await;
    let reloader = Signing { settings: Some(PartSettings { reloader: true, ..PartSettings::default() }), ..Signing::default() };
    site.publish("store", &[site.signed_as(1, files(&site), reloader, |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    assert_eq!(site.state().await.expect("state").mounted.len(), 1, "recorded on the apply");
    let deployments = Api::<Deployment>::namespaced(site.client.clone(), &site.app_ns);
    let restarted_at = || async {
        let web = deployments.get("web").await.expect("web");
        web.spec.and_then(|s| s.template.metadata).and_then(|m| m.annotations).and_then(|a| a.get(RESTARTED_AT_ANNOTATION).cloned())
    };
    assert_eq!(restarted_at().await, None);

    let quiet = site.sync("store").await;
    assert_exit(&quiet, 0);
    assert!(quiet.stdout.contains("up to date"), "{quiet:?}");
    assert_eq!(restarted_at().await, None, "nothing changed");
    let mounted = site.state().await.expect("state").mounted;

    let config_maps = Api::<ConfigMap>::namespaced(site.client.clone(), &site.app_ns);
    let edit = serde_json::json!({"data": {"value": "two"}});
    config_maps.patch("settings", &PatchParams::default(), &Patch::Merge(edit)).await.expect("changed");
    let changed = site.sync("store").await;
    assert_exit(&changed, 0);
    let stamp = restarted_at().await.expect("restarted");
    let report = site.kept_report().await.report;
    assert!(report.objects.iter().any(|r| r.id.name == "web" && r.action == Action::Restarted), "{:?}", report.objects);
    assert_ne!(site.state().await.expect("state").mounted, mounted, "the new digest is kept");

    assert_exit(&site.sync("store").await, 0);
    assert_eq!(restarted_at().await, Some(stamp), "not restarted again");
}
