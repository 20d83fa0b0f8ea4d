//! `airlock-publisher publish --from-dir` with profiles whose `policyRefs` name a
//! `remoteURL`: a tar.gz and a plain YAML behind a bearer token served by an HTTP server
//! this test runs on 127.0.0.1, and `oci://` artifacts pushed to the real registries of
//! `hack/services.sh` (plain HTTP; one templated, one behind basic auth from a Secret). One URL answers 404: that profile alone
//! fails, naming itself, its policyRef and the URL, and the others publish; once the
//! tarball is gone too, its profile keeps the part it had. Read from the live management
//! apiserver, a Profile fetches with a Secret of its own namespace.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use airlock_e2e::publisher::{Keys, file, kubectl, kubectl_ok, read_back, run, run_expect};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "s3cret-token";
const LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).expect("gzip writes");
    e.finish().expect("gzip finishes")
}

/// A tar of regular files, in the order given.
fn tar_of(files: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, text) in files {
        let mut h = tar::Header::new_ustar();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, text.as_bytes()).expect("tar entry");
    }
    b.into_inner().expect("tar finishes")
}

/// What the test's server serves, by path; the test may change it between runs.
type Routes = Arc<Mutex<BTreeMap<&'static str, Vec<u8>>>>;

/// Serves `routes` on 127.0.0.1 (anything else is 404), `/plain.yaml` only with the bearer
/// token; records each request's path and Authorization header.
async fn serve(routes: Routes) -> (u16, Arc<Mutex<Vec<(String, String)>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let port = listener.local_addr().expect("an address").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let (routes, log) = (routes.clone(), log.clone());
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request).into_owned();
                let path = text.split_whitespace().nth(1).unwrap_or_default().to_string();
                let auth = text
                    .lines()
                    .find_map(|l| {
                        l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.trim().to_string())
                    })
                    .unwrap_or_default();
                log.lock().expect("not poisoned").push((path.clone(), auth.clone()));
                let body = routes.lock().expect("not poisoned").get(path.as_str()).cloned();
                let (status, body) = match body {
                    Some(_) if path == "/plain.yaml" && auth != format!("Bearer {TOKEN}") => ("401 Unauthorized", Vec::new()),
                    Some(body) => ("200 OK", body),
                    None => ("404 Not Found", Vec::new()),
                };
                let head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(&body).await;
            });
        }
    });
    (port, seen)
}

const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: remote-app}\n";
const SETTINGS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: remote-app}\ndata: {color: blue}\n";
const PLAIN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: team}\ndata: {from: token}\n";
const BASIC: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: oci-basic, namespace: team}\ndata: {from: basic}\n";
const TEMPLATED: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 'oci-{{ .Cluster.metadata.name }}', namespace: team}\ndata: {from: oci}\n";

/// A ClusterProfile selecting the test's cluster, with `refs` as its policyRefs.
fn profile(name: &str, refs: &[String]) -> String {
    let refs: String = refs.iter().map(|r| format!("  - remoteURL: {r}\n")).collect();
    format!(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: {name}}}\n\
         spec:\n  clusterSelector: {{matchLabels: {{env: remote}}}}\n  policyRefs:\n{refs}"
    )
}

