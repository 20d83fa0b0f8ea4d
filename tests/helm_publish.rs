//! `airlock-publisher publish` rendering Sveltos `helmCharts` with the real helm (v3.17.2
//! from hack/helm.sh) from the test charts of `shared/charts`, served as a chart
//! repository on 127.0.0.1 inside the test: per-cluster values and the cluster's reported
//! Kubernetes version reach the render, install hooks ship with the release, an unchanged
//! re-publish renders nothing and fetches only what a version range resolves to, a values change republishes only the cluster it
//! touches, a repository that is down fails only its profile, and Uninstall withdraws the
//! release.

use airlock_bundle::{ClusterId, VerifiedBundle};
use airlock_e2e::chart_repo::{ChartRepo, charts_dir, edge_fleet, helm_paths};

fn cluster(run: &str, name: &str) -> String {
    format!(
        "apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {{name: {name}, namespace: {run}, labels: {{site: north}}}}
spec: {{pullMode: true}}
status: {{version: v1.20.2}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: {name}-values, namespace: {run}}}
data:
  values.yaml: |
    replicas: 1
"
    )
}

fn profile(run: &str, name: &str, repository: &str, action: &str) -> String {
    format!(
        "apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata: {{name: {name}}}
spec:
  clusterSelector: {{matchLabels: {{site: north}}}}
  helmCharts:
  - repositoryURL: {repository}
    repositoryName: airlock-test
    chartName: airlock-test/kube-state-metrics
    chartVersion: 4.0.x
    releaseName: ksm
    releaseNamespace: {run}-ksm
    helmChartAction: {action}
    values: |
      podAnnotations:
        site: '{{{{ index .Cluster.metadata.labels \"site\" }}}}'
        cluster: '{{{{ .ClusterName }}}}'
        kube: '{{{{ .Cluster.status.version }}}}'
    valuesFrom:
    - {{kind: ConfigMap, name: '{{{{ .ClusterName }}}}-values'}}
  - repositoryURL: {repository}
    repositoryName: airlock-test
    chartName: airlock-test/ingress-nginx
    chartVersion: 4.0.13
    releaseName: ingress
    releaseNamespace: {run}-ingress
"
    )
}

fn names(bundle: &VerifiedBundle, part: &str) -> Vec<String> {
    bundle.bundle().files().filter_map(|(p, _)| p.strip_prefix(&format!("{part}/")).map(str::to_string)).collect()
}

