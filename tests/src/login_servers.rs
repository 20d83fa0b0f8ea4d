//! The stores the credential renewal tests log in to: a registry (the binary
//! `hack/registry.sh` serves with, htpasswd auth) or a Git server (`hack/git-http-server.py`
//! with `--users`), each this test's own on a free port, so that its users change without
//! touching the shared services. Both re-read their users file when it changes (Distribution
//! on a new modification time, the Git server on every request), so revoking a user is real.
//! [`Server`] hides which of the two a test runs against; it knows nothing of Kubernetes.
//! The per-cluster Git layout test (`git_layout`) uses the Git server alone, with more
//! repositories and users whose lines restrict them to some.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The registry binary `hack/registry.sh` serves with.
const REGISTRY_BIN: &str = "/usr/bin/docker-registry";
/// The repository the Git server serves.
const REPO: &str = "fleet.git";
/// The user the publisher writes the store as.
pub const PUBLISHER: (&str, &str) = ("publisher", "publisher-pw");

/// A store with users, stopped when dropped.
pub struct Server {
    kind: Kind,
    child: Child,
    dir: tempfile::TempDir,
    addr: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Registry,
    Git,
}

/// What a credentials Secret holds for one login: its type, data key and data.
pub struct Login {
    pub secret_type: &'static str,
    pub key: &'static str,
    pub data: Vec<u8>,
}

impl Server {
    /// A registry with htpasswd auth.
    pub fn registry(users: &[(&str, &str)]) -> Server {
        assert!(Path::new(REGISTRY_BIN).exists(), "{REGISTRY_BIN} is missing: run `hack/services.sh start`, which installs it");
        let (dir, addr) = (tempfile::tempdir().expect("tempdir"), free_addr());
        let root = dir.path().display();
        let config = format!(
            "version: 0.1\nlog: {{level: warn}}\nstorage: {{filesystem: {{rootdirectory: {root}/data}}}}\n\
             http: {{addr: \"{addr}\", secret: credentials-test}}\n\
             auth: {{htpasswd: {{realm: credentials-test, path: {root}/htpasswd}}}}\n"
        );
        std::fs::write(dir.path().join("config.yml"), config).expect("registry config");
        let child = spawn(Command::new(REGISTRY_BIN).arg("serve").arg(dir.path().join("config.yml")), dir.path());
        Server { kind: Kind::Registry, child, dir, addr }.ready(users)
    }

    /// A Git server over smart HTTP with basic auth, serving one empty repository.
    pub fn git(users: &[(&str, &str)]) -> Server {
        let (dir, addr) = (tempfile::tempdir().expect("tempdir"), free_addr());
        let script = crate::root().join("hack/git-http-server.py");
        let (host, port) = addr.split_once(':').expect("host:port");
        let mut command = Command::new("python3");
        command.arg(script).args([host, port]).arg(dir.path().join("root")).arg("--users").arg(dir.path().join("users"));
        let child = spawn(&mut command, dir.path());
        let server = Server { kind: Kind::Git, child, dir, addr };
        server.new_git_repo(REPO);
        server.ready(users)
    }

    /// Creates the empty bare repository `name` (a path below the root, `x/y.git`) on
    /// the Git server, which accepts pushes to it.
    pub fn new_git_repo(&self, name: &str) {
        let repo = self.git_repo(name);
        for args in [
            &["init", "--quiet", "--bare", repo.to_str().unwrap()][..],
            &["-C", repo.to_str().unwrap(), "config", "http.receivepack", "true"],
        ] {
            let out = Command::new("git").args(args).output().expect("git runs");
            assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }

    /// Where the Git server keeps repository `name`.
    pub fn git_repo(&self, name: &str) -> PathBuf {
        self.dir.path().join("root").join(name)
    }

    /// `http://HOST:PORT/PATH` on the Git server, no credentials in it.
    pub fn git_url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    fn ready(self, users: &[(&str, &str)]) -> Server {
        self.set_users(users);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&self.addr).is_err() {
            assert!(Instant::now() < deadline, "the store on {} did not start; see {}", self.addr, self.dir.path().display());
            std::thread::sleep(Duration::from_millis(100));
        }
        self
    }

