//! `kustomizationRefs` through the render pipeline, with a stand-in kubectl whose
//! "build" prints the directory's YAML files as they are: what is under test here is
//! what rendering does around the build (sources, revisions, values, namespaces, tiers,
//! patches, failures). Real kustomize builds are the end-to-end suite's.

use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::sources::model::kustomization::{KustomizeKind, revision_key};

const FAKE_KUBECTL: &str = r#"#!/bin/sh
case "$1" in
version) echo '{"kustomizeVersion": "v5.5.0"}' ;;
kustomize) for dir; do :; done; for f in "$dir"/*.yaml; do [ "${f##*/}" = kustomization.yaml ] || { echo ---; cat "$f"; }; done ;;
esac
"#;

fn fake_kubectl() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubectl");
    std::fs::write(&path, FAKE_KUBECTL).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

/// A gzip'ed tar of `files`, base64, as a ConfigMap's binaryData holds it.
fn tarball(files: &[(&str, &str)]) -> String {
    STANDARD.encode(crate::test_archive::tar_gz(files))
}

const APP: &[(&str, &str)] = &[
    ("app/kustomization.yaml", "resources: [deploy.yaml]\n"),
    (
        "app/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {region: '{{ .Region }}', size: '{{ .Size }}'}\nspec: {replicas: 1}\n",
    ),
];

fn kustomize_world(refs: &str, extra: &str) -> (Inventory, Resources) {
    world(&format!(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: k}}\n\
         spec:\n  clusterSelector: {{matchLabels: {{region: eu}}}}\n  kustomizationRefs: [{refs}]\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: defs}}\nbinaryData: {{kustomize.tar.gz: {}}}\n{extra}",
        tarball(APP)
    ))
}

fn render_with_kubectl(world: &(Inventory, Resources), kubectl: &std::path::Path) -> Rendered {
    let renderer = renderer(&world.1).with_kubectl(Some(kubectl.to_path_buf()), Default::default());
    render_stored(&renderer, world, "fleet/eu-1", None).unwrap()
}

#[test]
fn builds_a_config_map_tarball_with_templated_values_into_the_target_namespace() {
    let (_dir, kubectl) = fake_kubectl();
    let w = kustomize_world(
        "{kind: ConfigMap, namespace: defs, name: app, path: ./app, targetNamespace: 'apps-{{ .ClusterName }}',
          values: {Region: '{{ index .Cluster.metadata.labels \"region\" }}', Size: small},
          valuesFrom: [{kind: ConfigMap, namespace: defs, name: sizes}]}",
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: sizes, namespace: defs, annotations: {projectsveltos.io/template: ok}}\n\
         data: {Size: '{{ .ClusterName }}-large'}\n",
    );
    let r = render_with_kubectl(&w, &kubectl);
    let deploy = file(&r, "ClusterProfile.k/Deployment.apps-eu-1.web.yaml");
    assert!(deploy.contains("region: eu"), "{deploy}");
    assert!(deploy.contains("size: eu-1-large"), "valuesFrom wins over values: {deploy}");
    assert!(deploy.contains("namespace: apps-eu-1"), "{deploy}");
    assert_eq!(
        file(&r, "ClusterProfile.k/Namespace.cluster.apps-eu-1.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  annotations:\n    airlock.dev/create-only: \"true\"\n  name: apps-eu-1\n"
    );
    assert!(r.failures.is_empty(), "{:?}", r.failures);
}

#[test]
fn values_from_objects_without_the_template_annotation_win_as_written() {
    let (_dir, kubectl) = fake_kubectl();
    let w = kustomize_world(
        "{kind: ConfigMap, namespace: defs, name: app, path: app, values: {Region: spec, Size: spec},
          valuesFrom: [{kind: ConfigMap, namespace: defs, name: plain}, {kind: ConfigMap, namespace: defs, name: templated}]}",
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: defs}\ndata: {Size: plain}\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: templated, namespace: defs, annotations: {projectsveltos.io/template: ok}}\n\
         data: {Region: '{{ .ClusterName }}', Size: '{{ .ClusterName }}-templated'}\n",
    );
    let r = render_with_kubectl(&w, &kubectl);
    let deploy = file(&r, "ClusterProfile.k/Deployment.cluster.web.yaml");
    assert!(deploy.contains("region: eu-1"), "a templated object wins over values: {deploy}");
    assert!(deploy.contains("size: plain"), "a plain object wins over a templated one listed after it: {deploy}");
}

#[test]
fn kustomized_objects_take_the_reference_tier_but_not_the_profile_patches() {
    let (_dir, kubectl) = fake_kubectl();
    let w = kustomize_world(
        "{kind: ConfigMap, namespace: defs, name: app, path: app, tier: 10, skipNamespaceCreation: true, values: {Region: a, Size: b}},
         {kind: ConfigMap, namespace: defs, name: app, path: app, tier: 20, values: {Region: lost, Size: lost}}]
  patches: [{target: {kind: Deployment}, patch: '[{\"op\": \"replace\", \"path\": \"/spec/replicas\", \"value\": 3}]'}",
        "",
    );
    let r = render_with_kubectl(&w, &kubectl);
    let deploy = file(&r, "ClusterProfile.k/Deployment.cluster.web.yaml");
    // Sveltos patches policyRefs' content and charts, never what kustomize built.
    assert!(deploy.contains("replicas: 1") && deploy.contains("region: a"), "{deploy}");
    assert_eq!(r.objects, 1, "the tier-20 copy lost, and no namespace was asked for");
}

