//! Where charts come from, with the real helm binaries: an OCI registry (the test
//! services' `$AIRLOCK_REGISTRY`, and `$AIRLOCK_REGISTRY_AUTH` with a login), HTTP
//! repositories inside the test process (with and without basic auth), ranges, sources
//! that are down or lack the chart, and a chart that renders differently every time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_e2e::chart_repo::{ChartRepo, charts_dir, helm_paths};
use airlock_publisher::render::helm::{
    Access, Capabilities, ChartRef, Class, Credentials, Helm, HelmError, ReleaseRequest, Renderer, RendererSettings, TemplateOptions,
};
use serde_json::json;

fn renderer(path: &Path, cache: Option<&Path>) -> Renderer {
    let helm = Helm::at(path).expect("helm runs");
    Renderer::new(helm, &RendererSettings { cache_dir: cache.map(Path::to_path_buf), check_determinism: true, ..Default::default() })
        .expect("renderer")
}

fn request(chart: ChartRef, release: &str) -> ReleaseRequest {
    ReleaseRequest {
        chart,
        release: release.into(),
        namespace: release.into(),
        values: json!({}),
        capabilities: Capabilities { kube_version: Some("v1.20.2".into()), api_versions: vec![] },
        options: TemplateOptions::default(),
    }
}

fn http_chart(url: &str, name: &str, version: &str, access: Access) -> ChartRef {
    ChartRef::new("ClusterProfile/test", url, "airlock-test", &format!("airlock-test/{name}"), version, access).expect("a valid entry")
}