    /// Replaces the users at once (a rename), as a credential rotator would.
    pub fn set_users(&self, users: &[(&str, &str)]) {
        if self.kind == Kind::Git {
            return self.set_git_lines(&users.iter().map(|(user, password)| format!("{user}:{password}")).collect::<Vec<_>>());
        }
        let (next, file) = (self.dir.path().join("htpasswd.next"), self.dir.path().join("htpasswd"));
        let _ = std::fs::remove_file(&next);
        for (i, (user, password)) in users.iter().enumerate() {
            let create = if i == 0 { "-cbB" } else { "-bB" };
            let out = Command::new("htpasswd").args([create, next.to_str().unwrap(), user, password]).output();
            let out = out.expect("htpasswd runs (apache2-utils, installed by hack/registry.sh)");
            assert!(out.status.success(), "htpasswd: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::fs::rename(&next, file).expect("users file replaced");
    }

    /// Replaces the Git server's users with `user:password [GRANT...]` lines, grants
    /// restricting a user to some repositories or refs (`hack/git-http-server.py`).
    pub fn set_git_lines(&self, lines: &[String]) {
        assert!(self.kind == Kind::Git, "grants are the Git server's");
        let next = self.dir.path().join("users.next");
        std::fs::write(&next, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("users file");
        std::fs::rename(&next, self.dir.path().join("users")).expect("users file replaced");
    }

    /// The store reference pullers and registration use: no credentials in it.
    pub fn source(&self) -> String {
        match self.kind {
            Kind::Registry => format!("oci+http://{}/airlock", self.addr),
            Kind::Git => format!("git+http://{}/{REPO}", self.addr),
        }
    }

    /// The store reference the publisher writes to; it logs in as [`PUBLISHER`] (a
    /// registry through the environment `publish` is given).
    pub fn publish_to(&self) -> String {
        match self.kind {
            Kind::Registry => self.source(),
            Kind::Git => format!("git+http://{}:{}@{}/{REPO}", PUBLISHER.0, PUBLISHER.1, self.addr),
        }
    }

    /// The `register cluster` flags naming a user and a password file.
    pub fn login_flags(&self) -> [&'static str; 2] {
        match self.kind {
            Kind::Registry => ["--registry-username", "--registry-password-file"],
            Kind::Git => ["--git-username", "--git-password-file"],
        }
    }

    /// What a credentials Secret holds for `(user, password)` on this store (spec 2.6).
    pub fn login(&self, (user, password): (&str, &str)) -> Login {
        match self.kind {
            Kind::Registry => Login {
                secret_type: "kubernetes.io/dockerconfigjson",
                key: ".dockerconfigjson",
                data: serde_json::json!({"auths": {&self.addr: {"auth": STANDARD.encode(format!("{user}:{password}"))}}})
                    .to_string()
                    .into_bytes(),
            },
            Kind::Git => Login {
                secret_type: "Opaque",
                key: "git-credentials",
                data: format!("http://{user}:{password}@{}\n", self.addr).into_bytes(),
            },
        }
    }

    /// The file a pod mounts the login as, in the directory it mounts the Secret at.
    pub fn login_file(&self) -> &'static str {
        match self.kind {
            Kind::Registry => "config.json",
            Kind::Git => "git-credentials",
        }
    }

    /// The environment that points the puller at a directory filled from the Secret, as the
    /// registration's CronJob sets it.
    pub fn login_env(&self, dir: &Path) -> (&'static str, PathBuf) {
        match self.kind {
            Kind::Registry => ("DOCKER_CONFIG", dir.to_path_buf()),
            Kind::Git => ("AIRLOCK_GIT_CREDENTIALS", dir.join(self.login_file())),
        }
    }

    /// What a puller says when the store refuses its login.
    pub fn refusal(&self) -> &'static str {
        match self.kind {
            Kind::Registry => "HTTP 401",
            Kind::Git => "the server refused the credentials of user",
        }
    }
}

fn free_addr() -> String {
    let port = TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("address").port();
    format!("127.0.0.1:{port}")
}

fn spawn(command: &mut Command, dir: &Path) -> Child {
    command
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("server.log")).expect("log file"))
        .spawn()
        .expect("the store starts")
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