fn management(port: u16, oci: &str, oci_auth: &str, (user, password): (&str, &str)) -> String {
    let http = format!("http://127.0.0.1:{port}");
    let objects = [
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {name: edge, namespace: fleet, labels: {env: remote}}\nspec: {pullMode: true}\n"
            .to_string(),
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: fetch-token, namespace: ops}}\nstringData: {{token: {TOKEN}}}\n"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: registry-login, namespace: ops}}\n\
             stringData: {{username: {user}, password: {password}}}\n"
        ),
        profile(
            "remote-http",
            &[
                format!("{{url: '{http}/bundle.tar.gz'}}"),
                format!("{{url: '{http}/plain.yaml', secretRef: {{namespace: ops, name: fetch-token}}}}"),
            ],
        ),
        profile(
            "remote-oci",
            &[
                format!("{{url: '{oci}', plainHTTP: true, template: true}}"),
                format!("{{url: '{oci_auth}', plainHTTP: true, secretRef: {{namespace: ops, name: registry-login}}}}"),
            ],
        ),
        profile("remote-gone", &[format!("{{url: '{http}/gone.yaml?sig=hidden'}}")]),
    ];
    objects.join("---\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_urls_publish_and_a_404_fails_only_its_profile_keeping_its_part() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let routes: Routes = Arc::new(Mutex::new(BTreeMap::from([
        (
            "/bundle.tar.gz",
            gzip(&tar_of(&[("z/settings.yaml", SETTINGS), ("README.md", "not a manifest"), ("a/namespace.yml", NAMESPACE)])),
        ),
        ("/plain.yaml", PLAIN.as_bytes().to_vec()),
    ])));
    let (port, seen) = serve(routes.clone()).await;
    let registry = airlock_e2e::service_env("AIRLOCK_REGISTRY");
    let repository = format!("airlock-remote/{}", airlock_e2e::publisher::unique("remote"));
    airlock_e2e::oci::push_artifact(&registry, &repository, "v1", LAYER, &gzip(&tar_of(&[("cm.yaml", TEMPLATED)])), None).await;
    let oci = format!("oci://{registry}/{repository}:v1");
    let [authed, user, password] =
        ["AIRLOCK_REGISTRY_AUTH", "AIRLOCK_REGISTRY_AUTH_USER", "AIRLOCK_REGISTRY_AUTH_PASSWORD"].map(airlock_e2e::service_env);
    // A layer that is one gzip-compressed document rather than a tar.
    airlock_e2e::oci::push_artifact(&authed, &repository, "v2", LAYER, &gzip(BASIC.as_bytes()), Some((&user, &password))).await;
    let oci_auth = format!("oci://{authed}/{repository}:v2");

    let (keys, tmp) = (Keys::new("remote"), tempfile::tempdir().expect("tempdir"));
    let dir = tmp.path().join("management");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(dir.join("all.yaml"), management(port, &oci, &oci_auth, (&user, &password))).expect("writes");
    let store = format!("oci-layout:{}", tmp.path().join("layout").display());
    let args = ["publish", "--from-dir", dir.to_str().expect("UTF-8"), "--to", &store, "--key", &keys.key, "--no-cache"];
    let out = run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a failed profile is a partial run\nstderr:\n{stderr}");
    let gone = format!("ClusterProfile/remote-gone: spec.policyRefs[0]: remoteURL http://127.0.0.1:{port}/gone.yaml not found");
    assert!(stderr.contains(&gone), "{stderr}");
    let leaks = ["hidden", TOKEN, password.as_str()];
    assert!(!leaks.iter().any(|l| stderr.contains(l)), "no query string or credential in messages: {stderr}");

    let bundle = read_back(&store, &"fleet/edge".parse().expect("an id"), &keys.keyring).await;
    let paths: Vec<&str> = bundle.bundle().files().map(|(p, _)| p).collect();
    assert_eq!(
        paths,
        [
            "ClusterProfile.remote-http/ConfigMap.remote-app.settings.yaml",
            "ClusterProfile.remote-http/ConfigMap.team.plain.yaml",
            "ClusterProfile.remote-http/Namespace.cluster.remote-app.yaml",
            "ClusterProfile.remote-http/Namespace.cluster.team.yaml",
            // The implicit Namespace team goes once, with the part that sorts first.
            "ClusterProfile.remote-oci/ConfigMap.team.oci-basic.yaml",
            "ClusterProfile.remote-oci/ConfigMap.team.oci-edge.yaml",
        ]
    );
    assert!(file(&bundle, "ClusterProfile.remote-http/ConfigMap.remote-app.settings.yaml").contains("color: blue"));
    assert!(file(&bundle, "ClusterProfile.remote-http/ConfigMap.team.plain.yaml").contains("from: token"));
    assert!(file(&bundle, "ClusterProfile.remote-oci/ConfigMap.team.oci-edge.yaml").contains("from: oci"));
    assert!(file(&bundle, "ClusterProfile.remote-oci/ConfigMap.team.oci-basic.yaml").contains("from: basic"));
    let failed = bundle.predicate().profiles.iter().find(|p| p.name == "ClusterProfile.remote-gone").and_then(|p| p.failure.clone());
    assert!(failed.is_some_and(|f| f.message.contains(&gone)), "the failed part says why");

    let seen = seen.lock().expect("not poisoned").clone();
    let plain: Vec<&String> = seen.iter().filter(|(p, _)| p == "/plain.yaml").map(|(_, a)| a).collect();
    assert_eq!(plain, [&format!("Bearer {TOKEN}")], "one request, with the Secret's token: {seen:?}");
    assert!(seen.iter().filter(|(p, _)| p != "/plain.yaml").all(|(_, a)| a.is_empty()), "no credentials elsewhere: {seen:?}");

    // The tarball gone, its profile keeps the part it had; the OCI profile is unchanged.
    routes.lock().expect("not poisoned").remove("/bundle.tar.gz");
    let again = run(&args);
    assert_eq!(again.status.code(), Some(2), "{}", String::from_utf8_lossy(&again.stderr));
    let kept = read_back(&store, &"fleet/edge".parse().expect("an id"), &keys.keyring).await;
    let http_part = |b: &airlock_bundle::VerifiedBundle| b.bundle().part("ClusterProfile.remote-http").map(|p| p.tar());
    assert_eq!(http_part(&kept), http_part(&bundle), "the last good part is kept");
    let failure = kept.predicate().profiles.iter().find(|p| p.name == "ClusterProfile.remote-http").and_then(|p| p.failure.clone());
    let why = format!("ClusterProfile/remote-http: spec.policyRefs[0]: remoteURL http://127.0.0.1:{port}/bundle.tar.gz not found");
    assert!(failure.is_some_and(|f| f.message.contains(&why)), "the kept part says why");
}

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";

