//! Confidential bundles end to end (bundles-format.md 2.7), against the real registry, Git
//! server and managed apiserver. Two clusters are registered (each gets its own age
//! identity); one profile deploys a Secret holding unique marker values, and a ConfigMap
//! holding another marker that stays in clear, which proves each search below finds what is
//! there. The bundles are published to the registry and to a Git repository and exported
//! to an archive; then:
//!
//! - neither the registry's storage, the Git repository's whole history nor the archive
//!   (gzip'd blobs inflated) holds a Secret marker, plain or base64, while each holds the
//!   ConfigMap's;
//! - the second cluster's puller, pointed at the first's bundle, refuses it (exit 3, not a
//!   recipient) and the `age` CLI cannot open its files with that identity;
//! - a flipped byte in a stored ciphertext is refused (exit 3) with nothing applied;
//! - the first cluster's puller applies the Secret with the right values;
//! - the by-hand recipe of spec section 12 (`age -d -i identity.txt`, `sha256sum`) opens a
//!   file and matches its signed plaintext digest;
//! - publishing again, unchanged, writes nothing to either store.
//!
//! `fail_closed` checks the other side: a cluster without a recipient gets none of it.

mod fail_closed;

use std::io::Read as _;
use std::path::Path;
use std::process::Command;

use airlock_cli::install_crypto_provider;
use airlock_e2e::publisher::{Keys, ManagedNamespaces, kubectl, kubectl_ok};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use jiff::Timestamp;

const MANAGED: &str = "AIRLOCK_KUBECONFIG_MANAGED";
const AGE: &str = "/usr/bin/age";
const REJECTED: i32 = 3;

