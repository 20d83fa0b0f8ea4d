//! The per-cluster Git layouts (bundles-format.md 9.5.1) end to end, with access control
//! that is real: a Git server of the test's own (`hack/git-http-server.py --users`) whose
//! users are each restricted to one cluster's repository, or to one cluster's branches of a
//! shared repository. The real publisher registers two clusters with a reference holding
//! `{namespace}` and `{name}` and publishes them; the real puller, logging in as one
//! cluster, applies that cluster's bundle to the managed apiserver, is refused the other's,
//! and pushes its reports into its own place, which ingest reads back.

use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_e2e::login_servers::{PUBLISHER, Server};
use airlock_e2e::publisher::{Keys, Names, install_crds, kubectl, kubectl_ok, management_set};
use airlock_e2e::{Run, publisher_bin, puller_bin};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";
const CLUSTERS: [&str; 2] = ["edge-a", "edge-b"];

/// Where a layout keeps a cluster's bundles, and what the server grants its user.
#[derive(Clone, Copy)]
enum Layout {
    /// `fleet/<namespace>/<name>.git`, branch `main`.
    Repository,
    /// `fleet.git`, branch `airlock/<namespace>/<name>`.
    Branch,
}

impl Layout {
    /// The reference with placeholders, without credentials.
    fn template(self, server: &Server) -> String {
        match self {
            Layout::Repository => format!("git+{}", server.git_url("fleet/{namespace}/{name}.git")),
            Layout::Branch => format!("git+{}#airlock/{{namespace}}/{{name}}", server.git_url("fleet.git")),
        }
    }

    /// The repository (below the server's root) and branch of `ns/name`.
    fn place(self, ns: &str, name: &str) -> (String, String) {
        match self {
            Layout::Repository => (format!("fleet/{ns}/{name}.git"), "main".into()),
            Layout::Branch => ("fleet.git".into(), format!("airlock/{ns}/{name}")),
        }
    }

    /// The grants of `ns/name`'s user: its repository, or its two branches of the shared one.
    fn grants(self, ns: &str, name: &str) -> String {
        let (repo, branch) = self.place(ns, name);
        match self {
            Layout::Repository => repo,
            Layout::Branch => format!("{repo}#refs/heads/{branch} {repo}#refs/heads/reports/{ns}/{name}"),
        }
    }
}

/// One test's world: names, keys, the store, and a scratch directory.
struct World {
    names: Names,
    layout: Layout,
    server: Server,
    keys: Keys,
    scratch: tempfile::TempDir,
}

impl World {
    fn new(test: &str, layout: Layout) -> World {
        let names = Names::new(test);
        let run = &names.run;
        let server = Server::git(&[PUBLISHER]);
        let mut lines = vec![format!("{}:{}", PUBLISHER.0, PUBLISHER.1)];
        lines.extend(CLUSTERS.map(|name| format!("{name}:{} {}", password(name), layout.grants(run, name))));
        server.set_git_lines(&lines);
        let repos: std::collections::BTreeSet<String> = CLUSTERS.iter().map(|name| layout.place(run, name).0).collect();
        repos.iter().for_each(|repo| server.new_git_repo(repo));
        World { names, layout, server, keys: Keys::new(test), scratch: tempfile::tempdir().expect("tempdir") }
    }

    /// `register cluster NAME` with the template reference and the cluster's own Git
    /// user; the registration YAML.
    fn register(&self, name: &str) -> String {
        let password_file = self.scratch.path().join(format!("{name}.password"));
        std::fs::write(&password_file, password(name)).expect("password file");
        let source = self.layout.template(&self.server);
        let login = ["--git-username", name, "--git-password-file", password_file.to_str().unwrap()];
        self.names.register(&self.keys, name, &[&["--source", source.as_str(), "--no-encryption"][..], &login[..]].concat())
    }

    /// The template reference with the publisher's credentials in its URL.
    fn publish_to(&self) -> String {
        let (user, password) = PUBLISHER;
        self.layout.template(&self.server).replacen("http://", &format!("http://{user}:{password}@"), 1)
    }