/// Runs a helm command for test set-up, in throw-away homes.
fn helm_cmd(helm: &Path, home: &Path, args: &[&str]) {
    let out = Command::new(helm)
        .args(args)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("helm runs");
    assert!(out.status.success(), "helm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A repository prefix of its own on a test registry, so runs never share charts.
fn oci_prefix(registry: &str, test: &str, helm: &Helm) -> String {
    format!("oci://{registry}/airlock-e2e-helm/{test}-{}-v{}", std::process::id(), helm.version().major)
}

#[test]
fn renders_an_oci_chart_as_its_http_twin() {
    let registry = airlock_e2e::service_env("AIRLOCK_REGISTRY");
    let charts = charts_dir();
    let repo = ChartRepo::serve(&charts, None);
    for path in helm_paths() {
        let home = tempfile::tempdir().expect("tempdir");
        let renderer = renderer(&path, None);
        let prefix = oci_prefix(&registry, "twin", renderer.helm());
        let tgz = charts.join("kube-state-metrics-4.0.2.tgz");
        helm_cmd(&path, home.path(), &["push", tgz.to_str().unwrap(), &prefix, "--plain-http"]);
        let access = Access { plain_http: true, ..Access::default() };
        let oci = ChartRef::new("ClusterProfile/test", &prefix, "airlock-oci", "kube-state-metrics", "4.0.2", access).expect("valid");
        let from_oci = renderer.render(&request(oci, "ksm")).expect("renders from OCI");
        let from_http =
            renderer.render(&request(http_chart(&repo.url, "kube-state-metrics", "4.0.2", Access::default()), "ksm")).expect("renders");
        assert_eq!(from_oci.release.chart.digest, from_http.release.chart.digest, "the pulled archive is the pushed one");
        assert_eq!(from_oci.release, from_http.release);
        assert_eq!(from_oci.release.objects.len(), 5);

        // A range over OCI tags, resolved by helm.
        let ranged = ChartRef::new(
            "ClusterProfile/test",
            &prefix,
            "airlock-oci",
            "kube-state-metrics",
            "^4.0",
            Access { plain_http: true, ..Access::default() },
        )
        .expect("valid");
        assert_eq!(renderer.fetch(&ranged).expect("resolves").version, "4.0.2");
    }
}

#[test]
fn logs_in_to_a_registry_with_a_docker_config() {
    let registry = airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH");
    let (user, password) =
        (airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH_USER"), airlock_e2e::service_env("AIRLOCK_REGISTRY_AUTH_PASSWORD"));
    let charts = charts_dir();
    for path in helm_paths() {
        let home = tempfile::tempdir().expect("tempdir");
        let renderer = renderer(&path, None);
        let prefix = oci_prefix(&registry, "login", renderer.helm());
        let config = json!({"auths": {&registry: {"username": &user, "password": &password}}}).to_string();
        std::fs::create_dir_all(home.path().join("config/registry")).unwrap();
        std::fs::write(home.path().join("config/registry/config.json"), &config).unwrap();
        let tgz = charts.join("kube-state-metrics-4.0.2.tgz");
        helm_cmd(&path, home.path(), &["push", tgz.to_str().unwrap(), &prefix, "--plain-http"]);

        let data = BTreeMap::from([(".dockerconfigjson".to_string(), config.into_bytes())]);
        let credentials = Credentials::from_secret_data(&data, None).expect("a docker config");
        let access = Access { plain_http: true, credentials: Some(credentials), ..Access::default() };
        let chart = ChartRef::new("ClusterProfile/test", &prefix, "r", "kube-state-metrics", "4.0.2", access).expect("valid");
        assert_eq!(renderer.render(&request(chart, "ksm")).expect("renders with the login").release.objects.len(), 5);

        let anonymous = ChartRef::new(
            "ClusterProfile/test",
            &prefix,
            "r",
            "kube-state-metrics",
            "4.0.2",
            Access { plain_http: true, ..Access::default() },
        )
        .expect("valid");
        let err = renderer.render(&request(anonymous, "ksm")).unwrap_err();
        assert!(matches!(err, HelmError::SourceUnavailable { .. }), "{err}");
    }
}

#[test]
fn logs_in_to_an_http_repository_without_a_password_on_the_command_line() {
    let repo = ChartRepo::serve(&charts_dir(), Some(("airlock", "chart-pw")));
    for path in helm_paths() {
        let renderer = renderer(&path, None);
        let login = Credentials::Basic { username: "airlock".into(), password: "chart-pw".into() };
        let chart = http_chart(&repo.url, "kube-state-metrics", "4.0.2", Access { credentials: Some(login), ..Access::default() });
        assert_eq!(renderer.render(&request(chart, "ksm")).expect("renders with the login").release.objects.len(), 5);
        let err = renderer.render(&request(http_chart(&repo.url, "ingress-nginx", "4.0.13", Access::default()), "x")).unwrap_err();
        assert_eq!(err.class(), Class::Unavailable, "{err}");
    }
}

#[test]
fn resolves_a_range_once_per_publish_and_records_the_version() {
    let repo = ChartRepo::serve(&charts_dir(), None);
    for path in helm_paths() {
        let renderer = renderer(&path, None);
        for (chart, range, want) in
            [("ingress-nginx", "^4.0.0", "4.0.13"), ("cert-manager", ">=1.7.0 <1.8.0", "v1.7.3"), ("kube-state-metrics", "", "4.0.2")]
        {
            let fetched = renderer.fetch(&http_chart(&repo.url, chart, range, Access::default())).expect("resolves");
            assert_eq!(fetched.version, want, "{chart} {range:?}");
        }
        let (before, requests) = (renderer.helm().invocations(), repo.requests());
        renderer.fetch(&http_chart(&repo.url, "ingress-nginx", "^4.0.0", Access::default())).expect("resolves");
        assert_eq!((renderer.helm().invocations(), repo.requests()), (before, requests), "the range was resolved again");
    }
}

#[test]
fn fails_clearly_when_the_source_is_down_or_lacks_the_chart() {
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let repo = ChartRepo::serve(&charts_dir(), None);
    for path in helm_paths() {
        let renderer = renderer(&path, None);
        let err = renderer.render(&request(http_chart(&dead, "ingress-nginx", "4.0.13", Access::default()), "x")).unwrap_err();
        assert!(matches!(err, HelmError::SourceUnavailable { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("ClusterProfile/test") && text.contains(&dead) && text.contains("ingress-nginx"), "{text}");

        let err = renderer.render(&request(http_chart(&repo.url, "ingress-nginx", "9.9.9", Access::default()), "x")).unwrap_err();
        assert_eq!(err.class(), Class::NotFound, "{err}");
        let err = renderer.render(&request(http_chart(&repo.url, "no-such-chart", "1.0.0", Access::default()), "x")).unwrap_err();
        assert_eq!(err.class(), Class::NotFound, "{err}");
    }
}

#[test]
fn the_cache_renders_exact_versions_with_the_source_gone() {
    let cache = tempfile::tempdir().expect("tempdir");
    for path in helm_paths() {
        let chart = {
            let repo = ChartRepo::serve(&charts_dir(), None);
            let first = renderer(&path, Some(cache.path()));
            first.fetch(&http_chart(&repo.url, "ingress-nginx", "4.0.13", Access::default())).expect("fetches");
            http_chart(&repo.url, "ingress-nginx", "4.0.13", Access::default())
        };
        // The repository is gone; another values set must still render, from the cache.
        let later = renderer(&path, Some(cache.path()));
        let mut req = request(chart, "ingress-nginx");
        req.values = json!({"controller": {"replicaCount": 2}});
        assert_eq!(later.render(&req).expect("renders offline").release.chart.version, "4.0.13");
    }
}

/// A chart whose ConfigMap holds a random string, packaged into `dir` as a repository.
fn random_chart(helm: &Path, dir: &Path) -> PathBuf {
    let src = dir.join("src/random");
    std::fs::create_dir_all(src.join("templates")).unwrap();
    std::fs::write(src.join("Chart.yaml"), "apiVersion: v2\nname: random\nversion: 0.1.0\n").unwrap();
    std::fs::write(
        src.join("templates/secret.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-password\ndata:\n  password: {{ randAlphaNum 16 | quote }}\n",
    )
    .unwrap();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    helm_cmd(helm, dir, &["package", src.to_str().unwrap(), "--destination", repo.to_str().unwrap()]);
    helm_cmd(helm, dir, &["repo", "index", repo.to_str().unwrap()]);
    repo
}

#[test]
fn keeps_the_first_render_of_a_nondeterministic_chart() {
    for path in helm_paths() {
        let work = tempfile::tempdir().expect("tempdir");
        let repo = ChartRepo::serve(&random_chart(&path, work.path()), None);
        let cache = work.path().join("cache");
        let first = renderer(&path, Some(&cache))
            .render(&request(http_chart(&repo.url, "random", "0.1.0", Access::default()), "r"))
            .expect("renders");
        assert!(first.nondeterministic, "two renders of randAlphaNum were equal");
        let later = renderer(&path, Some(&cache));
        let again = later.render(&request(http_chart(&repo.url, "random", "0.1.0", Access::default()), "r")).expect("renders");
        assert!(again.remembered && again.nondeterministic);
        assert_eq!(again.release.objects, first.release.objects, "the password changed with unchanged inputs");
    }
}