#[tokio::test(flavor = "multi_thread")]
async fn secrets_are_readable_by_their_own_cluster_only() {
    let Stores { run, dir, keys, registry, git_url, git_store } = Stores::new("conf", "confidential");
    let path = |name: &str| dir.path().join(name).to_str().expect("UTF-8 temp path").to_string();
    let markers = Markers::new(&run);
    let (app_ns, state_git, state_registry, state_other) =
        (format!("{run}-app"), format!("{run}-st-git"), format!("{run}-st-reg"), format!("{run}-st-other"));
    let _cleanup = ManagedNamespaces(vec![app_ns.clone(), state_git.clone(), state_registry.clone(), state_other.clone()]);

    // Registration: each cluster gets an identity; the SveltosCluster its recipient.
    std::fs::create_dir(path("management")).expect("management dir");
    for cluster in ["edge-1", "edge-2"] {
        let out = tool(
            airlock_e2e::publisher_bin(),
            &["register", "cluster", "--namespace", &run, "--cluster", cluster, "--pullmode", "--labels", "conf=on"],
            &["--source", &registry, "--keyring", &keys.keyring_path, "--to-dir", &path("management")],
        );
        assert_eq!(out.code, Some(0), "{out:?}");
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&out.stdout).expect("registration YAML");
        let secret =
            docs.iter().find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == "airlock-age-identity").expect("identity Secret");
        let identity = B64.decode(secret["data"]["identity.txt"].as_str().expect("identity.txt")).expect("base64");
        std::fs::write(path(&format!("{cluster}.identity.txt")), identity).expect("identity written");
    }
    std::fs::write(dir.path().join("management/profile.yaml"), markers.management_set(&run, &app_ns)).expect("management set");

    let publish = |to: &str| {
        let out = tool(airlock_e2e::publisher_bin(), &["publish", "--from-dir", &path("management"), "--to", to], &["--key", &keys.key]);
        assert_eq!(out.code, Some(0), "publish to {to}: {out:?}");
        out
    };
    publish(&registry);
    publish(&git_store);
    let archive = path("fleet.tar");
    export(&registry, &archive, &keys);

    // What the store, the history and the archive hold.
    let registry_data = Path::new(&airlock_e2e::service_env("AIRLOCK_STATE")).join("registry-plain/data/docker/registry/v2");
    let stored = registry_texts(&registry_data, &run);
    let history = git_history(&airlock_e2e::service_env("AIRLOCK_GIT_ROOT"), &run);
    let carried = archive_texts(Path::new(&archive));
    for (what, text) in [("registry storage", &stored), ("Git history", &history), ("archive", &carried)] {
        assert!(text.contains(&markers.clear), "{what}: the search must find the ConfigMap's marker");
        assert!(text.contains(".yaml.age"), "{what}: the Secret's file is encrypted");
        for needle in markers.secret_needles() {
            assert!(!text.contains(&needle), "{what} holds a Secret value ({needle})");
        }
    }

    // The other cluster's puller, re-pointed at edge-1's bundle: refused, nothing applied.
    let edge1 = format!("{run}/edge-1");
    let sync = |store: &str, state_ns: &str, identity: &str| {
        tool(
            airlock_e2e::puller_bin(),
            &["sync", "--source", store, "--cluster", &edge1, "--keyring", &keys.keyring_path, "--state-namespace", state_ns],
            &["--age-identity", &path(identity), "--kubeconfig", &airlock_e2e::service_env(MANAGED)],
        )
    };
    let client = airlock_e2e::kube_client(&airlock_e2e::service_env(MANAGED)).await;
    for ns in [&app_ns, &state_git, &state_registry, &state_other] {
        airlock_e2e::create_namespace(&client, ns).await;
    }
    let other = sync(&registry, &state_other, "edge-2.identity.txt");
    assert_eq!(other.code, Some(REJECTED), "{other:?}");
    assert!(other.stderr.contains("none of them this puller's"), "{other:?}");
    assert_absent(&app_ns, "app-credentials");

    // Spec section 12 by hand: the Debian age binary opens edge-1's file with its identity
    // alone, and what it gives is the plaintext the statement signs.
    let checkout = dir.path().join("checkout");
    git(dir.path(), &["clone", "-q", &git_url, checkout.to_str().expect("UTF-8")]);
    let cluster_dir = checkout.join(format!("clusters/{run}/edge-1"));
    let sealed = find_sealed(&cluster_dir);
    let relative = sealed.strip_prefix(&cluster_dir).expect("inside").to_str().expect("UTF-8").to_string();
    let opened = Command::new(AGE).args(["-d", "-i", &path("edge-1.identity.txt")]).arg(&sealed).output().expect("age runs");
    assert!(opened.status.success(), "age -d: {}", String::from_utf8_lossy(&opened.stderr));
    let plaintext = String::from_utf8(opened.stdout).expect("UTF-8 YAML");
    assert!(plaintext.starts_with("# airlock.dev/salt: ") && plaintext.contains(&markers.plain), "{plaintext}");
    let payload = statement(&checkout, &run, "edge-1");
    let entry = payload["predicate"]["files"].as_array().expect("files").iter().find(|f| f["path"] == relative.as_str()).expect("signed");
    let sha256sum = Command::new("sha256sum").arg("-").stdin_bytes(plaintext.as_bytes());
    assert_eq!(sha256sum.split_whitespace().next(), entry["plaintext"]["sha256"].as_str(), "the signed plaintext digest");
    let wrong = Command::new(AGE).args(["-d", "-i", &path("edge-2.identity.txt")]).arg(&sealed).output().expect("age runs");
    assert!(!wrong.status.success(), "edge-2's identity opened edge-1's Secret");

    // A flipped byte in the stored ciphertext: refused, nothing applied.
    let mut armored = std::fs::read(&sealed).expect("sealed file");
    let at = armored.len() / 2;
    armored[at] = if armored[at] == b'A' { b'B' } else { b'A' };
    std::fs::write(&sealed, armored).expect("tampered");
    git(&checkout, &["-c", "user.name=mallory", "-c", "user.email=m@example.invalid", "commit", "-qam", "flip a byte"]);
    git(&checkout, &["push", "-q", "origin", "HEAD"]);
    let tampered = sync(&git_store, &state_git, "edge-1.identity.txt");
    assert_eq!(tampered.code, Some(REJECTED), "{tampered:?}");
    assert!(tampered.stderr.contains(&relative) || tampered.stderr.contains("digest"), "{tampered:?}");
    assert_absent(&app_ns, "app-credentials");
    let state = kubectl(MANAGED, &["get", "secret", "-n", &state_git, "airlock-state-edge-1"], b"");
    assert!(!state.status.success(), "a refused bundle wrote no state");

    // edge-1's own puller applies the Secret with its values.
    let applied = sync(&registry, &state_registry, "edge-1.identity.txt");
    assert_eq!(applied.code, Some(0), "{applied:?}");
    let live = kubectl_ok(MANAGED, &["get", "secret", "-n", &app_ns, "app-credentials", "-o", "jsonpath={.data}"], b"");
    let live: serde_json::Value = serde_json::from_str(&live).expect("data");
    assert_eq!(live["password"], B64.encode(&markers.plain), "stringData applied");
    assert_eq!(live["token"], B64.encode(&markers.encoded), "data applied");

    // Unchanged: publishing again writes nothing, to either store.
    let tags = registry_tags(&registry_data, &run);
    let head = git_head(&git_url, dir.path());
    publish(&registry);
    publish(&git_store);
    assert_eq!(registry_tags(&registry_data, &run), tags, "an unchanged publish pushed a tag");
    assert_eq!(git_head(&git_url, dir.path()), head, "an unchanged publish made a commit");
}

