//! Store credential renewal end to end (`register cluster --token`, spec 2.6): the real
//! publisher registers a cluster against the management apiserver, publishes from it, and
//! relays a rotated management Secret; the real puller applies the bundles to the managed
//! apiserver, reading its store credentials the way the CronJob's pod does (a directory
//! filled from the Secret: `$DOCKER_CONFIG` for a registry, `$AIRLOCK_GIT_CREDENTIALS` for a
//! Git server). The same round trip runs against a registry and a Git server of the test's
//! own (`airlock_e2e::login_servers`), whose users change for real.

use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_e2e::login_servers::{PUBLISHER, Server};
use airlock_e2e::publisher::{Keys, Names, install_crds, kubectl_ok, management_set};
use airlock_e2e::{Run, publisher_bin, puller_bin};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jiff::{SignedDuration, Timestamp};

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";
const OLD: (&str, &str) = ("puller-old", "old-pw");
const NEW: (&str, &str) = ("puller-new", "new-pw");

/// One test's world: names, keys, the store, and a scratch directory.
struct World {
    names: Names,
    server: Server,
    keys: Keys,
    scratch: tempfile::TempDir,
}

impl World {
    fn new(test: &str, server: Server) -> World {
        World { names: Names::new(test), server, keys: Keys::new(test), scratch: tempfile::tempdir().expect("tempdir") }
    }

    /// `register cluster NAME` against the management apiserver; the registration YAML.
    fn register(&self, name: &str, extra: &[&str]) -> String {
        let password = self.scratch.path().join("old.password");
        std::fs::write(&password, format!("{}\n", OLD.1)).expect("password file");
        let [username, password_file] = self.server.login_flags();
        let login = [username, OLD.0, password_file, password.to_str().unwrap()];
        self.names.register(&self.keys, name, &[&["--source", &self.server.source()], &login[..], extra].concat())
    }

    /// `publish` of this test's two clusters: exit code, and per cluster (version, status, warnings).
    fn publish(&self) -> (Option<i32>, Vec<[String; 3]>, String) {
        let mgmt = airlock_e2e::service_env(MANAGEMENT);
        let out = Command::new(publisher_bin())
            .args(["publish", "--kubeconfig", &mgmt, "--to", &self.server.publish_to(), "--no-cache"])
            .args(["--key", &self.keys.key, "--keyring", &self.keys.keyring_path])
            .args(["--cluster", &self.names.cluster("edge-a"), "--cluster", &self.names.cluster("edge-b")])
            .env("AIRLOCK_REGISTRY_USERNAME", PUBLISHER.0)
            .env("AIRLOCK_REGISTRY_PASSWORD", PUBLISHER.1)
            .env("AIRLOCK_LOG", "warn")
            .env_remove("KUBECONFIG")
            .output()
            .expect("airlock-publisher runs");
        let run = Run::from(out);
        let rows = run
            .stdout
            .lines()
            .skip(1)
            .take_while(|l| !l.contains(": "))
            .map(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                [cells[1].to_string(), cells[4..cells.len() - 1].join(" "), cells[cells.len() - 1].to_string()]
            })
            .collect();
        (run.code, rows, format!("{run:?}"))
    }

    /// `airlock-puller sync` for edge-a, logging in with what `login_dir` holds.
    fn sync(&self, login_dir: &Path) -> Run {
        let (variable, value) = self.server.login_env(login_dir);
        Command::new(puller_bin())
            .args(["sync", "--source", &self.server.source(), "--cluster", &self.names.cluster("edge-a")])
            .args(["--keyring", &self.keys.keyring_path, "--state-namespace", &self.names.puller_ns()])
            .args(["--watch-namespaces", &self.names.app_ns()])
            .arg("--age-identity")
            .arg(self.identity_file())
            .env("KUBECONFIG", airlock_e2e::service_env(MANAGED))
            .env(variable, value)
            .env("AIRLOCK_LOG", "warn")
            .output()
            .expect("airlock-puller runs")
            .into()
    }

    /// Where the age identity of the registration is kept: the relayed credentials reach
    /// the puller encrypted to it.
    fn identity_file(&self) -> PathBuf {
        self.scratch.path().join("identity.txt")
    }

    /// A directory holding what the CronJob mounts from a credentials Secret's data.
    fn login_dir(&self, name: &str, login: &[u8], expires_at: Option<&[u8]>) -> PathBuf {
        let dir = self.scratch.path().join(name);
        std::fs::create_dir_all(&dir).expect("login dir");
        std::fs::write(dir.join(self.server.login_file()), login).expect("login file");
        if let Some(expires_at) = expires_at {
            std::fs::write(dir.join("expires-at"), expires_at).expect("expires-at");
        }
        dir
    }

    /// A data key of the managed cluster's credentials Secret, decoded.
    fn managed_secret(&self, key: &str) -> Vec<u8> {
        let path = format!("jsonpath={{.data.{}}}", key.replace('.', "\\."));
        let b64 = kubectl_ok(MANAGED, &["get", "secret", "-n", &self.names.puller_ns(), "airlock-store-credentials", "-o", &path], b"");
        STANDARD.decode(b64.trim()).expect("base64 Secret data")
    }

    /// Rewrites the management Secret as a rotator would: new login, new expiry.
    fn rotate(&self, user: (&str, &str), expires_at: Timestamp) {
        let login = self.server.login(user);
        let secret = serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "type": login.secret_type,
            "metadata": {"name": "edge-a-store-credentials", "namespace": self.names.ns(),
                         "annotations": {"airlock.dev/expires-at": expires_at.to_string()}},
            "data": {login.key: STANDARD.encode(&login.data)},
        });
        kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], secret.to_string().as_bytes());
    }

    fn color(&self) -> String {
        kubectl_ok(MANAGED, &["get", "configmap", "-n", &self.names.app_ns(), "settings", "-o", "jsonpath={.data.color}"], b"")
    }
}

