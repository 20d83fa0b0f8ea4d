//! Charts looked up and rendered as a publish does, with a stand-in helm: how a release two
//! profiles deploy is shared out, and a chart entry whose fields are templates.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use airlock_bundle::Limits;

use super::*;
use crate::render::helm::RendererSettings;
use crate::render::{Assembly, Rendered, Renderer, hold, plan};
use crate::sources::{Inventory, ObjectKey, select};
use crate::yaml;

/// A helm that pulls only version 1.0.0 of chart `web` (the archive at `archive`) and
/// renders a ConfigMap named for the release, and a second one when the values ask for
/// `extra`.
fn fake_helm(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let archive = dir.join("web-1.0.0.tgz");
    let chart = [("web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n"), ("web/templates/cm.yaml", "")];
    std::fs::write(&archive, crate::test_archive::tar_gz(&chart)).expect("write");
    let script = format!(
        r#"#!/bin/sh
cmd="$1"; shift
while [ $# -gt 0 ]; do
  case "$1" in
    --values) values="$2"; shift ;;
    --values=*) values="${{1#*=}}" ;;
    --destination) dest="$2"; shift ;;
    --destination=*) dest="${{1#*=}}" ;;
    --version) version="$2"; shift ;;
    --version=*) version="${{1#*=}}" ;;
    --) release="$2"; break ;;
  esac
  shift
done
case "$cmd" in
version) echo v3.17.2+gfake ;;
pull) [ "$version" = 1.0.0 ] || {{ echo "Error: chart web version \"$version\" not found" >&2; exit 1; }}; cp {archive} "$dest/" ;;
template)
  printf -- '---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n' "$release"
  if grep -q extra "$values"; then printf -- '---\n# Source: web/templates/extra.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-extra\n' "$release"; fi ;;
*) exit 1 ;;
esac
"#,
        archive = archive.display()
    );
    let path = dir.join("helm");
    std::fs::write(&path, script).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// A ClusterProfile `name` at `tier` for the cluster, deploying chart `web` as `entry` says.
fn profile(name: &str, tier: u32, entry: &str) -> String {
    format!(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: {name}}}\nspec:\n  tier: {tier}\n  clusterSelector: {{matchLabels: {{region: eu}}}}\n  helmCharts:\n  - {{repositoryURL: 'http://charts.invalid', repositoryName: r, chartName: r/web, {entry}}}\n"
    )
}

/// The inventory and resources the documents `text` make, and a renderer of their charts
/// with the stand-in helm written into `dir`.
fn world(text: &str, dir: &Path) -> (Inventory, Resources, Arc<LazyRenderer>) {
    let docs = yaml::parse_documents(text).unwrap();
    let inventory = Inventory::from_objects(docs.iter().map(|d| ("test".to_string(), d)));
    assert!(inventory.broken.is_empty(), "{:?}", inventory.broken);
    let resources = Resources::found(docs.iter().filter_map(|d| ObjectKey::of(d).map(|k| (k, d.clone()))).collect());
    let settings = RendererSettings { cache_dir: None, check_determinism: false, ..RendererSettings::default() };
    (inventory, resources, Arc::new(LazyRenderer::new(Some(fake_helm(dir)), settings)))
}

/// The bundle of cluster `fleet/eu-1` with `profiles`, as a first publish makes it.
fn publish(profiles: &[String]) -> Rendered {
    let cluster = "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata: {name: eu-1, namespace: fleet, labels: {region: eu}}\nspec: {pullMode: true}\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let (inventory, mut resources, helm) = world(&format!("{cluster}---\n{}", profiles.join("---\n")), dir.path());
    let c = &inventory.clusters[0];
    let p = plan(c, select::profiles_for(c, &inventory), &inventory).unwrap();
    resolve_into(&wanted([&p]), &mut resources, &helm);
    let renderer = Renderer::new(&resources, &Limits::SPEC, None, "2026-12-01T10:00:00Z".parse().unwrap()).with_helm(helm);
    let prepared = renderer.prepare(&p).unwrap();
    let decided = hold::plan(&prepared, None, &hold::Unplanned::of(&inventory), &BTreeSet::new(), &BTreeMap::new());
    match renderer.assemble(&prepared, &decided, &BTreeMap::new(), true).unwrap() {
        Assembly::Done(rendered) => *rendered,
        Assembly::Ties => unreachable!("a decided assembly breaks its ties"),
    }
}

fn paths(r: &Rendered, part: &str) -> Vec<String> {
    r.bundle.part(part).map(|p| p.files().map(|(path, _)| path.to_string()).collect()).unwrap_or_default()
}

#[test]
fn a_release_two_profiles_deploy_goes_whole_to_the_lower_tier() {
    let owner = profile("owner", 50, "chartVersion: 1.0.0, releaseName: web, releaseNamespace: apps");
    let other = profile("other", 100, "chartVersion: 1.0.0, releaseName: web, releaseNamespace: apps, values: 'extra: true'");
    let r = publish(&[owner, other]);
    assert!(paths(&r, "ClusterProfile.owner").contains(&"ClusterProfile.owner/ConfigMap.apps.web.yaml".to_string()));
    assert!(
        paths(&r, "ClusterProfile.other").iter().all(|p| !p.contains("ConfigMap.apps.web")),
        "the other profile's render of the release is not published: {:?}",
        paths(&r, "ClusterProfile.other")
    );
    let failure = r.settings["ClusterProfile.other"].failure.as_ref().expect("the other profile fails");
    assert!(
        failure.message.contains("cannot manage Helm release apps/web, which ClusterProfile/owner (tier 50) manages"),
        "{}",
        failure.message
    );
    assert!(r.settings["ClusterProfile.owner"].failure.is_none());
}