#[test]
fn a_git_repository_builds_the_commit_looked_up_and_fails_alone_when_none_was() {
    let (_dir, kubectl) = fake_kubectl();
    let mut w = kustomize_world(
        "{kind: GitRepository, namespace: flux-system, name: repo, path: app}]
---
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata: {name: other}
spec:
  clusterSelector: {matchLabels: {region: eu}}
  policyRefs: [{kind: ConfigMap, namespace: defs, name: web}",
        &format!(
            "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: repo, namespace: flux-system}}\n\
             spec: {{url: 'http://127.0.0.1:1/none.git', ref: {{branch: main}}}}\n---\n{}",
            config_map("web", "defs", WEB)
        ),
    );
    let repo = ObjectKey::new("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", "repo");
    w.1.record(revision_key(&repo), Err("git fetch of http://127.0.0.1:1/none.git: connection refused".into()));
    let r = render_with_kubectl(&w, &kubectl);
    let message = &failure(&r, "ClusterProfile.k").expect("the kustomize profile fails").message;
    assert!(message.contains("spec.kustomizationRefs[0]") && message.contains("connection refused"), "{message}");
    assert!(failure(&r, "ClusterProfile.other").is_none(), "the other profile renders");
    assert!(file(&r, "ClusterProfile.other/ConfigMap.web.settings.yaml").contains("color: blue"));
}

#[test]
fn a_missing_source_fails_even_when_optional_and_a_missing_kubectl_fails_the_profile() {
    let (_dir, kubectl) = fake_kubectl();
    // Sveltos's kustomize handler never reads the reference's `optional`.
    for optional in ["true", "false"] {
        let w = kustomize_world(&format!("{{kind: Secret, namespace: defs, name: absent, optional: {optional}}}"), "");
        let r = render_with_kubectl(&w, &kubectl);
        let message = &failure(&r, "ClusterProfile.k").expect("the profile fails").message;
        assert!(message.contains("spec.kustomizationRefs[0]: Secret defs/absent not found"), "{message}");
    }

    let w = kustomize_world("{kind: ConfigMap, namespace: defs, name: app, path: app}", "");
    let r = render_with_kubectl(&w, std::path::Path::new("/nonexistent/kubectl"));
    let message = &failure(&r, "ClusterProfile.k").unwrap().message;
    assert!(message.contains("kubectl not found") && message.contains("--kubectl"), "{message}");
}

#[test]
fn plans_name_the_source_its_revision_and_the_values_objects() {
    let w = kustomize_world(
        "{kind: GitRepository, namespace: flux-system, name: '{{ .ClusterName }}', valuesFrom: [{kind: Secret, name: v}]}",
        "",
    );
    let c = w.0.clusters.iter().find(|c| c.id.to_string() == "fleet/eu-1").unwrap();
    let p = plan(c, select::profiles_for(c, &w.0), &w.0).unwrap();
    let keys: Vec<String> = p.references().map(|r| format!("{} {}", r.api_version, r.key)).collect();
    assert_eq!(
        keys,
        [
            "source.toolkit.fluxcd.io/v1 GitRepository.source.toolkit.fluxcd.io flux-system/eu-1",
            "airlock.dev/v1 SourceRevision.airlock.dev flux-system/eu-1",
            "v1 Secret fleet/v",
        ]
    );
    assert_eq!(
        p.flux_sources(KustomizeKind::GitRepository).map(ToString::to_string).collect::<Vec<_>>(),
        ["GitRepository.source.toolkit.fluxcd.io flux-system/eu-1"]
    );
    assert!(p.profiles[0].shared_key(&w.1, c).is_none(), "valuesFrom makes it per cluster");
}

#[test]
fn an_oci_repository_builds_the_artifact_fetched_for_the_run() {
    let (_dir, kubectl) = fake_kubectl();
    let mut w = kustomize_world(
        "{kind: OCIRepository, namespace: flux-system, name: app, path: app, values: {Region: oci, Size: s}}",
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: app, namespace: flux-system}\n\
         spec: {url: 'oci://127.0.0.1:5000/app', ref: {tag: v1}}\n",
    );
    let repo = ObjectKey::new("source.toolkit.fluxcd.io/v1", "OCIRepository", "flux-system", "app");
    let fetched = serde_json::json!({"url": "oci://127.0.0.1:5000/app:v1", "digest": "sha256:00", "tarball": tarball(APP)});
    w.1.record(revision_key(&repo), Ok(Some(fetched)));
    let r = render_with_kubectl(&w, &kubectl);
    assert!(file(&r, "ClusterProfile.k/Deployment.cluster.web.yaml").contains("region: oci"));
}

#[test]
fn a_remote_url_builds_the_tarball_fetched_for_the_run() {
    let (_dir, kubectl) = fake_kubectl();
    let mut w = kustomize_world("{remoteURL: {url: 'https://example.com/app.tar.gz'}, path: app, values: {Region: far, Size: m}}", "");
    let c = w.0.clusters.iter().find(|c| c.id.to_string() == "fleet/eu-1").unwrap();
    let p = plan(c, select::profiles_for(c, &w.0), &w.0).unwrap();
    let (key, remote) = p.remotes().next().map(|(k, r)| (k.clone(), r.clone())).expect("the remoteURL is fetched");
    assert!(remote.tree);
    w.1.record(key, Ok(Some(serde_json::json!({"tarball": tarball(APP)}))));
    let r = render_with_kubectl(&w, &kubectl);
    assert!(file(&r, "ClusterProfile.k/Deployment.cluster.web.yaml").contains("region: far"));
}
