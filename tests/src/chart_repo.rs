//! A Helm chart repository on 127.0.0.1 inside the test process: serves the files of one
//! directory (`index.yaml` and the chart archives) over HTTP/1.1, optionally behind basic
//! auth, and counts the requests it answered and the archives it served. Dropping it stops it. Also where the test
//! charts and the helm binaries are.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use base64::Engine;

pub struct ChartRepo {
    pub url: String,
    requests: Arc<AtomicU64>,
    archives: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl ChartRepo {
    /// Serves `dir`; with `login`, only to requests carrying that user and password.
    pub fn serve(dir: &Path, login: Option<(&str, &str)>) -> ChartRepo {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local addr").port();
        let requests = Arc::new(AtomicU64::new(0));
        let archives = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let expected = login.map(|(u, p)| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))));
        let (dir, counter, stopping) = (dir.to_path_buf(), Arc::clone(&requests), Arc::clone(&stop));
        let archive_counter = Arc::clone(&archives);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                counter.fetch_add(1, Ordering::Relaxed);
                let (dir, expected, archives) = (dir.clone(), expected.clone(), Arc::clone(&archive_counter));
                std::thread::spawn(move || answer(stream, &dir, expected.as_deref(), &archives));
            }
        });
        ChartRepo { url: format!("http://127.0.0.1:{port}"), requests, archives, stop, port }
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// How many chart archives (`.tgz`) it served.
    pub fn archives(&self) -> u64 {
        self.archives.load(Ordering::Relaxed)
    }
}

impl Drop for ChartRepo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn answer(stream: TcpStream, dir: &Path, expected: Option<&str>, archives: &AtomicU64) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("authorization")
        {
            authorization = Some(value.trim().to_string());
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/").split('?').next().unwrap_or("/").to_string();
    let file: Option<PathBuf> = path
        .trim_start_matches('/')
        .split('/')
        .all(|c| !c.is_empty() && !c.starts_with('.'))
        .then(|| dir.join(path.trim_start_matches('/')));
    let mut out = stream;
    if expected.is_some() && authorization.as_deref() != expected {
        let _ = out.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"charts\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    match file.and_then(|f| std::fs::read(f).ok()) {
        Some(body) => {
            if path.ends_with(".tgz") {
                archives.fetch_add(1, Ordering::Relaxed);
            }
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = out.write_all(head.as_bytes()).and_then(|()| out.write_all(&body));
        }
        None => {
            let _ = out.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    }
}

/// A pull-mode SveltosCluster `<run>/edge` labelled `site: <site>`, annotated with
/// `annotations` (a YAML flow mapping's entries) and allowed Secrets in clear (it has no
/// age recipient, and charts render Secrets), that reported Kubernetes v1.20.2, and a
/// ClusterProfile `<run>` selecting it whose spec goes on with `spec` (its fields, indented
/// two spaces).
pub fn edge_fleet(run: &str, site: &str, annotations: &str, spec: &str) -> String {
    let annotations =
        ["airlock.dev/plaintext-secrets: allow", annotations].into_iter().filter(|a| !a.is_empty()).collect::<Vec<_>>().join(", ");
    format!(
        "apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {{name: edge, namespace: {run}, labels: {{site: {site}}}, annotations: {{{annotations}}}}}
spec: {{pullMode: true}}
status: {{version: v1.20.2}}
---
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata: {{name: {run}}}
spec:
  clusterSelector: {{matchLabels: {{site: {site}}}}}
{spec}"
    )
}

/// The test charts: `$AIRLOCK_CHARTS`, else `shared/charts` beside the checkout.
pub fn charts_dir() -> PathBuf {
    let dir = std::env::var_os("AIRLOCK_CHARTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/charts"));
    assert!(dir.join("index.yaml").is_file(), "no test charts at {} (set AIRLOCK_CHARTS to shared/charts)", dir.display());
    dir
}

/// The helm binaries `hack/helm.sh` installs: `$AIRLOCK_HELM_V3`/`$AIRLOCK_HELM_V4`, else
/// `$AIRLOCK_CACHE/helm/<version>/helm`. Missing ones fail the test: run hack/helm.sh.
pub fn helm_paths() -> Vec<PathBuf> {
    let cache = std::env::var_os("AIRLOCK_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/airlock"));
    [("AIRLOCK_HELM_V3", "v3.17.2"), ("AIRLOCK_HELM_V4", "v4.1.4")]
        .into_iter()
        .map(|(var, version)| {
            let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| cache.join("helm").join(version).join("helm"));
            assert!(path.is_file(), "no helm {version} at {}: run hack/helm.sh", path.display());
            path
        })
        .collect()
}