    fn publish(&self) -> Run {
        let mgmt = airlock_e2e::service_env(MANAGEMENT);
        Command::new(publisher_bin())
            .args(["publish", "--kubeconfig", &mgmt, "--to", &self.publish_to(), "--no-cache"])
            .args(["--key", &self.keys.key, "--keyring", &self.keys.keyring_path])
            .args(["--cluster", &self.names.cluster("edge-a"), "--cluster", &self.names.cluster("edge-b")])
            .env("AIRLOCK_LOG", "warn")
            .env_remove("KUBECONFIG")
            .output()
            .expect("airlock-publisher runs")
            .into()
    }

    /// `airlock-puller sync` of edge-a from `source`, logging in with `login`, pushing its
    /// reports signed with `report_key`.
    fn sync(&self, source: &str, login: &Path, report_key: &Path) -> Run {
        Command::new(puller_bin())
            .args(["sync", "--source", source, "--cluster", &self.names.cluster("edge-a")])
            .args(["--keyring", &self.keys.keyring_path, "--state-namespace", &self.names.puller_ns()])
            .args(["--watch-namespaces", &self.names.app_ns(), "--push-reports"])
            .arg("--report-key")
            .arg(report_key)
            .env("KUBECONFIG", airlock_e2e::service_env(MANAGED))
            .env("AIRLOCK_GIT_CREDENTIALS", login)
            .env("AIRLOCK_LOG", "warn")
            .output()
            .expect("airlock-puller runs")
            .into()
    }

    /// `airlock-puller verify` of `cluster` from the template, logging in with `login`.
    fn verify(&self, cluster: &str, login: &Path) -> Run {
        Command::new(puller_bin())
            .args(["verify", "--source", &self.layout.template(&self.server), "--cluster", &self.names.cluster(cluster)])
            .args(["--keyring", &self.keys.keyring_path])
            .env("AIRLOCK_GIT_CREDENTIALS", login)
            .env("AIRLOCK_LOG", "warn")
            .output()
            .expect("airlock-puller runs")
            .into()
    }

    /// A git-credential-store file logging in as `name`'s user.
    fn login(&self, name: &str) -> PathBuf {
        let path = self.scratch.path().join(format!("{name}.git-credentials"));
        let origin = self.server.git_url("").trim_end_matches('/').replacen("http://", &format!("http://{name}:{}@", password(name)), 1);
        std::fs::write(&path, format!("{origin}\n")).expect("login file");
        path
    }

    /// The files of `ns/name`'s branch in its repository on the server.
    fn files(&self, name: &str) -> Vec<String> {
        let (repo, branch) = self.layout.place(&self.names.run, name);
        let out = Command::new("git").arg("-C").arg(self.server.git_repo(&repo)).args(["ls-tree", "-r", "--name-only", &branch]).output();
        let out = out.expect("git runs");
        assert!(out.status.success(), "git ls-tree {repo} {branch}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8").lines().map(String::from).collect()
    }

    fn color(&self) -> Option<String> {
        let out = kubectl(MANAGED, &["get", "configmap", "-n", &self.names.app_ns(), "settings", "-o", "jsonpath={.data.color}"], b"");
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

fn password(name: &str) -> String {
    format!("{name}-pw")
}

/// A data file of a Secret of the registration YAML, decoded.
fn secret_data(yaml: &str, secret: &str, key: &str) -> Vec<u8> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(yaml).expect("registration YAML");
    let found = docs.iter().find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == secret).expect("the Secret");
    STANDARD.decode(found["data"][key].as_str().expect("data key")).expect("base64")
}

#[test]
fn a_repository_per_cluster_lets_each_cluster_read_its_own_only() {
    round_trip(&World::new("gitrepo", Layout::Repository), "the server refused access (HTTP 403)");
}

#[test]
fn a_branch_per_cluster_lets_each_cluster_read_its_own_only() {
    let w = World::new("gitbranch", Layout::Branch);
    round_trip(&w, "not found");
    // Asked for by id, the other cluster's tip is refused too: it is not advertised.
    let (repo, branch) = w.layout.place(&w.names.run, "edge-b");
    let tip = Command::new("git").arg("-C").arg(w.server.git_repo(&repo)).args(["rev-parse", &branch]).output().expect("git runs");
    let tip = String::from_utf8(tip.stdout).expect("UTF-8").trim().to_string();
    let want = format!("want {tip} multi_ack_detailed side-band-64k ofs-delta\n");
    let body = format!("{:04x}{want}0000{:04x}done\n", want.len() + 4, "done\n".len() + 4);
    let out = Command::new("curl")
        .args(["-s", "-u", &format!("edge-a:{}", password("edge-a"))])
        .args(["-H", "Content-Type: application/x-git-upload-pack-request", "-H", "Git-Protocol: version=2"])
        .args(["--data-binary", &body, &w.server.git_url("fleet.git/git-upload-pack")])
        .output()
        .expect("curl runs (hack/git-server.sh installs it)");
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains(&format!("ERR upload-pack: not our ref {tip}")), "{answer}");
}