/// Removes the run's namespace (and so its objects) from the management apiserver.
struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| kubectl_ok(MANAGEMENT, &["delete", "namespace", &self.0, "--wait=false"], b""));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_profile_fetches_with_a_secret_of_its_namespace() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (port, seen) = serve(Arc::new(Mutex::new(BTreeMap::from([("/plain.yaml", PLAIN.as_bytes().to_vec())])))).await;
    let _crds = airlock_e2e::publisher::install_crds();
    let run_id = airlock_e2e::publisher::unique("remote-live");
    kubectl_ok(MANAGEMENT, &["create", "namespace", &run_id], b"");
    let _cleanup = Namespace(run_id.clone());
    let objects = format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {{name: edge, namespace: {run_id}, labels: {{env: remote}}}}\nspec: {{pullMode: true}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {{name: fetch-token, namespace: {run_id}}}\nstringData: {{token: {TOKEN}}}\n---\n\
         apiVersion: config.projectsveltos.io/v1beta1\nkind: Profile\nmetadata: {{name: web, namespace: {run_id}}}\n\
         spec:\n  clusterSelector: {{matchLabels: {{env: remote}}}}\n  policyRefs:\n  \
         - remoteURL: {{url: 'http://127.0.0.1:{port}/plain.yaml', secretRef: {{namespace: {run_id}, name: fetch-token}}}}\n"
    );
    // kubectl validates against the OpenAPI the apiserver publishes, which lags a CRD
    // update by a few seconds: the old schema's complaints are retried meanwhile.
    for attempt in 0..30 {
        let out = kubectl(MANAGEMENT, &["apply", "--server-side", "-f", "-"], objects.as_bytes());
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            break;
        }
        assert!(attempt < 29 && (stderr.contains("unknown field") || stderr.contains("missing required field")), "{stderr}");
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let (keys, tmp) = (Keys::new("remote-live"), tempfile::tempdir().expect("tempdir"));
    let store = format!("oci-layout:{}", tmp.path().join("layout").display());
    let (kc, cluster) = (airlock_e2e::service_env(MANAGEMENT), format!("{run_id}/edge"));
    run_expect(&["publish", "--kubeconfig", &kc, "--to", &store, "--key", &keys.key, "--no-cache", "--cluster", &cluster], 0);
    let bundle = read_back(&store, &cluster.parse().expect("an id"), &keys.keyring).await;
    let part = format!("Profile.{run_id}.web");
    let paths: Vec<&str> = bundle.bundle().files().map(|(p, _)| p).collect();
    assert_eq!(paths, [format!("{part}/ConfigMap.team.plain.yaml"), format!("{part}/Namespace.cluster.team.yaml")]);
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(seen, [("/plain.yaml".to_string(), format!("Bearer {TOKEN}"))]);
}