#[tokio::test]
async fn publishes_helm_charts_per_cluster_and_follows_their_inputs() {
    let run = airlock_e2e::publisher::unique("helm");
    let repo = ChartRepo::serve(&charts_dir(), None);
    let helm = helm_paths()[0].display().to_string();
    let (fleet, out) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let write = |files: &[(&str, String)]| {
        for (name, text) in files {
            std::fs::write(fleet.path().join(name), text).expect("writes the fleet");
        }
    };
    write(&[
        ("a.yaml", cluster(&run, "edge-a")),
        ("b.yaml", cluster(&run, "edge-b")),
        ("profile.yaml", profile(&run, &format!("{run}-helm"), &repo.url, "Install")),
    ]);
    let keys = airlock_e2e::publisher::Keys::new("helm");
    let store = format!("oci-layout:{}", out.path().join("layout").display());
    let fleet_dir = fleet.path().display().to_string();
    let cache = out.path().join("cache").display().to_string();
    let publish = |code| {
        airlock_e2e::publisher::run_expect(
            &["publish", "--from-dir", &fleet_dir, "--to", &store, "--key", &keys.key, "--helm", &helm, "--cache-dir", &cache],
            code,
        )
    };
    let (a, b): (ClusterId, ClusterId) = (format!("{run}/edge-a").parse().unwrap(), format!("{run}/edge-b").parse().unwrap());
    let part = format!("ClusterProfile.{run}-helm");

    let first = publish(0);
    let rows = airlock_e2e::publisher::summary(&first);
    assert!(rows.len() == 2 && rows.iter().all(|r| r.2 == "published"), "{first}");
    let bundle = airlock_e2e::publisher::read_back(&store, &a, &keys.keyring).await;
    let files = names(&bundle, &part);
    let deployment = airlock_e2e::publisher::file(&bundle, &format!("{part}/Deployment.{run}-ksm.ksm-kube-state-metrics.yaml"));
    let recorded = [
        "airlock.dev/helm-release: ksm",
        "airlock.dev/helm-chart: kube-state-metrics-4.0.2",
        "airlock.dev/helm-values: sha256:",
        "airlock.dev/helm-chart-version: \"4.0.2\"",
        "airlock.dev/helm-app-version: \"2.2.4\"",
        "airlock.dev/helm-repository: http",
    ];
    for expected in ["cluster: edge-a", "site: north", "kube: v1.20.2", "replicas: 1"].into_iter().chain(recorded) {
        assert!(deployment.contains(expected), "{expected} in {deployment}");
    }
    assert!(files.contains(&"ClusterRole.cluster.ksm-kube-state-metrics.yaml".to_string()), "cluster-scoped kinds stay so: {files:?}");
    assert!(files.contains(&format!("Namespace.cluster.{run}-ksm.yaml")), "the release namespace is created: {files:?}");
    let hook = airlock_e2e::publisher::file(&bundle, &format!("{part}/Job.{run}-ingress.ingress-ingress-nginx-admission-create.yaml"));
    assert!(hook.contains("helm.sh/hook: pre-install,pre-upgrade"), "install hooks ship with the release: {hook}");
    for site in ["airlock.dev/hook: pre-install,pre-upgrade", "airlock.dev/hook-delete-policy: before-hook-creation,hook-succeeded"] {
        assert!(hook.contains(site), "{site}: the site fires it: {hook}");
    }
    let other = airlock_e2e::publisher::read_back(&store, &b, &keys.keyring).await;
    assert!(
        airlock_e2e::publisher::file(&other, &format!("{part}/Deployment.{run}-ksm.ksm-kube-state-metrics.yaml"))
            .contains("cluster: edge-b")
    );

    assert_eq!(repo.archives(), 2, "each chart is fetched once for both clusters");
    let asked = repo.requests();
    let again = publish(0);
    assert!(airlock_e2e::publisher::summary(&again).iter().all(|r| r.2 == "unchanged"), "{again}");
    assert_eq!(repo.archives(), 3, "an exact version is not fetched again; the range is resolved again, once");
    assert_eq!(repo.requests(), asked + 2, "the range's index.yaml and the archive it resolves to");

    write(&[("b.yaml", cluster(&run, "edge-b").replace("replicas: 1", "replicas: 3"))]);
    let touched = publish(0);
    let rows = airlock_e2e::publisher::summary(&touched);
    assert_eq!(rows.iter().map(|r| r.2.as_str()).collect::<Vec<_>>(), ["unchanged", "published"], "{touched}");
    let other = airlock_e2e::publisher::read_back(&store, &b, &keys.keyring).await;
    assert!(
        airlock_e2e::publisher::file(&other, &format!("{part}/Deployment.{run}-ksm.ksm-kube-state-metrics.yaml")).contains("replicas: 3")
    );

    write(&[("down.yaml", profile(&run, &format!("{run}-down"), "http://127.0.0.1:1", "Install"))]);
    let down = publish(2);
    assert!(down.contains(&format!("ClusterProfile/{run}-down")) && down.contains("127.0.0.1:1"), "names the profile and URL: {down}");
    let kept = airlock_e2e::publisher::read_back(&store, &a, &keys.keyring).await;
    assert!(names(&kept, &part).iter().any(|f| f.starts_with("Deployment.")), "the other profile keeps rendering");
    std::fs::remove_file(fleet.path().join("down.yaml")).unwrap();

    write(&[("profile.yaml", profile(&run, &format!("{run}-helm"), &repo.url, "Uninstall"))]);
    let withdrawn = publish(0);
    assert!(airlock_e2e::publisher::summary(&withdrawn).iter().all(|r| r.2 == "published"), "{withdrawn}");
    let bundle = airlock_e2e::publisher::read_back(&store, &a, &keys.keyring).await;
    let files = names(&bundle, &part);
    assert!(!files.iter().any(|f| f.contains("kube-state-metrics")), "Uninstall withdraws the release: {files:?}");
    assert!(files.iter().any(|f| f.contains("ingress-nginx-controller")), "the other release stays: {files:?}");
}