/// Register both clusters with the template, publish, check where each bundle went, sync
/// edge-a with edge-b's login (refused, nothing applied) and then its own (applied), and
/// read its report back with ingest.
fn round_trip(w: &World, refusal: &str) {
    let _crds = install_crds();
    let (ns, app_ns) = (w.names.run.clone(), w.names.app_ns());
    kubectl_ok(MANAGEMENT, &["create", "namespace", &ns], b"");
    kubectl_ok(MANAGEMENT, &["apply", "-f", "-"], management_set(&ns, &app_ns, "blue").as_bytes());
    let yaml = w.register("edge-a");
    w.register("edge-b");
    // The puller is given its own repository or branch, and its own login.
    let (repo, branch) = w.layout.place(&ns, "edge-a");
    let own = format!("git+{}#{branch}", w.server.git_url(&repo));
    assert!(yaml.contains(&own) && !yaml.contains("{namespace}"), "the expanded reference {own}: {yaml}");
    assert_eq!(secret_data(&yaml, "airlock-store-credentials", "git-credentials"), std::fs::read(w.login("edge-a")).unwrap());
    kubectl_ok(MANAGED, &["apply", "-f", "-"], yaml.as_bytes());
    let report_key = w.scratch.path().join("report.key");
    std::fs::write(&report_key, secret_data(&yaml, "airlock-report-key", "report.key")).expect("report key");

    let published = w.publish();
    assert_eq!(published.code, Some(0), "{published:?}");
    for name in CLUSTERS {
        let files = w.files(name);
        let dir = format!("clusters/{ns}/{name}/");
        assert!(!files.is_empty() && files.iter().all(|f| f.starts_with(&dir)), "{name}'s place holds its bundle only: {files:?}");
    }

    // edge-b's user cannot read edge-a's bundle: nothing is applied.
    let refused = w.sync(&own, &w.login("edge-b"), &report_key);
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(refused.stderr.contains(refusal) && refused.stderr.contains(&own), "{refused:?}");
    assert!(!refused.stderr.contains(&password("edge-b")), "the password never shows: {refused:?}");
    assert_eq!(w.color(), None, "nothing applied on refusal");
    let other = w.verify("edge-b", &w.login("edge-a"));
    assert!(other.code == Some(1) && other.stderr.contains(refusal), "{other:?}");

    // Each user reads its own: edge-a's puller applies, from the template as well.
    let applied = w.sync(&w.layout.template(&w.server), &w.login("edge-a"), &report_key);
    assert_eq!(applied.code, Some(0), "{applied:?}");
    assert_eq!(w.color().as_deref(), Some("blue"));
    let verified = w.verify("edge-b", &w.login("edge-b"));
    assert_eq!(verified.code, Some(0), "{verified:?}");

    // The report went to edge-a's own place; ingest finds it there.
    let reports = format!("refs/heads/reports/{ns}/edge-a");
    let pushed = Command::new("git").arg("-C").arg(w.server.git_repo(&repo)).args(["rev-parse", "--verify", &reports]).output();
    assert!(pushed.expect("git runs").status.success(), "{reports} in {repo}");
    let ingest = Command::new(publisher_bin())
        .args(["ingest", "--from", &w.publish_to(), "--kubeconfig", &airlock_e2e::service_env(MANAGEMENT)])
        .env("AIRLOCK_LOG", "warn")
        .output()
        .expect("airlock-publisher runs");
    let ingest = Run::from(ingest);
    assert!(ingest.stdout.lines().any(|l| l.contains(&w.names.cluster("edge-a")) && l.contains("ingested")), "{ingest:?}");

    kubectl_ok(MANAGED, &["delete", "--wait=false", "--ignore-not-found", "-f", "-"], yaml.as_bytes());
    kubectl_ok(MANAGEMENT, &["delete", "clusterprofile", &format!("{ns}-web"), "--wait=false"], b"");
    kubectl_ok(MANAGEMENT, &["delete", "namespace", &ns, "--wait=false"], b"");
}