#[test]
fn a_templated_chart_version_and_release_reach_helm_instantiated() {
    let entry = "chartVersion: '{{ if eq .Cluster.metadata.labels.region \"eu\" }}1.0.0{{ else }}2.0.0{{ end }}', releaseName: 'web-{{ .Cluster.metadata.labels.region }}', releaseNamespace: '{{ .ClusterName }}'";
    let r = publish(&[profile("web", 100, entry)]);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(
        paths(&r, "ClusterProfile.web").contains(&"ClusterProfile.web/ConfigMap.eu-1.web-eu.yaml".to_string()),
        "{:?}",
        paths(&r, "ClusterProfile.web")
    );

    let spans = "chartVersion: \"{{ if true }}\\n1.0.0\\n{{ end }}\", releaseName: web, releaseNamespace: apps";
    let r = publish(&[profile("web", 100, spans)]);
    let failure = r.settings["ClusterProfile.web"].failure.as_ref().expect("the profile fails");
    assert!(
        failure.message.contains("spec.helmCharts[0].chartVersion: the template") && failure.message.contains("spans lines"),
        "{}",
        failure.message
    );
}

/// Each cluster of `clusters` (`name: label` of their `region`) prepared with `profile`
/// by one renderer, as one publish prepares its fleet, and the profile's objects for each.
fn prepare_fleet(clusters: &[(&str, &str)], profile: &str) -> Vec<(Arc<crate::render::prepared::Prepared>, Vec<String>)> {
    let clusters: Vec<String> = clusters
        .iter()
        .map(|(name, region)| format!("apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata: {{name: {name}, namespace: fleet, labels: {{region: {region}}}}}\nspec: {{pullMode: true}}\n"))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let (inventory, mut resources, helm) = world(&format!("{}---\n{profile}", clusters.join("---\n")), dir.path());
    let plans: Vec<_> = inventory.clusters.iter().map(|c| plan(c, select::profiles_for(c, &inventory), &inventory).unwrap()).collect();
    resolve_into(&wanted(&plans), &mut resources, &helm);
    let renderer = Renderer::new(&resources, &Limits::SPEC, None, "2026-12-01T10:00:00Z".parse().unwrap()).with_helm(helm);
    let prepared: Vec<_> = plans.iter().map(|p| renderer.prepare(p).unwrap()).collect();
    prepared
        .iter()
        .map(|cluster| {
            let outcome = cluster.parts[0].outcome.as_ref().expect("the profile renders");
            (outcome.clone(), outcome.objects.iter().map(|o| o.yaml.to_string()).collect())
        })
        .collect()
}

#[test]
fn clusters_whose_chart_values_instantiate_alike_share_one_preparation() {
    let values = r#"values: '{{ if eq .Cluster.metadata.labels.region "eu" }}extra: true{{ end }}'"#;
    let entry = format!("chartVersion: 1.0.0, releaseName: web, releaseNamespace: apps, {values}");
    let profile = profile("web", 100, &entry).replace("matchLabels: {region: eu}", "matchExpressions: [{key: region, operator: Exists}]");
    let fleet = prepare_fleet(&[("eu-1", "eu"), ("eu-2", "eu"), ("us-1", "us")], &profile);
    let [(eu1, eu1_objects), (eu2, eu2_objects), (us1, us1_objects)] = &fleet[..] else { panic!("three clusters") };
    assert!(Arc::ptr_eq(eu1, eu2), "the second eu cluster gets the first one's preparation, made once");
    assert_eq!(eu1_objects, eu2_objects);
    assert!(!Arc::ptr_eq(eu1, us1), "values that instantiate differently are prepared apart");
    assert!(eu1_objects.iter().any(|y| y.contains("name: web-extra")), "{eu1_objects:?}");
    assert!(us1_objects.iter().all(|y| !y.contains("web-extra")), "{us1_objects:?}");
}

#[test]
fn clusters_whose_patches_instantiate_apart_are_prepared_apart() {
    let entry = "chartVersion: 1.0.0, releaseName: web, releaseNamespace: apps, values: 'region: {{ .Cluster.metadata.labels.region }}'";
    let patches = "  patches:\n  - target: {kind: ConfigMap}\n    patch: |\n      - op: add\n        path: /metadata/labels\n        value: {cluster: '{{ .ClusterName }}'}\n";
    let fleet = prepare_fleet(&[("eu-1", "eu"), ("eu-2", "eu")], &format!("{}{patches}", profile("web", 100, entry)));
    let [(eu1, eu1_objects), (eu2, eu2_objects)] = &fleet[..] else { panic!("two clusters") };
    assert!(!Arc::ptr_eq(eu1, eu2), "equal releases patched with each cluster's name are prepared for each");
    let labelled =
        |objects: &[String], cluster: &str| objects.iter().any(|y| y.contains("name: web\n") && y.contains(&format!("cluster: {cluster}")));
    assert!(labelled(eu1_objects, "eu-1") && !labelled(eu1_objects, "eu-2"), "{eu1_objects:?}");
    assert!(labelled(eu2_objects, "eu-2") && !labelled(eu2_objects, "eu-1"), "{eu2_objects:?}");
}
