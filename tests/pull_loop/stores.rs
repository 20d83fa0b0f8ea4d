//! The stores that scope what each cluster may write (bundles-format.md 14.7.1), each this
//! test's own on free ports of 127.0.0.1, stopped when dropped: a registry with token
//! authentication behind `hack/registry-token.py`, and a Git server behind
//! `hack/git-http-server.py` whose repository runs `hack/git-reports-hook`. Pods on the
//! node reach both over the host network. Nothing here knows Kubernetes.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// The registry binary `hack/registry.sh` serves with.
const REGISTRY_BIN: &str = "/usr/bin/docker-registry";
/// The repository prefix of the token registry's store.
pub const PREFIX: &str = "airlock";
/// The user the publisher writes and reads as, everywhere.
pub const PUBLISHER: (&str, &str) = ("publisher", "publisher-pw");

/// Rights of one user of the token service: repository names or `prefix*` patterns.
pub struct Rights<'a> {
    pub user: (&'a str, &'a str),
    pub pull: Vec<String>,
    pub push: Vec<String>,
}

/// A registry with token authentication and its token service.
pub struct TokenRegistry {
    pub addr: String,
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

impl TokenRegistry {
    pub fn start(users: &[Rights<'_>]) -> TokenRegistry {
        let dir = tempfile::tempdir().expect("tempdir");
        let (addr, token) = (free_addr(), free_addr());
        let (key, cert) = (dir.path().join("token.key"), dir.path().join("token.crt"));
        let out = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=airlock-test-token"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("openssl runs");
        assert!(out.status.success(), "openssl req: {}", String::from_utf8_lossy(&out.stderr));
        let root = dir.path().display();
        let config = format!(
            "version: 0.1\nlog: {{level: warn}}\nstorage: {{filesystem: {{rootdirectory: {root}/data}}}}\n\
             http: {{addr: \"{addr}\", secret: loop-test}}\n\
             auth: {{token: {{realm: \"http://{token}/token\", service: airlock-test, issuer: airlock-test-token, \
             rootcertbundle: {}}}}}\n",
            cert.display()
        );
        std::fs::write(dir.path().join("config.yml"), config).expect("registry config");
        let mut registry = TokenRegistry { addr, dir, children: Vec::new() };
        registry.set_users(users);
        let (host, port) = token.split_once(':').expect("host:port");
        let script = airlock_e2e::root().join("hack/registry-token.py");
        let mut service = Command::new("python3");
        service.arg(script).args([host, port]).arg("--key").arg(&key).arg("--cert").arg(&cert);
        service.arg("--users").arg(registry.dir.path().join("users.json"));
        registry.children.push(spawn(&mut service, &registry.dir.path().join("token.log")));
        let mut serve = Command::new(REGISTRY_BIN);
        serve.arg("serve").arg(registry.dir.path().join("config.yml"));
        registry.children.push(spawn(&mut serve, &registry.dir.path().join("registry.log")));
        wait_for(&registry.addr);
        wait_for(&token);
        registry
    }

    /// Replaces every user's rights at once; the token service reads them per request.
    pub fn set_users(&self, users: &[Rights<'_>]) {
        let file: serde_json::Map<String, serde_json::Value> =
            users.iter().map(|r| (r.user.0.to_string(), json!({"password": r.user.1, "pull": r.pull, "push": r.push}))).collect();
        let next = self.dir.path().join("users.json.next");
        std::fs::write(&next, serde_json::Value::Object(file).to_string()).expect("users file");
        std::fs::rename(next, self.dir.path().join("users.json")).expect("users file replaced");
    }

    /// The store reference pullers and the publisher use.
    pub fn source(&self) -> String {
        format!("oci+http://{}/{PREFIX}", self.addr)
    }
}

/// A Git server with basic auth whose repository scopes each cluster user's pushes to its
/// reports branch.
pub struct GitServer {
    pub addr: String,
    dir: tempfile::TempDir,
    child: Child,
}

/// The repository the Git server serves.
const REPO: &str = "fleet.git";

impl GitServer {
    /// Serves one empty repository to `users`; `writers` are (user, cluster id) pairs the
    /// hook holds to their reports branch.
    pub fn start(users: &[(&str, &str)], writers: &[(&str, &str)]) -> GitServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("root").join(REPO);
        let git = |args: &[&str]| {
            let out = Command::new("git").args(args).output().expect("git runs");
            assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        git(&["init", "--quiet", "--bare", "--initial-branch=main", repo.to_str().unwrap()]);
        git(&["-C", repo.to_str().unwrap(), "config", "http.receivepack", "true"]);
        std::fs::copy(airlock_e2e::root().join("hack/git-reports-hook"), repo.join("hooks/pre-receive")).expect("hook installed");
        let lines: String = writers.iter().map(|(user, cluster)| format!("{user} {cluster}\n")).collect();
        std::fs::write(repo.join("airlock-report-writers"), lines).expect("writers file");
        let lines: String = users.iter().map(|(user, password)| format!("{user}:{password}\n")).collect();
        std::fs::write(dir.path().join("users"), lines).expect("users file");
        let addr = free_addr();
        let (host, port) = addr.split_once(':').expect("host:port");
        let mut command = Command::new("python3");
        command.arg(airlock_e2e::root().join("hack/git-http-server.py")).args([host, port]).arg(dir.path().join("root"));
        command.arg("--users").arg(dir.path().join("users"));
        let child = spawn(&mut command, &dir.path().join("server.log"));
        wait_for(&addr);
        GitServer { addr, dir, child }
    }

    /// The store reference pullers use: no credentials in it.
    pub fn source(&self) -> String {
        format!("git+http://{}/{REPO}", self.addr)
    }

    /// The store reference the publisher writes to, as [`PUBLISHER`].
    pub fn publish_to(&self) -> String {
        format!("git+http://{}:{}@{}/{REPO}", PUBLISHER.0, PUBLISHER.1, self.addr)
    }

    /// The bare repository, as the server keeps it.
    pub fn repo(&self) -> std::path::PathBuf {
        self.dir.path().join("root").join(REPO)
    }
}

impl Drop for TokenRegistry {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for GitServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_addr() -> String {
    let port = TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("address").port();
    format!("127.0.0.1:{port}")
}

fn spawn(command: &mut Command, log: &Path) -> Child {
    let log = std::fs::File::create(log).expect("log file");
    command.stdout(Stdio::null()).stderr(log).spawn().expect("the server starts")
}

fn wait_for(addr: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {addr} after 20s");
        std::thread::sleep(Duration::from_millis(100));
    }
}