/// A test's run id, scratch directory, signing keys and stores: a registry repository and
/// a new Git repository, both named for the run.
struct Stores {
    run: String,
    dir: tempfile::TempDir,
    keys: Keys,
    registry: String,
    git_url: String,
    git_store: String,
}

impl Stores {
    fn new(prefix: &str, keys: &str) -> Stores {
        install_crypto_provider();
        let run = format!("{prefix}-{:x}-{:x}", Timestamp::now().as_second() % 0x100_0000, std::process::id());
        let registry = format!("oci+http://{}/{run}", airlock_e2e::service_env("AIRLOCK_REGISTRY"));
        let git_url = airlock_e2e::new_git_repo(&run);
        let git_store = format!("git+{git_url}");
        Stores { dir: tempfile::tempdir().expect("temp dir"), keys: Keys::new(keys), registry, git_url, git_store, run }
    }
}

/// Exports every bundle of `registry` into the archive `archive`.
fn export(registry: &str, archive: &str, keys: &Keys) {
    let to = format!("oci-archive:{archive}");
    let out = tool(airlock_e2e::publisher_bin(), &["export", "--from", registry, "--to", &to], &["--keyring", &keys.keyring_path]);
    assert_eq!(out.code, Some(0), "export: {out:?}");
}

/// The statement signed for `cluster` of run `run` in a checkout of the Git store.
fn statement(checkout: &Path, run: &str, cluster: &str) -> serde_json::Value {
    let envelope = checkout.join(format!("clusters/{run}/{cluster}/envelope.json"));
    let envelope: serde_json::Value = serde_json::from_slice(&std::fs::read(envelope).expect("envelope")).expect("JSON");
    serde_json::from_slice(&B64.decode(envelope["payload"].as_str().expect("payload")).expect("base64")).expect("statement")
}

/// The marker values: two in the Secret (one under `stringData`, one under `data`, so
/// base64 in the manifest), one in a ConfigMap beside it.
struct Markers {
    plain: String,
    encoded: String,
    clear: String,
}

impl Markers {
    fn new(run: &str) -> Markers {
        Markers { plain: format!("pw-{run}-q7Zx"), encoded: format!("tok-{run}-W3kp"), clear: format!("cm-{run}-Lm4v") }
    }

    /// What must not be found: each Secret marker as written and in base64.
    fn secret_needles(&self) -> Vec<String> {
        [&self.plain, &self.encoded].into_iter().flat_map(|m| [m.clone(), B64.encode(m)]).collect()
    }

    /// A ClusterProfile for `conf=on` clusters deploying, from a ConfigMap, the Secret and
    /// a ConfigMap.
    fn management_set(&self, run: &str, app_ns: &str) -> String {
        let secret = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\n  namespace: {app_ns}\ntype: Opaque\n\
             stringData:\n  password: {}\ndata:\n  token: {}\n",
            self.plain,
            B64.encode(&self.encoded)
        );
        let config = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: {app_ns}\ndata:\n  marker: {}\n",
            self.clear
        );
        let indent = |text: &str| text.lines().map(|l| format!("    {l}\n")).collect::<String>();
        format!(
            "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata:\n  name: {run}-conf\nspec:\n  \
             clusterSelector:\n    matchLabels: {{conf: \"on\"}}\n  policyRefs:\n    - {{kind: ConfigMap, namespace: {run}, name: app}}\n\
             ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: {run}}}\ndata:\n  secret.yaml: |\n{}  config.yaml: |\n{}",
            indent(&secret),
            indent(&config)
        )
    }
}

