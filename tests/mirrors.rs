//! `airlock-publisher publish --mirror`: the Sveltos documentation's single-chart example
//! (`addons/helm_charts.md`: kyverno v3.3.3 from https://kyverno.github.io/kyverno/),
//! written as the documentation writes it, published with that repository mirrored by a
//! chart repository this test serves on 127.0.0.1 from `shared/charts/more`. The bundle
//! carries the chart's objects and records the documentation's URL, never the mirror's;
//! a publish without the mirror, from the same cache, changes nothing, and neither does
//! one from a fresh cache that only `charts import` filled. A mirror file that does not
//! read stops the run before anything is fetched, naming its line.
//!
//! Nothing is applied: kyverno 3.3.3 needs Kubernetes 1.25, and the test API servers are
//! 1.20.2 (applying charts is `helm_publish`'s business). The cluster has reported no
//! version, so helm renders with its default one.

use airlock_bundle::ClusterId;
use airlock_e2e::chart_repo::{ChartRepo, charts_dir, helm_paths};

/// The documentation's example, unchanged but for the cluster it selects.
const DOCS_EXAMPLE: &str = "apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata:
  name: kyverno
spec:
  clusterSelector:
    matchLabels:
      env: prod
  helmCharts:
  - repositoryURL:    https://kyverno.github.io/kyverno/
    repositoryName:   kyverno
    chartName:        kyverno/kyverno
    chartVersion:     v3.3.3
    releaseName:      kyverno-latest
    releaseNamespace: kyverno
    helmChartAction:  Install
";

fn cluster(run: &str) -> String {
    format!(
        "apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {{name: edge, namespace: {run}, labels: {{env: prod}}, annotations: {{airlock.dev/plaintext-secrets: allow}}}}
spec: {{pullMode: true}}
"
    )
}

#[tokio::test]
async fn a_sveltos_docs_chart_renders_from_a_mirror_on_127_0_0_1() {
    let run = airlock_e2e::publisher::unique("mirror");
    let repo = ChartRepo::serve(&charts_dir().join("more"), None);
    let (fleet, out) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    std::fs::write(fleet.path().join("cluster.yaml"), cluster(&run)).expect("writes the fleet");
    std::fs::write(fleet.path().join("kyverno.yaml"), DOCS_EXAMPLE).expect("writes the fleet");
    let keys = airlock_e2e::publisher::Keys::new("mirror");
    let store = format!("oci-layout:{}", out.path().join("layout").display());
    let (fleet_dir, cache) = (fleet.path().display().to_string(), out.path().join("cache").display().to_string());
    let helm = helm_paths()[0].display().to_string();
    let publish = ["publish", "--from-dir", &fleet_dir, "--to", &store, "--key", &keys.key, "--helm", &helm, "--cache-dir", &cache];

    let bad = out.path().join("mirrors.txt");
    std::fs::write(&bad, format!("# the enclave's chart repositories\nhttps://kyverno.github.io/kyverno/=oci://{}\n", &repo.url[7..]))
        .expect("writes the mirror file");
    let bad_path = bad.display().to_string();
    let refused = airlock_e2e::publisher::run(&[&publish[..], &["--mirror-file", bad_path.as_str()]].concat());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("--mirror-file {bad_path} line 2")) && stderr.contains("another kind"), "{stderr}");
    assert_eq!(repo.requests(), 0, "nothing is fetched before the mirrors are checked");

    let mirror = format!("https://kyverno.github.io/kyverno/={}/", repo.url);
    let mirrored = std::process::Command::new(airlock_e2e::publisher_bin())
        .args(publish)
        .args(["--mirror", &mirror])
        .env("AIRLOCK_LOG", "debug")
        .env_remove("KUBECONFIG")
        .output()
        .expect("airlock-publisher runs");
    let (stdout, log) = (String::from_utf8_lossy(&mirrored.stdout), String::from_utf8_lossy(&mirrored.stderr));
    assert_eq!(mirrored.status.code(), Some(0), "{stdout}\n{log}");
    assert_eq!(airlock_e2e::publisher::summary(&stdout)[0].2, "published", "{stdout}");
    assert!(log.contains("fetching from a mirror") && log.contains(&repo.url), "the debug log names the mirror: {log}");
    assert_eq!(repo.archives(), 1, "the chart came from the mirror");

    let edge: ClusterId = format!("{run}/edge").parse().expect("a cluster id");
    let bundle = airlock_e2e::publisher::read_back(&store, &edge, &keys.keyring).await;
    let deployment = airlock_e2e::publisher::file(&bundle, "ClusterProfile.kyverno/Deployment.kyverno.kyverno-admission-controller.yaml");
    for recorded in [
        "airlock.dev/helm-release: kyverno-latest",
        "airlock.dev/helm-chart: kyverno-3.3.3",
        "airlock.dev/helm-repository: https://kyverno.github.io/kyverno\n",
    ] {
        assert!(deployment.contains(recorded), "{recorded} in {deployment}");
    }
    let files: Vec<&str> = bundle.bundle().files().map(|(p, _)| p).collect();
    for object in ["CustomResourceDefinition.cluster.clusterpolicies.kyverno.io.yaml", "Namespace.cluster.kyverno.yaml"] {
        assert!(files.contains(&format!("ClusterProfile.kyverno/{object}").as_str()), "{object} in {files:?}");
    }
    let mirror_address = &repo.url[7..];
    let statement = serde_json::to_string(bundle.predicate()).expect("the predicate serialises");
    assert!(!statement.contains(mirror_address), "the statement does not name the mirror: {statement}");
    for (path, bytes) in bundle.bundle().files() {
        assert!(!String::from_utf8_lossy(bytes).contains(mirror_address), "{path} names the mirror");
    }

    let unmirrored = airlock_e2e::publisher::run_expect(&publish, 0);
    assert_eq!(airlock_e2e::publisher::summary(&unmirrored)[0].2, "unchanged", "the mirror changed no byte: {unmirrored}");
    assert_eq!(repo.archives(), 1, "the cache knows the chart by the documentation's URL");

    // The chart cache carried to a publisher that has neither the network nor a mirror.
    let (carried, enclave) = (out.path().join("charts.tar").display().to_string(), out.path().join("enclave").display().to_string());
    let exported = airlock_e2e::publisher::run_expect(&["charts", "export", "--cache-dir", &cache, "--output", &carried], 0);
    assert!(exported.contains("1 archives"), "{exported}");
    airlock_e2e::publisher::run_expect(&["charts", "import", "--cache-dir", &enclave, &carried], 0);
    let inside = publish.map(|a| if a == cache { enclave.as_str() } else { a });
    let rendered = airlock_e2e::publisher::run_expect(&inside, 0);
    assert_eq!(airlock_e2e::publisher::summary(&rendered)[0].2, "unchanged", "rendered again from the carried cache: {rendered}");
    assert_eq!(repo.archives(), 1, "nothing was fetched inside");
}