/// A `repositoryURL` may carry a login and a token of its own (a shortcut past
/// `registryCredentialsConfig`): helm uses them, and nothing Airlock writes keeps them. Not
/// the release's `airlock.dev/helm-repository` annotation, not the signed failure message of
/// a repository that is down (helm quotes its URL), not a log line at debug, not a byte of
/// the store.
#[tokio::test]
async fn a_login_in_a_repository_url_reaches_no_bundle_store_or_log() {
    const PASSWORD: &str = "planted-pw-7f3a";
    const TOKEN: &str = "planted-token-9c2e";
    let run = airlock_e2e::publisher::unique("helm-login");
    let repo = ChartRepo::serve(&charts_dir(), Some(("airlock", PASSWORD)));
    let with_login = repo.url.replace("http://", &format!("http://airlock:{PASSWORD}@"));
    let down = format!("http://airlock:{PASSWORD}@127.0.0.1:1/charts?token={TOKEN}");
    let (fleet, out) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    for (name, text) in [
        ("a.yaml", cluster(&run, "edge-a")),
        ("good.yaml", profile(&run, &format!("{run}-good"), &with_login, "Install")),
        ("down.yaml", profile(&run, &format!("{run}-down"), &down, "Install")),
    ] {
        std::fs::write(fleet.path().join(name), text).expect("writes the fleet");
    }
    let keys = airlock_e2e::publisher::Keys::new("helm-login");
    let store = format!("oci-layout:{}", out.path().join("layout").display());
    let (fleet_dir, cache) = (fleet.path().display().to_string(), out.path().join("cache").display().to_string());
    let helm = helm_paths()[0].display().to_string();
    let published = std::process::Command::new(airlock_e2e::publisher_bin())
        .args(["publish", "--from-dir", &fleet_dir, "--to", &store, "--key", &keys.key, "--helm", &helm, "--cache-dir", &cache])
        .env("AIRLOCK_LOG", "debug")
        .env_remove("KUBECONFIG")
        .output()
        .expect("airlock-publisher runs");
    let log = format!("{}{}", String::from_utf8_lossy(&published.stdout), String::from_utf8_lossy(&published.stderr));
    assert_eq!(published.status.code(), Some(2), "the profile whose repository is down fails: {log}");
    assert!(log.contains(&format!("ClusterProfile/{run}-down")) && log.contains("127.0.0.1:1/charts"), "{log}");
    assert!(repo.archives() >= 1, "helm fetched the charts with the URL's login");

    let a: ClusterId = format!("{run}/edge-a").parse().unwrap();
    let bundle = airlock_e2e::publisher::read_back(&store, &a, &keys.keyring).await;
    let part = format!("ClusterProfile.{run}-good");
    let deployment = airlock_e2e::publisher::file(&bundle, &format!("{part}/Deployment.{run}-ksm.ksm-kube-state-metrics.yaml"));
    assert!(deployment.contains(&format!("airlock.dev/helm-repository: {}", repo.url)), "{deployment}");
    let statement = serde_json::to_string(bundle.predicate()).expect("the predicate serialises");
    assert!(statement.contains(&format!("ClusterProfile/{run}-down")), "the failure is signed: {statement}");
    let mut written = vec![("log".to_string(), log.into_bytes()), ("statement".to_string(), statement.into_bytes())];
    written.extend(bundle.bundle().files().map(|(path, bytes)| (path.to_string(), bytes.to_vec())));
    for entry in walkdir::WalkDir::new(out.path().join("layout")).into_iter().map(Result::unwrap).filter(|e| e.file_type().is_file()) {
        let raw = std::fs::read(entry.path()).expect("reads the store");
        let mut inflated = Vec::new();
        if std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut inflated).is_ok() {
            written.push((format!("{} (inflated)", entry.path().display()), inflated));
        }
        written.push((entry.path().display().to_string(), raw));
    }
    for (place, bytes) in &written {
        let text = String::from_utf8_lossy(bytes);
        for secret in [PASSWORD, TOKEN] {
            assert!(!text.contains(secret), "{secret} is written in {place}");
        }
    }
}