/// Every blob the registry holds for the repositories under `run`, gzip'd ones inflated,
/// and every file of those repositories' metadata, as one text.
fn registry_texts(data: &Path, run: &str) -> String {
    let mut text = String::new();
    for entry in walkdir::WalkDir::new(data.join("repositories").join(run)).into_iter().map(|e| e.expect("walk")) {
        if entry.file_type().is_file() {
            let link = std::fs::read_to_string(entry.path()).expect("registry file");
            text.push_str(&link);
            if let Some(hex) = link.strip_prefix("sha256:") {
                let blob = data.join(format!("blobs/sha256/{}/{hex}/data", &hex[..2]));
                if let Ok(bytes) = std::fs::read(blob) {
                    text.push_str(&readable(&bytes));
                }
            }
        }
    }
    text
}

/// The tags each repository under `run` has, with the manifest each names.
fn registry_tags(data: &Path, run: &str) -> Vec<String> {
    let mut tags: Vec<String> = walkdir::WalkDir::new(data.join("repositories").join(run))
        .into_iter()
        .map(|e| e.expect("walk"))
        .filter(|e| e.file_type().is_file() && e.path().to_string_lossy().contains("/_manifests/tags/"))
        .map(|e| format!("{} {}", e.path().display(), std::fs::read_to_string(e.path()).expect("link")))
        .collect();
    tags.sort();
    tags
}

/// The whole history of the bare repository `name`: every version of every file.
fn git_history(root: &str, name: &str) -> String {
    let bare = Path::new(root).join(format!("{name}.git"));
    let out =
        Command::new("git").arg("-C").arg(&bare).args(["log", "--all", "-p", "--binary", "--full-history"]).output().expect("git log");
    assert!(out.status.success(), "git log in {}: {}", bare.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn git_head(url: &str, scratch: &Path) -> String {
    let out = Command::new("git").current_dir(scratch).args(["ls-remote", url, "HEAD"]).output().expect("git ls-remote");
    assert!(out.status.success(), "git ls-remote: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every entry of an OCI archive, gzip'd blobs inflated, as one text.
fn archive_texts(archive: &Path) -> String {
    let mut text = String::new();
    let mut tar = tar::Archive::new(std::fs::File::open(archive).expect("archive"));
    for entry in tar.entries().expect("tar") {
        let mut entry = entry.expect("entry");
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("entry bytes");
        text.push_str(&readable(&bytes));
    }
    text
}

/// `bytes` as text, inflated first when they are gzip.
fn readable(bytes: &[u8]) -> String {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut inflated = Vec::new();
        flate2::read::GzDecoder::new(bytes).read_to_end(&mut inflated).expect("gzip blob inflates");
        return String::from_utf8_lossy(&inflated).into_owned();
    }
    String::from_utf8_lossy(bytes).into_owned()
}

/// The one encrypted file under `dir`.
fn find_sealed(dir: &Path) -> std::path::PathBuf {
    let sealed: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.expect("walk").into_path())
        .filter(|p| p.to_string_lossy().ends_with(".yaml.age"))
        .collect();
    assert_eq!(sealed.len(), 1, "{sealed:?}");
    sealed.into_iter().next().expect("one")
}

fn assert_absent(namespace: &str, name: &str) {
    let out = kubectl(MANAGED, &["get", "secret", "-n", namespace, name], b"");
    assert!(!out.status.success(), "Secret {namespace}/{name} exists");
}

fn tool(bin: std::path::PathBuf, a: &[&str], b: &[&str]) -> airlock_e2e::Run {
    Command::new(&bin).args(a).args(b).env_remove("KUBECONFIG").env_remove("AIRLOCK_LOG").output().expect("tool runs").into()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Runs a command with `stdin` and returns its stdout.
trait StdinBytes {
    fn stdin_bytes(&mut self, stdin: &[u8]) -> String;
}

impl StdinBytes for Command {
    fn stdin_bytes(&mut self, stdin: &[u8]) -> String {
        use std::io::Write as _;
        let mut child = self.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("spawns");
        child.stdin.take().expect("stdin").write_all(stdin).expect("stdin written");
        let out = child.wait_with_output().expect("runs");
        assert!(out.status.success(), "{self:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}