fn in_days(days: i64) -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second()).unwrap() + SignedDuration::from_hours(24 * days)
}

#[test]
fn renewed_registry_credentials_reach_the_puller_inside_its_bundle() {
    renewal_round_trip(World::new("cred", Server::registry(&[PUBLISHER, OLD])));
}

#[test]
fn renewed_git_credentials_reach_the_puller_inside_its_bundle() {
    renewal_round_trip(World::new("gitcred", Server::git(&[PUBLISHER, OLD])));
}

/// Register, publish, sync, renew, relay, revoke, sync with what the bundle delivered, and
/// let the credentials expire; with `w`'s store, which starts with the users PUBLISHER and OLD.
fn renewal_round_trip(w: World) {
    let _crds = install_crds();
    let (ns, app_ns) = (w.names.ns().to_string(), w.names.app_ns());
    kubectl_ok(MANAGEMENT, &["create", "namespace", &ns], b"");
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], management_set(&ns, &app_ns, "blue").as_bytes());

    // edge-a's credentials are renewed through a management Secret; edge-b's are long-lived.
    let expires = in_days(30);
    let yaml = w.register("edge-a", &["--token", "--token-expires-at", &expires.to_string()]);
    w.register("edge-b", &[]);
    let pointer = kubectl_ok(
        MANAGEMENT,
        &["get", "sveltoscluster", "-n", &ns, "edge-a", "-o", r"jsonpath={.metadata.annotations.airlock\.dev/store-credentials}"],
        b"",
    );
    assert_eq!(pointer, "edge-a-store-credentials");
    let seeded = kubectl_ok(
        MANAGEMENT,
        &["get", "secret", "-n", &ns, "edge-a-store-credentials", "-o", r"jsonpath={.metadata.annotations.airlock\.dev/expires-at}"],
        b"",
    );
    assert_eq!(seeded, expires.to_string());
    kubectl_ok(MANAGED, &["apply", "-f", "-"], yaml.as_bytes());

    let (code, rows, out) = w.publish();
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(rows, [["1", "published", "0"], ["1", "published", "0"]].map(|r| r.map(String::from)), "{out}");

    // The puller, with the credentials the registration YAML gave it.
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&yaml).expect("registration YAML");
    let secret =
        docs.iter().find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == "airlock-store-credentials").expect("credentials Secret");
    let data = |key: &str| STANDARD.decode(secret["data"][key].as_str().expect("data key")).expect("base64");
    let identity = docs.iter().find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == "airlock-age-identity").expect("identity Secret");
    let identity = STANDARD.decode(identity["data"]["identity.txt"].as_str().expect("identity.txt")).expect("base64");
    std::fs::write(w.identity_file(), identity).expect("identity written");
    let key = w.server.login(NEW).key;
    let old_dir = w.login_dir("old", &data(key), Some(&data("expires-at")));
    let first = w.sync(&old_dir);
    assert_eq!(first.code, Some(0), "{first:?}");
    assert_eq!(w.color(), "blue");

    // A rotator issues new credentials and renews the management Secret: only edge-a changes.
    w.server.set_users(&[PUBLISHER, OLD, NEW]);
    let renewed_until = in_days(3);
    w.rotate(NEW, renewed_until);
    let (code, rows, out) = w.publish();
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(rows[0][..2], ["2", "published"], "{out}");
    assert_eq!(rows[0][2], "1", "expiring within --renew-before 7d is a warning: {out}");
    assert_eq!(rows[1], ["1", "unchanged", "0"], "{out}");
    assert!(out.contains("the store credentials expire at"), "{out}");
    let (code, rows, out) = w.publish();
    assert_eq!(
        (code, rows[0][..2].to_vec()),
        (Some(0), vec!["2".to_string(), "unchanged".into()]),
        "the same Secret changes nothing: {out}"
    );

    // The next run, still with the old credentials, brings the new ones in.
    let second = w.sync(&old_dir);
    assert_eq!(second.code, Some(0), "{second:?}");
    assert_eq!(w.managed_secret(key), w.server.login(NEW).data);
    let kind =
        kubectl_ok(MANAGED, &["get", "secret", "-n", &w.names.puller_ns(), "airlock-store-credentials", "-o", "jsonpath={.type}"], b"");
    assert_eq!(kind, w.server.login(NEW).secret_type);
    assert_eq!(w.managed_secret("expires-at"), renewed_until.to_string().into_bytes());

    // The old credentials are revoked for real...
    w.server.set_users(&[PUBLISHER, NEW]);
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], management_set(&ns, &app_ns, "red").as_bytes());
    let (code, rows, out) = w.publish();
    assert_eq!((code, rows[0][0].as_str(), rows[1][0].as_str()), (Some(0), "3", "2"), "{out}");
    let refused = w.sync(&old_dir);
    assert!(
        refused.code != Some(0) && refused.stderr.contains(w.server.refusal()),
        "revoked credentials must not read the store: {refused:?}"
    );
    assert!(!refused.stderr.contains(OLD.1), "the password never shows: {refused:?}");
    assert_eq!(w.color(), "blue");

    // ...and a new pod reads the Secret the bundle delivered.
    let new_dir = w.login_dir("new", &w.managed_secret(key), Some(&w.managed_secret("expires-at")));
    let third = w.sync(&new_dir);
    assert_eq!(third.code, Some(0), "{third:?}");
    assert_eq!(w.color(), "red");
    assert!(third.stderr.contains("the store credentials expire at"), "the puller warns too: {third:?}");

    // Credentials that have expired fail their cluster, and only it.
    w.rotate(NEW, in_days(-1));
    let (code, rows, out) = w.publish();
    assert_eq!(code, Some(2), "{out}");
    assert_eq!((rows[0][1].as_str(), rows[1][1].as_str()), ("failed", "unchanged"), "{out}");
    assert!(out.contains(&format!("Secret {ns}/edge-a-store-credentials: the store credentials expired at")), "{out}");

    kubectl_ok(MANAGED, &["delete", "--wait=false", "--ignore-not-found", "-f", "-"], yaml.as_bytes());
    kubectl_ok(MANAGEMENT, &["delete", "clusterprofile", &format!("{ns}-web"), "--wait=false"], b"");
    kubectl_ok(MANAGEMENT, &["delete", "namespace", &ns, "--wait=false"], b"");
}