fn sync(store: &str, cluster: &str, keyring: &str, state: &str) -> std::process::Output {
    sync_with(store, cluster, keyring, state, &[])
}

fn sync_with(store: &str, cluster: &str, keyring: &str, state: &str, extra: &[&str]) -> std::process::Output {
    std::process::Command::new(airlock_e2e::puller_bin())
        .args(["sync", "--source", store, "--cluster", cluster, "--state-namespace", state, "--keyring", keyring])
        .args(extra)
        .env("KUBECONFIG", airlock_e2e::managed_kubeconfig())
        .env("AIRLOCK_LOG", "warn")
        .output()
        .expect("airlock-puller runs")
}

fn assert_synced(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn live(args: &[&str]) -> bool {
    let out =
        airlock_e2e::publisher::kubectl("AIRLOCK_KUBECONFIG_MANAGED", &[&["get", "--ignore-not-found", "-o", "name"], args].concat(), b"");
    !String::from_utf8_lossy(&out.stdout).trim().is_empty()
}

/// Real charts of 2021, published and applied by `airlock-puller` to the 1.20.2 API server
/// as they are: ingress-nginx's admission Service has a port without `protocol` (its hook
/// Jobs are disabled: this API server has no node, and their image is not here);
/// kube-prometheus-stack's `crds/` CRDs carry a `status` block and
/// 43 custom resources need them. A second sync changes nothing, an upgrade applies the
/// release again and leaves the crds/ CRDs as they are (helm v3 never updates them, and the
/// profile's patches do not reach them, as Helm's post-renderer), and
/// Uninstall prunes the release but those CRDs.
#[tokio::test]
async fn applies_real_charts_to_a_1_20_api_server_and_uninstalls_them() {
    let run = airlock_e2e::publisher::unique("helm-apply");
    let short = format!("h{}", std::process::id() % 100_000);
    let repo = ChartRepo::serve(&charts_dir(), None);
    let helm = helm_paths()[0].display().to_string();
    let (fleet, out) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let profile = |action: &str, edition: &str| {
        let spec = format!(
            "  helmCharts:
  - repositoryURL: {url}
    repositoryName: airlock-test
    chartName: airlock-test/ingress-nginx
    chartVersion: 4.0.13
    releaseName: {short}-ing
    releaseNamespace: {short}-ingress
    helmChartAction: {action}
    options: {{disableHooks: true}}
  - repositoryURL: {url}
    repositoryName: airlock-test
    chartName: airlock-test/kube-prometheus-stack
    chartVersion: 23.3.2
    releaseName: {short}-kps
    releaseNamespace: {short}-monitoring
    helmChartAction: {action}
    values: |
      prometheusOperator:
        admissionWebhooks: {{enabled: false}}
      commonLabels: {{edition: '{edition}'}}
  patches:
  - target: {{kind: CustomResourceDefinition}}
    patch: |
      - {{op: add, path: /metadata/annotations/edition, value: '{edition}'}}
",
            url = repo.url
        );
        edge_fleet(&run, &short, "", &spec)
    };
    std::fs::write(fleet.path().join("fleet.yaml"), profile("Install", "1")).unwrap();
    let keys = airlock_e2e::publisher::Keys::new("helm");
    let store = format!("oci-layout:{}", out.path().join("layout").display());
    let fleet_dir = fleet.path().display().to_string();
    let publish = || {
        airlock_e2e::publisher::run_expect(
            &["publish", "--from-dir", &fleet_dir, "--to", &store, "--key", &keys.key, "--helm", &helm, "--no-cache"],
            0,
        )
    };
    let cluster = format!("{run}/edge");
    let state = format!("{short}-state");
    airlock_e2e::publisher::kubectl_ok("AIRLOCK_KUBECONFIG_MANAGED", &["create", "namespace", &state], b"");

    let published = publish();
    assert_eq!(airlock_e2e::publisher::summary(&published)[0].2, "published", "{published}");
    assert_synced(&sync(&store, &cluster, &keys.keyring_path, &state), "first sync");
    let admission = format!("{short}-ing-ingress-nginx-controller-admission");
    assert!(live(&["service", &admission, "-n", &format!("{short}-ingress")]), "the Service without protocol is applied");
    let hook_job = format!("{short}-ing-ingress-nginx-admission-create");
    assert!(
        !live(&["job", &hook_job, "-n", &format!("{short}-ingress")]),
        "disableHooks: no hook, which needs a node (tests/helm_hooks.rs)"
    );
    assert!(live(&["crd", "prometheuses.monitoring.coreos.com"]), "the chart's crds/ CRDs");
    // By its release label: the chart shortens its names to fit, so they depend on the run's.
    let release = format!("airlock.dev/helm-release={short}-kps");
    assert!(live(&["prometheus", "-n", &format!("{short}-monitoring"), "-l", &release]), "a custom resource of those CRDs");
    assert!(live(&["configmap", "-n", &format!("{short}-monitoring"), "-l", &format!("airlock.dev/helm-release={short}-kps")]));
    assert_synced(&sync(&store, &cluster, &keys.keyring_path, &state), "a second sync of the same bundle");
    std::fs::write(fleet.path().join("fleet.yaml"), profile("Install", "2")).unwrap();
    assert_eq!(airlock_e2e::publisher::summary(&publish())[0].1, "2");
    assert_synced(&sync(&store, &cluster, &keys.keyring_path, &state), "an upgrade, which applies the CRDs again");
    assert!(live(&["configmap", "-n", &format!("{short}-monitoring"), "-l", "edition=2"]), "the upgrade is applied");
    let crd = airlock_e2e::publisher::kubectl_ok(
        "AIRLOCK_KUBECONFIG_MANAGED",
        &["get", "crd", "prometheuses.monitoring.coreos.com", "-o", "jsonpath={.metadata.annotations}"],
        b"",
    );
    let annotations: serde_json::Value = serde_json::from_str(&crd).expect("annotations");
    assert_eq!(annotations["airlock.dev/version"], "1", "the crds/ CRDs are create-only, as helm v3 keeps them: {annotations}");
    assert!(annotations.get("edition").is_none(), "the profile's patches skip them, as Helm's post-renderer: {annotations}");

    std::fs::write(fleet.path().join("fleet.yaml"), profile("Uninstall", "2")).unwrap();
    let withdrawn = publish();
    assert_eq!(airlock_e2e::publisher::summary(&withdrawn)[0].1, "3", "{withdrawn}");
    // Uninstalling the charts would prune every object of the cluster: held until confirmed.
    let held = sync(&store, &cluster, &keys.keyring_path, &state);
    let stderr = String::from_utf8_lossy(&held.stderr);
    assert_eq!(held.status.code(), Some(3), "the mass prune is held: {stderr}");
    assert!(stderr.contains("of the") && stderr.contains("held; confirm with"), "{stderr}");
    assert!(live(&["service", &admission, "-n", &format!("{short}-ingress")]), "nothing pruned while held");
    let confirmed = sync_with(&store, &cluster, &keys.keyring_path, &state, &["--allow-mass-prune"]);
    assert_synced(&confirmed, "the sync after Uninstall, the mass prune confirmed");
    assert!(!live(&["service", &admission, "-n", &format!("{short}-ingress")]), "Uninstall prunes the release");
    assert!(!live(&["clusterrole", &format!("{short}-ing-ingress-nginx")]), "and its cluster-scoped objects");
    assert!(live(&["crd", "prometheuses.monitoring.coreos.com"]), "but not the crds/ CRDs, which helm never deletes");
    let _ = airlock_e2e::publisher::kubectl(
        "AIRLOCK_KUBECONFIG_MANAGED",
        &["delete", "namespace", &state, &format!("{short}-ingress"), &format!("{short}-monitoring"), "--wait=false"],
        b"",
    );
}
